/**
 * Contract checks against Dify's published OpenAPI document
 * (`test/fixtures/dify-openapi/openapi_service.json`, a copy kept in the repository; see the NOTICE
 * beside it). Ajv compiles fragments of the document in place, so `$ref`s resolve against it.
 *
 * Adjustments, all generic: `strict: false`; a no-op `decimal` format; OpenAPI `nullable`
 * (Ajv's own keyword; on a schema without `type`, see `typelessNullable`); the `user_input_form` item `oneOf` is treated as `anyOf` (its branches
 * overlap); a schema with a `discriminator.mapping` is checked against the mapped schema of the
 * value's discriminator property.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import formatsModule from 'ajv-formats';
import { PROJECT_ROOT } from './fixtures.js';

const SPEC_PATH = path.resolve(PROJECT_ROOT, 'test', 'fixtures', 'dify-openapi', 'openapi_service.json');
const SPEC_ID = 'dify-openapi';

type Json = Record<string, unknown>;

let ajv: Ajv | undefined;
let spec: Json | undefined;
const compiled = new Map<string, ValidateFunction>();

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** oneOf → anyOf under every `user_input_form` property. */
function relaxUserInputForm(node: unknown, inForm = false): void {
  if (Array.isArray(node)) return node.forEach((n) => relaxUserInputForm(n, inForm));
  if (!isObject(node)) return;
  if (inForm && Array.isArray(node.oneOf)) {
    node.anyOf = node.oneOf;
    delete node.oneOf;
  }
  for (const [k, v] of Object.entries(node)) relaxUserInputForm(v, inForm || k === 'user_input_form');
}

/**
 * OpenAPI 3.0 `nullable` on a schema without `type` (beside a `$ref`, or on an any-value schema),
 * which Ajv's `nullable` keyword refuses: `$ref` ones become `anyOf: [ref, null]`, the rest drop it.
 */
function typelessNullable(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(typelessNullable);
  if (!isObject(node)) return;
  if (node.nullable === true && node.type === undefined) {
    delete node.nullable;
    if (typeof node.$ref === 'string') {
      node.anyOf = [{ $ref: node.$ref }, { type: 'null' }];
      delete node.$ref;
    }
  }
  for (const v of Object.values(node)) typelessNullable(v);
}

function load(): { ajv: Ajv; spec: Json } {
  if (ajv && spec) return { ajv, spec };
  spec = JSON.parse(readFileSync(SPEC_PATH, 'utf8')) as Json;
  relaxUserInputForm(spec);
  typelessNullable(spec);
  ajv = new Ajv({ strict: false, allErrors: true });
  // ajv-formats is CommonJS: its default export sits on `.default` under NodeNext.
  const addFormats = (formatsModule as unknown as { default: (a: Ajv) => void }).default;
  addFormats(ajv);
  for (const f of ['decimal', 'int64', 'int32', 'double', 'float', 'binary', 'byte', 'password']) ajv.addFormat(f, true);
  ajv.addSchema(spec, SPEC_ID);
  return { ajv, spec };
}

function pointer(parts: readonly string[]): string {
  return '#/' + parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');
}

function at(parts: readonly string[]): unknown {
  let node: unknown = load().spec;
  for (const p of parts) node = isObject(node) ? node[p] : undefined;
  return node;
}

function validator(parts: readonly string[]): ValidateFunction {
  const key = pointer(parts);
  const hit = compiled.get(key);
  if (hit) return hit;
  const v = load().ajv.compile({ $ref: `${SPEC_ID}${key}` });
  compiled.set(key, v);
  return v;
}

function describe(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}${e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''}`);
}

/** Follows a local `$ref` to its parts, e.g. `#/components/responses/X` → ['components','responses','X']. */
function refParts(ref: string): string[] {
  return ref.replace(/^#\//, '').split('/').map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function errorsAt(parts: string[], value: unknown): string[] {
  const v = validator(parts);
  const errs = v(value) ? [] : describe(v.errors);
  const schema = at(parts);
  const disc = isObject(schema) && isObject(schema.discriminator) ? schema.discriminator : undefined;
  if (disc && isObject(disc.mapping) && typeof disc.propertyName === 'string' && isObject(value)) {
    const tag = value[disc.propertyName];
    const target = typeof tag === 'string' ? disc.mapping[tag] : undefined;
    if (typeof target !== 'string') errs.push(`${disc.propertyName}=${JSON.stringify(tag)} has no schema in the discriminator mapping`);
    else errs.push(...errorsAt(refParts(target), value));
  }
  return errs;
}

/** Errors of `value` against `components.schemas[name]` (empty when valid). */
export function schemaErrors(name: string, value: unknown): string[] {
  if (at(['components', 'schemas', name]) === undefined) throw new Error(`no schema ${name} in the Dify OpenAPI document`);
  return errorsAt(['components', 'schemas', name], value);
}

/** Throws listing every violation of `value` against `components.schemas[name]`. */
export function validateSchema(name: string, value: unknown): void {
  const errs = schemaErrors(name, value);
  if (errs.length) throw new Error(`does not match ${name}:\n  ${errs.join('\n  ')}\nvalue: ${JSON.stringify(value).slice(0, 2000)}`);
}

/** Errors of a JSON response body against the documented response of `METHOD path` for `status`. */
export function responseErrors(apiPath: string, method: string, status: number, body: unknown, contentType = 'application/json'): string[] {
  const op = ['paths', apiPath, method.toLowerCase()];
  if (at(op) === undefined) throw new Error(`${method.toUpperCase()} ${apiPath} is not in the Dify OpenAPI document`);
  let resp = [...op, 'responses', String(status)];
  if (at(resp) === undefined) throw new Error(`${method.toUpperCase()} ${apiPath} documents no ${status} response`);
  const ref = (at(resp) as Json).$ref;
  if (typeof ref === 'string') resp = refParts(ref);
  const schemaPath = [...resp, 'content', contentType, 'schema'];
  if (at(schemaPath) === undefined) throw new Error(`${method.toUpperCase()} ${apiPath} ${status} has no ${contentType} schema`);
  return errorsAt(schemaPath, body);
}

/** Throws listing every violation of a response body against the documented one. */
export function validateResponse(apiPath: string, method: string, status: number, body: unknown, contentType = 'application/json'): void {
  const errs = responseErrors(apiPath, method, status, body, contentType);
  if (errs.length) throw new Error(`${method.toUpperCase()} ${apiPath} ${status} does not match the spec:\n  ${errs.join('\n  ')}\nbody: ${JSON.stringify(body).slice(0, 2000)}`);
}
