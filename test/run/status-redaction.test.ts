// Status is read by everyone who may `kubectl get` the run: a registered secret in any of its messages
// (the run's, a condition's, an attempt's) is [REDACTED] in what the API server stores, whichever
// write path carries it (the decided status, or what a step learned). Against the real kube-apiserver.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CustomObjectsApi } from '@kubernetes/client-node';
import type { RunpodRunStatus } from '../../src/api/status.ts';
import { registerSecret } from '../../src/log.ts';
import { RunApi } from '../../src/run/ports/run-api.ts';
import { rpr, testRun } from '../kube/helpers.ts';
import { createTestNamespace, testCluster } from '../support/cluster.ts';

const SECRET = 'sk_status_secret_5e1d9c0a7b';

test('a registered secret in a status message, a condition\'s or an attempt\'s is stored [REDACTED]', async () => {
  const { kubeConfig } = await testCluster();
  const namespace = await createTestNamespace('status-redact');
  const objects = kubeConfig.makeApiClient(CustomObjectsApi);
  const runs = new RunApi(kubeConfig);
  await objects.createNamespacedCustomObject({ ...rpr, namespace, body: testRun(namespace, 'r') });
  const created = await runs.get(namespace, 'r');
  assert.ok(created);
  registerSecret(SECRET, 'uid-status-test');
  const leaky = (where: string) => `${where}: the store said AccessDenied for key ${SECRET}`;
  const decided: RunpodRunStatus = {
    phase: 'Retrieving', reason: 'ResultsUnverified', message: leaky('status'),
    conditions: [{ type: 'Reconciling', status: 'True', reason: 'Retrieving', message: leaky('condition'), lastTransitionTime: '2026-12-01T12:00:00Z' }],
    attempts: [{ name: 'r-1', gpuType: 'NVIDIA A40', time: '2026-12-01T12:00:00Z', outcome: 'Created', message: leaky('attempt') }],
  };
  const written = await runs.writeStatus(created, decided);
  const stored = JSON.stringify((await runs.get(namespace, 'r'))?.status);
  assert.ok(!stored.includes(SECRET), stored);
  assert.equal((await runs.get(namespace, 'r'))?.status?.message, 'status: the store said AccessDenied for key [REDACTED]');

  const learned: RunpodRunStatus = { ...decided, message: leaky('learned') };
  await runs.recordStatusChange(written, decided, learned);
  const after = await runs.get(namespace, 'r');
  assert.equal(after?.status?.message, 'learned: the store said AccessDenied for key [REDACTED]');
  assert.ok(!JSON.stringify(after?.status).includes(SECRET));
});
