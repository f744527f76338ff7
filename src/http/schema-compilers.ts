import { createRequire } from 'node:module';
import type { AjvCompiler } from '@fastify/ajv-compiler';

/**
 * Fastify's schema compilers, loaded and run on a route's first request instead of when the route
 * is registered. Ajv generates and compiles JavaScript for each of the ~300 route schema parts, and
 * fast-json-stringify for each response schema: before this, that was most of the CPU a server
 * spent before `/health` answered, and loading Ajv (Fastify's own compilers load it) a good part of
 * the rest (docs/speed.md, "Start-up"). A route nobody calls costs nothing.
 *
 * The compilers are CommonJS and a validator must be ready synchronously inside a request, so they
 * are `require`d (not `import()`ed) the first time one is needed.
 */
const require = createRequire(import.meta.url);
/** Fastify's own dependencies, resolved from where Fastify is (not all are dependencies of Dovetail). */
const requireFromFastify = createRequire(require.resolve('fastify'));

type ValidatorFactory = ReturnType<typeof AjvCompiler>;
type ValidatorCompiler = ReturnType<ValidatorFactory>;
type RouteDefinition = Parameters<ValidatorCompiler>[0];

/** An Ajv validate function as Fastify calls it: the data and its parent (so Ajv may coerce a root value); `errors` after a failure. */
interface Validate {
  (data: unknown, dataCtx?: object): unknown;
  errors?: unknown;
}

/** A serializer as Fastify calls it. */
type Serialize = (doc: unknown) => string;
type SerializerCompiler = (route: RouteDefinition & { httpStatus?: string; contentType?: string }) => Serialize;
type SerializerFactory = (externalSchemas: unknown, options: unknown) => SerializerCompiler;

/**
 * A validator compiled on its first call. `schemaEnv` makes Fastify pass the parent data, as it
 * does for Ajv's own functions; `errors` is copied from the compiled function after each call,
 * where Fastify reads it.
 */
function validatorOnFirstCall(compile: () => Validate): Validate {
  let fn: Validate | undefined;
  const validate: Validate & { schemaEnv: true } = Object.assign(
    (data: unknown, dataCtx?: object) => {
      fn ??= compile();
      const ok = fn(data, dataCtx);
      validate.errors = fn.errors;
      return ok;
    },
    { schemaEnv: true as const },
  );
  return validate;
}

let ajvPool: ValidatorFactory | undefined;

/**
 * Fastify's Ajv validator factory (`@fastify/ajv-compiler`), with each validator compiled on its
 * first call. One pool per process, as Fastify's is meant to be used: its Ajv instance keeps the
 * validators it compiled, keyed by the route schemas (module constants), so a second server built
 * in the same process (the CLI's, or a test's restart) compiles none of them again.
 */
export function lazyValidators(): ValidatorFactory {
  return ((externalSchemas: never, options: never) => {
    let compile: ValidatorCompiler | undefined;
    return (route: RouteDefinition) =>
      validatorOnFirstCall(() => {
        ajvPool ??= (require('@fastify/ajv-compiler') as { AjvCompiler: typeof AjvCompiler }).AjvCompiler();
        compile ??= (ajvPool as (a: never, b: never) => ValidatorCompiler)(externalSchemas, options);
        return compile(route) as Validate;
      });
  }) as unknown as ValidatorFactory;
}

let serializerPool: SerializerFactory | undefined;

/** Fastify's response serializer factory (`@fastify/fast-json-stringify-compiler`), each serializer built on its first call. */
export function lazySerializers(): SerializerFactory {
  return (externalSchemas, options) => {
    let compile: SerializerCompiler | undefined;
    return (route) => {
      let fn: Serialize | undefined;
      return (doc) => {
        if (!fn) {
          serializerPool ??= (requireFromFastify('@fastify/fast-json-stringify-compiler') as { SerializerSelector: () => SerializerFactory }).SerializerSelector();
          compile ??= serializerPool(externalSchemas, options);
          fn = compile(route);
        }
        return fn(doc);
      };
    };
  };
}
