// Issue 9 item 10, at the seam it lives in: what a step learned (a verified retrieval) is written on
// a view that another writer changed meanwhile (a label, an annotation, GitOps): the write meets a
// 409, re-reads the run and re-applies only what the step changed, keeping the other writer's change.
// Against the real kube-apiserver. (End to end, test/e2e/conflicts.test.ts bumps a run through its
// retrieval; since retrievals run in the transfer pool, the window for a 409 there is milliseconds.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { RunpodRun } from '../../src/api/runpodrun.ts';
import type { RunpodRunStatus } from '../../src/api/status.ts';
import { RunApi } from '../../src/run/ports/run-api.ts';
import { rpr, testRun } from '../kube/helpers.ts';
import { createTestNamespace, testCluster } from '../support/cluster.ts';

test('a verified retrieval written on a view another writer changed: re-read, re-applied, nothing of either lost', async () => {
  const { kubeConfig } = await testCluster();
  const namespace = await createTestNamespace('learned');
  const objects = kubeConfig.makeApiClient(CustomObjectsApi);
  const runs = new RunApi(kubeConfig);
  await objects.createNamespacedCustomObject({ ...rpr, namespace, body: testRun(namespace, 'r') });
  const created = await runs.get(namespace, 'r');
  assert.ok(created);
  const before: RunpodRunStatus = { phase: 'Retrieving', reason: 'Retrieving', message: 'retrieving', job: { exitCode: 0 } };
  const decided = await runs.writeStatus(created, before);

  // Another writer, after the decided status and before the step's own write.
  await objects.patchNamespacedCustomObject(
    { ...rpr, namespace, name: 'r', body: { metadata: { annotations: { 'example.com/bump': '1' } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  const learned: RunpodRunStatus = { ...before, results: { files: 2, bytes: 10, location: '/results/x', retrievedAt: '2026-12-01T12:00:00Z' } };
  let conflicts = 0;
  const written: RunpodRun = await runs.recordStatusChange(decided, before, learned, () => { conflicts++; });

  assert.equal(conflicts, 1, 'the write met the 409');
  const live = await runs.get(namespace, 'r');
  assert.deepEqual(live?.status?.results, learned.results, 'what the step learned is there');
  assert.equal(live?.metadata.annotations?.['example.com/bump'], '1', 'the other writer\'s change is kept');
  assert.equal(written.metadata.resourceVersion, live?.metadata.resourceVersion);
});
