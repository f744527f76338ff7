import { Type, type TObject, type TProperties } from '@sinclair/typebox';
import type { AjvCompiler } from '@fastify/ajv-compiler';

/**
 * Marks a route schema part that the handler validates itself, with Dify's own messages and
 * order of checks (knowledge routes, forms, multipart uploads): the part is in the route schema,
 * so the API description (`GET /v1/openapi.json`) shows it, but Ajv does not check it
 * (`handlerValidatedCompiler`). Every other schema part is validated by Ajv as usual.
 */
export const VALIDATED_BY = 'x-validated-by';

/** An object schema the handler validates (see `VALIDATED_BY`); its properties are optional. */
export function handlerValidated<T extends TProperties>(properties: T, description?: string): TObject<T> {
  return Type.Object(properties, { additionalProperties: true, [VALIDATED_BY]: 'handler', ...(description ? { description } : {}) });
}

/** A multipart form with a `file` part and text fields, for `schema.body` of an upload route (with `consumes`). */
export function multipartForm(fields: Record<string, string>, description?: string): TObject {
  const props: TProperties = { file: Type.String({ format: 'binary', description: 'The file.' }) };
  for (const [name, text] of Object.entries(fields)) props[name] = Type.String({ description: text });
  return handlerValidated(props, description);
}

type ValidatorFactory = ReturnType<typeof AjvCompiler>;

/**
 * Wraps Fastify's validator factory: a schema part marked `VALIDATED_BY: handler` compiles to a
 * check that passes everything (the handler validates it); all others compile as before.
 */
export function handlerValidatedCompiler(base: ValidatorFactory): ValidatorFactory {
  return ((externalSchemas: never, options: never) => {
    const compile = (base as (a: never, b: never) => (route: { schema: unknown }) => unknown)(externalSchemas, options);
    return (route: { schema: unknown }) => {
      const s = route.schema as Record<string, unknown> | null;
      if (s && typeof s === 'object' && s[VALIDATED_BY] === 'handler') return () => true;
      return compile(route);
    };
  }) as unknown as ValidatorFactory;
}
