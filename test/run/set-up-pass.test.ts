// A new run's set-up steps (finalizer, SSH keys, GPU catalog) and its create are one reconcile, against
// a real kube-apiserver and the simulator: with many runs applied at once, each create waits for one
// turn of the queue, not four. Ends with the leak check.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { finalizer, type RunpodRun } from '../../src/api/runpodrun.ts';
import { createLogger } from '../../src/log.ts';
import { defaultTimings } from '../../src/run/decide/timings.ts';
import { Accounts } from '../../src/run/memory/accounts.ts';
import { installScope } from '../../src/run/ownership.ts';
import { RunReconciler } from '../../src/run/reconciler.ts';
import { createRunpodClient } from '../../src/runpod/index.ts';
import { assertNoLeaks, countRequests, simPods, simStats } from '../runpod-sim/client.ts';
import { startSimulator } from '../runpod-sim/server.ts';
import { rpr, testRun } from '../kube/helpers.ts';
import { createTestNamespace, testCluster } from '../support/cluster.ts';

const apiKey = 'rpa_SET_UP_PASS_KEY_0123456789ab';

test('one reconcile of a new run adds its finalizer, makes its SSH keys, reads the catalog and sends its create', async () => {
  const { kubeConfig } = await testCluster();
  const namespace = await createTestNamespace('set-up-pass');
  const objects = kubeConfig.makeApiClient(CustomObjectsApi);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespacedSecret({ namespace, body: { metadata: { name: 'runpod' }, stringData: { apiKey } } });
  const spec = {
    credentials: { secretName: 'runpod' }, image: 'runpod/base:0.6.2', gpu: { types: ['NVIDIA A40'] },
    job: { command: ['sleep', '600'] }, limits: { maxRuntimeSeconds: 600, readyTimeoutSeconds: 60 },
  };
  for (const name of ['stepped', 'whole']) await objects.createNamespacedCustomObject({ ...rpr, namespace, body: { ...testRun(namespace, name), spec } });
  const sim = await startSimulator({ apiKeys: [apiKey] });
  const client = createRunpodClient({ apiKey, baseUrl: sim.baseUrl, logger: createLogger('silent') });
  const resultsDir = mkdtempSync(join(tmpdir(), 'set-up-pass-'));
  const accounts = new Accounts({ baseUrl: sim.baseUrl, clusterId: 'cluster-a', pollIntervalMs: 1000, logger: createLogger('silent'), onPodsChanged: () => {} });
  const reconciler = new RunReconciler({
    kubeConfig, accounts, clusterId: 'cluster-a', scope: installScope(namespace), runpodApiUrl: sim.baseUrl, resultsDir, watchdogPeriodMs: 10_000,
    settings: { ambiguousLookupMs: 2000, deadlineMarginMs: 5000, goneLooks: 3, pollIntervalMs: 1000, timings: defaultTimings },
    events: { record: () => {} }, logger: createLogger('silent'),
  });
  const get = async (name: string) => (await objects.getNamespacedCustomObject({ ...rpr, namespace, name })) as RunpodRun;
  try {
    // The account's pod list is in: decide creates nothing before one.
    const observer = accounts.get(apiKey).observer;
    for (let wait = 0; wait < 200 && !observer.snapshot; wait++) await delay(50);
    assert.ok(observer.snapshot, 'the account has a pod list');

    // Stepped (as a test may), a reconcile takes one step: the finalizer.
    await reconciler.reconcile(`${namespace}/stepped`, { oneStep: true });
    assert.ok((await get('stepped')).metadata.finalizers?.includes(finalizer));
    assert.equal(countRequests(await simStats(sim.adminUrl), 'POST', '/v2/pods'), 0, 'one step: no create yet');

    await reconciler.reconcile(`${namespace}/whole`);
    const run = await get('whole');
    assert.ok(run.metadata.finalizers?.includes(finalizer), 'finalizer');
    await core.readNamespacedSecret({ namespace, name: 'whole-ssh' });
    assert.equal(countRequests(await simStats(sim.adminUrl), 'POST', '/v2/pods'), 1, 'the create went in the same reconcile');
    assert.ok(run.status?.pod?.id, `the pod is recorded: ${JSON.stringify(run.status)}`);
  } finally {
    for (const pod of await simPods(sim.adminUrl)) if (!pod.deletedAt) await client.deletePod(pod.id);
    await accounts.close();
    await client.close();
    rmSync(resultsDir, { recursive: true, force: true });
    await assertNoLeaks(sim.adminUrl, 5000).finally(() => sim.stop());
  }
});
