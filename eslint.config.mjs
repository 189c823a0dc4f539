// Lint keeps the shape the formatter cannot: short parameter lists (an options object where
// arguments of one type could be swapped), plain conditions, and the layers of src/ (handlers →
// domain → ports ← adapters; see docs/architecture.md). Prettier owns layout (npm run format).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Imports files of src/ may not make: the layer rule, checked per file. `app` is the composition
 * root: src/app.ts and src/start.ts.
 */
const restrictImports = (files, what, forbidden) => ({
  files,
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: forbidden.map((name) => ({
          regex: name === 'app' ? '^(\\.\\./)+(app|start)$' : `(^|/)${name}/`,
          message: `${what} may not import src/${name} (docs/architecture.md, "Layers")`,
        })),
      },
    ],
  },
});
const layer = (folder, forbidden) =>
  restrictImports([`src/${folder}/**/*.ts`], `src/${folder}`, forbidden);

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'dist/',
      'kafka/libs/',
      'bench/results/',
      'bench/profiles/',
      'jmeter/target/',
      'scripts/postman/out/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mjs'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "UnaryExpression[operator='!'] > LogicalExpression",
          message: 'A negated compound condition: name it, or state it positively.',
        },
      ],
      'max-len': [
        'error',
        {
          code: 100,
          ignoreStrings: true,
          ignoreTemplateLiterals: true,
          ignoreRegExpLiterals: true,
          ignoreUrls: true,
        },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // The service's own code: an options object where arguments of one type could be swapped,
    // and a chain of conditions written as statements or a lookup, not nested ternaries.
    files: ['src/**/*.ts'],
    rules: { 'max-params': ['error', 4], 'no-nested-ternary': 'error' },
  },
  {
    // Tests reach into internals and fake what they replace; `any` there is a tool, not a leak.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  layer('util', ['ports', 'config', 'ledger', 'metadata', 'domain', 'handlers', 'app']),
  layer('ports', ['config', 'ledger', 'metadata', 'domain', 'handlers', 'app']),
  layer('config', ['ledger', 'metadata', 'domain', 'handlers', 'app']),
  layer('ledger', ['metadata', 'domain', 'handlers', 'app']),
  layer('metadata', ['ledger', 'domain', 'handlers', 'app']),
  layer('domain', ['config', 'ledger', 'metadata', 'handlers', 'app']),
  layer('handlers', ['ledger', 'metadata', 'app']),
  // central-ledger's entry points sit where its charts run them (src/api/index.js,
  // src/handlers/index.js), so one is inside src/handlers: they start the composition root and
  // reach nothing else above the configuration.
  restrictImports(['src/api/index.ts', 'src/handlers/index.ts'], 'an entry point', [
    'ledger',
    'metadata',
    'domain',
    'ports',
  ]),
);
