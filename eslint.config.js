// Lint: typescript-eslint's type-aware rules on top of eslint's recommended set.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** One layer's forbidden imports (flat config merges rules per file, so each layer is its own block). */
// A later block's options replace an earlier one's for the same rule, so every layer repeats the
// product-wide ban.
const productWide = { group: ['**/test/**', '**/runpod-sim/**', '**/bench/**'], message: 'the product never imports the tests or the simulator' };
function layer(files, group, message) {
  const patterns = group.length === 0 ? [productWide] : [productWide, { group, message }];
  return [{ files: [files], rules: { 'no-restricted-imports': ['error', { patterns }] } }];
}

export default tseslint.config(
  { ignores: ['node_modules/**', 'crds/**', 'deploy/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-floating-promises': ['error', {
        // node:test's test()/describe() return promises the runner itself awaits.
        allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }],
      }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Tests poke at untyped JSON (manifests, API answers) on purpose; src/ keeps the strict rules.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
    },
  },
  // The layering of DESIGN.md §2, checked rather than remembered. Each layer names what it must not
  // reach; a relative import like '../run/x.ts' matches '**/run/**'.
  ...layer('src/**/*.ts', [], ''),
  ...layer('src/kube/**/*.ts', ['**/api/**', '**/run/**', '**/runpod/**', '**/pod/**', '**/ssh/**', '**/results/**'],
    'the controller runtime knows no run, no Runpod and no pod'),
  ...layer('src/runpod/**/*.ts', ['**/kube/**', '**/api/**', '**/run/**', '**/ssh/**', '**/results/**', '@kubernetes/*'],
    'the Runpod client knows no Kubernetes and no run'),
  ...layer('src/{ssh,results}/**/*.ts', ['**/kube/**', '**/api/**', '**/run/**', '**/runpod/**', '@kubernetes/*'],
    'SSH and the result stores know neither Kubernetes nor Runpod'),
  ...layer('src/pod/**/*.ts', ['**/kube/**', '**/api/**', '**/run/**', '**/runpod/**', '@kubernetes/*'],
    'the pod side knows only its protocol and SSH'),
  { files: ['eslint.config.js'], ...tseslint.configs.disableTypeChecked },
);
