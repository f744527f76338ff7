// ESLint flat config: `npm run lint` (CI runs it after the typecheck, .ci/run). The engine's
// allowlist and banned globals are below; test/engine/purity.test.ts checks the same allowlist
// transitively, and test/arch/import-cycles.test.ts forbids import cycles in src/.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'examples/**', '**/*.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
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
    files: ['bin/**/*.js', 'scripts/**/*.{js,mjs}', 'eslint.config.js'],
    languageOptions: { globals: { process: 'readonly', URL: 'readonly', console: 'readonly' } },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      // tests read loose JSON bodies from the wire and poke at private shapes on purpose
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);
