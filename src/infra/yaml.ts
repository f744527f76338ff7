import { createRequire } from 'node:module';

type Yaml = typeof import('yaml');

const require = createRequire(import.meta.url);
let yaml: Yaml | undefined;

/**
 * The `yaml` package (~70 modules), loaded with the first YAML read or written (an app's DSL,
 * dovetail.yaml, an OpenAPI tool) rather than by every process at start (docs/speed.md,
 * "Start-up"). Its callers are synchronous, so it is `require`d: the same CommonJS build an
 * `import` of it resolves to.
 */
export function yamlLib(): Yaml {
  yaml ??= require('yaml') as Yaml;
  return yaml;
}
