// ESLint flat config: `npm run lint` (CI runs it after the typecheck, .ci/run). The engine's
// allowlist and banned globals are below; test/engine/purity.test.ts checks the same allowlist
// transitively, and test/unit/import-cycles.test.ts forbids import cycles in src/.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The engine is pure: it may import itself and src/lib (pure helpers), nothing else; the types it
// takes from outside (ports and the data they carry) come through src/engine/ports.ts, which may
// only re-export types. No timers, network, process or wall clock: those come in as EnginePorts
// (now, sleep, newId, http, …). test/engine/purity.test.ts checks the same allowlist transitively.
const ENGINE_GLOBALS = ['setTimeout', 'setInterval', 'setImmediate', 'clearTimeout', 'clearInterval', 'clearImmediate', 'queueMicrotask', 'fetch', 'process', 'require', 'Buffer', 'performance', 'crypto'].map(
  (name) => ({ name, message: 'the engine does no I/O and keeps no time: take it from EnginePorts (src/engine/types.ts)' }),
);
const ENGINE_PROPERTIES = [
  { object: 'Date', property: 'now', message: 'the engine reads the clock through EnginePorts.now()' },
  { object: 'globalThis', message: 'the engine reaches no global: take it from EnginePorts' },
  { object: 'Math', property: 'random', message: 'the engine takes randomness and ids from EnginePorts.newId()' },
];
const onlyEngineAndLib = (regex) => ({
  patterns: [{ regex, message: 'src/engine imports only src/engine and src/lib; types from outside come through src/engine/ports.ts' }],
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'examples/**', '**/*.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    rules: {
      // TypeScript checks names itself (and knows the Node and DOM globals); the core rule only adds false alarms on types.
      'no-undef': 'off',
      // `_name` marks a parameter or binding kept for its position or to drop a key from a rest object.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // late-bound `let` read by closures before its single assignment (runtime.ts wiring, SSE replies)
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    files: ['bin/**/*.js', 'scripts/**/*.{js,mjs}', 'test/**/*.mjs', 'eslint.config.js'],
    languageOptions: { globals: { process: 'readonly', URL: 'readonly', console: 'readonly' } },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      // tests read loose JSON bodies from the wire and poke at private shapes on purpose
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['src/engine/**/*.ts'],
    rules: {
      'no-restricted-globals': ['error', ...ENGINE_GLOBALS],
      'no-restricted-properties': ['error', ...ENGINE_PROPERTIES],
      'no-restricted-syntax': ['error', { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'the engine reads the clock through EnginePorts.now()' }],
    },
  },
  {
    // src/engine/*.ts: `./…` and `../lib/…`
    files: ['src/engine/*.ts'],
    ignores: ['src/engine/ports.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', onlyEngineAndLib('^(?!\\./|\\.\\./lib/)')] },
  },
  {
    // src/engine/<dir>/*.ts: `./…`, `../…` (the engine) and `../../lib/…`
    files: ['src/engine/*/**/*.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', onlyEngineAndLib('^(?!\\./|\\.\\./(?!\\.\\./)|\\.\\./\\.\\./lib/)')] },
  },
  {
    files: ['src/engine/ports.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [{ regex: '.', allowTypeImports: true, message: 'src/engine/ports.ts re-exports types only' }] },
      ],
    },
  },
  {
    // src/lib is the pure helpers the engine shares with the rest: it imports only itself
    files: ['src/lib/**/*.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [{ regex: '^(?!\\./)', message: 'src/lib imports only src/lib' }] }] },
  },
);
