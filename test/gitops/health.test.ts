// The Argo CD health check as shipped: argocd-cm-patch.yaml carries exactly deploy/argocd/health.lua,
// works as a kustomize patch and as the GitOps guide's `kubectl patch` (docs/guide/09-gitops.md) (real API server), and judges the snapshots captured from real runs (test/gitops/fixtures,
// written by test/e2e/gitops.test.ts with GITOPS_FIXTURES_DIR) as kstatus and the mapping say.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { createTestNamespace } from '../support/cluster.ts';
import { kubectl, runKubectl } from '../support/kubectl.ts';
import { expectedHealth } from './expected.ts';
import { healthLuaPath, judgeWithArgoCdLua, judgeWithKstatus, judgeWithLua } from './judges.ts';

const patchPath = join(import.meta.dirname, '..', '..', 'deploy', 'argocd', 'argocd-cm-patch.yaml');
const healthKey = 'resource.customizations.health.runpod-operator.dev_RunpodRun';
const fixturesDir = join(import.meta.dirname, 'fixtures');
const fixtures = readdirSync(fixturesDir).filter((f) => f.endsWith('.json')).sort()
  .map((file) => ({ file, run: JSON.parse(readFileSync(join(fixturesDir, file), 'utf8')) as Record<string, any> }));

describe('Argo CD health check', () => {
  test('argocd-cm-patch.yaml inlines health.lua byte for byte', () => {
    const patch = parse(readFileSync(patchPath, 'utf8'));
    assert.equal(patch.metadata.name, 'argocd-cm');
    assert.equal(patch.data[healthKey], readFileSync(healthLuaPath, 'utf8'),
      'deploy/argocd/argocd-cm-patch.yaml is stale: re-indent deploy/argocd/health.lua into it');
  });

  test('the patch applies with kustomize onto an existing argocd-cm and keeps its other settings', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argocd-cm-'));
    try {
      writeFileSync(join(dir, 'argocd-cm.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\ndata: {url: "https://argocd.example.com"}\n');
      writeFileSync(join(dir, 'patch.yaml'), readFileSync(patchPath));
      writeFileSync(join(dir, 'kustomization.yaml'), 'resources: [argocd-cm.yaml]\npatches: [{path: patch.yaml}]\n');
      const built = await runKubectl(['kustomize', dir]);
      assert.equal(built.status, 0, built.stderr);
      const configMap = parse(built.stdout);
      assert.equal(configMap.data.url, 'https://argocd.example.com');
      assert.equal(configMap.data[healthKey], readFileSync(healthLuaPath, 'utf8'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the GitOps guide\'s kubectl patch adds the check to a live argocd-cm and keeps its other settings', async () => {
    // A namespace of the test's own stands in for argocd: a real Argo CD's settings are never touched.
    const namespace = await createTestNamespace('argocd');
    const created = await kubectl(['-n', namespace, 'create', 'configmap', 'argocd-cm', '--from-literal=url=https://argocd.example.com']);
    assert.equal(created.status, 0, created.stderr);
    const dir = mkdtempSync(join(tmpdir(), 'argocd-cm-'));
    try {
      const patch = join(dir, 'patch.yaml');
      const text = readFileSync(patchPath, 'utf8').replace(/^ {2}namespace: argocd$/m, `  namespace: ${namespace}`);
      assert.match(text, new RegExp(`namespace: ${namespace}`));
      writeFileSync(patch, text);
      const patched = await kubectl(['-n', namespace, 'patch', 'configmap', 'argocd-cm', '--patch-file', patch]);
      assert.equal(patched.status, 0, patched.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const configMap = JSON.parse((await kubectl(['-n', namespace, 'get', 'configmap', 'argocd-cm', '-o', 'json'])).stdout);
    assert.equal(configMap.data.url, 'https://argocd.example.com');
    assert.equal(configMap.data[healthKey], readFileSync(healthLuaPath, 'utf8'));
  });

  test('snapshots of real runs: the Lua check (lua5.4 and Argo CD\'s gopher-lua) and kstatus agree with the mapping', async () => {
    const runs = fixtures.map((f) => f.run);
    const [lua, argo, kstatus] = await Promise.all([judgeWithLua(runs), judgeWithArgoCdLua(runs), judgeWithKstatus(runs)]);
    fixtures.forEach(({ file, run }, i) => {
      const expected = expectedHealth(run);
      assert.equal(lua[i]?.status, expected.lua, `${file}: Lua says ${JSON.stringify(lua[i])}`);
      assert.deepEqual(argo[i], lua[i], `${file}: gopher-lua and lua5.4 differ`);
      assert.equal(kstatus[i]?.status, expected.kstatus, `${file}: kstatus says ${JSON.stringify(kstatus[i])}`);
      assert.ok(lua[i]?.message, `${file}: the Lua check says why`);
    });
    const kinds = new Set(runs.map((run) => expectedHealth(run).kind));
    for (const kind of ['no phase yet', 'Pending', 'Provisioning', 'Running', 'Retrieving', 'Succeeded', 'Failed/JobFailed', 'Failed/Cancelled', 'deleting',
      'Running, generation not yet observed', 'Succeeded, generation not yet observed']) {
      assert.ok(kinds.has(kind), `a fixture of kind ${kind}`);
    }
  });

  test('the message says what the controller says', async () => {
    const failed = fixtures.find(({ run }) => expectedHealth(run).kind === 'Failed/JobFailed')?.run;
    assert.ok(failed);
    for (const judge of [judgeWithLua, judgeWithArgoCdLua]) {
      const [verdict] = await judge([failed]);
      assert.equal(verdict?.message, `Failed/JobFailed: ${failed.status.message}`);
    }
  });
});
