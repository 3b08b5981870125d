// Lint: typescript-eslint's type-aware rules on top of eslint's recommended set.
import js from '@eslint/js';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/** One layer's forbidden imports (flat config merges rules per file, so each layer is its own block). */
// A later block's options replace an earlier one's for the same rule, so every layer repeats the
// product-wide ban.
const productWide = { group: ['**/test/**', '**/runpod-sim/**', '**/bench/**'], message: 'the product never imports the tests or the simulator' };
function layer(files, group, message) {
  const patterns = group.length === 0 ? [productWide] : [productWide, { group, message }];
  return [{ files: [files], rules: { 'no-restricted-imports': ['error', { patterns }] } }];
}

/**
 * One zone of src/run/ (the loop's folders): what its files may not import. Type-only imports are
 * allowed (the folders share one vocabulary of types); a value import names what the zone runs.
 */
function zone(files, group, message) {
  return { files: [files], rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [{ group, message, allowTypeImports: true }] }] } };
}
/** decide's vocabulary (model, outcome, timings) is everyone's; the rest of decide is its logic. */
const decideLogic = ['**/decide/**', '!**/decide/model.ts', '!**/decide/outcome.ts', '!**/decide/timings.ts'];
/** The run's loop itself (reconciler, sweeper, urgency): only the top imports it; ownership's markers are everyone's. */
const runTop = ['../*.ts', '!../ownership.ts'];

export default tseslint.config(
  { ignores: ['node_modules/**', 'crds/**', 'deploy/**', 'dist/**'] },
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
  ...layer('src/runpod/**/*.ts', ['**/kube/**', '**/api/**', '**/run/**', '**/ssh/**', '**/results/**', '**/pod/**', '@kubernetes/*'],
    'the Runpod client knows no Kubernetes, no run and no pod'),
  ...layer('src/{ssh,results}/**/*.ts', ['**/kube/**', '**/api/**', '**/run/**', '**/runpod/**', '@kubernetes/*'],
    'SSH and the result stores know neither Kubernetes nor Runpod'),
  ...layer('src/pod/**/*.ts', ['**/kube/**', '**/api/**', '**/run/**', '**/runpod/**', '@kubernetes/*'],
    'the pod side knows only its protocol and SSH'),
  ...layer('src/plugin/**/*.ts', ['**/run/**', '**/runpod/**', '**/results/**', '**/main.ts', '**/config*.ts'],
    'the kubectl plugin acts with the user\'s kubeconfig and RBAC and the run\'s Secrets (SSH; its Runpod key only for Runpod\'s log of the pod): no controller loop, no Runpod client'),
  // The loop's folders (docs/architecture.md): observe reads, decide is pure, act carries out one step
  // through the ports, memory keeps what no status records.
  zone('src/run/decide/**/*.ts', ['**/act/**', '**/ports/**', '**/memory/**', '**/observe/**', ...runTop, '**/runpod/**', '**/ssh/**',
    '**/results/**', '**/kube/**', '!**/kube/backoff.ts', '**/pod/**', '!**/pod/protocol.ts', '**/log.ts', '**/redaction*.ts', 'node:*', '@kubernetes/*'],
  'decide is pure: it runs only decide/, api/ and the pure helpers (kube/backoff.ts, pod/protocol.ts)'),
  zone('src/run/act/**/*.ts', [...decideLogic, ...runTop], 'act carries out a step and returns its Outcome: it runs nothing of decide (learn() is the reconciler\'s)'),
  zone('src/run/observe/**/*.ts', [...decideLogic, '**/act/**', '**/memory/**', ...runTop], 'observe only reads'),
  zone('src/run/ports/**/*.ts', [...decideLogic, '**/act/**', '**/memory/**', ...runTop], 'a port is a side effect behind an interface: it knows no step'),
  zone('src/run/memory/**/*.ts', [...decideLogic, '**/act/**', '**/ports/**', ...runTop], 'memory keeps what this process learned: it decides nothing'),
  {
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [importX.createNodeResolver({ extensions: ['.ts', '.js'] })] },
    rules: {
      'import-x/no-cycle': 'error',
      // Every line counts, comments too: a file is read whole.
      'max-lines': ['error', { max: 300 }],
    },
  },
  // decide narrows its types (a LivePod, the list it saw) instead of asserting them.
  { files: ['src/run/decide/**/*.ts'], rules: { '@typescript-eslint/no-non-null-assertion': 'error' } },
  { files: ['eslint.config.js'], ...tseslint.configs.disableTypeChecked },
);
