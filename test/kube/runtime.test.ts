// The pieces together against a real kube-apiserver: reflector -> queue -> workers -> reconcile that
// adds a finalizer, writes status only on change, records an event and lets go on delete.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { Controller } from '../../src/kube/controller.ts';
import { EventRecorder } from '../../src/kube/events.ts';
import { addFinalizer, removeFinalizer } from '../../src/kube/finalizers.ts';
import { splitKey } from '../../src/kube/keys.ts';
import { Reflector, keyHandlers, resourcePath } from '../../src/kube/reflector.ts';
import { StatusWriter } from '../../src/kube/status.ts';
import { createTestNamespace, testCluster } from '../support/cluster.ts';
import { captureLogger } from './log-capture.ts';
import { rpr, testRun, type TestRun } from './helpers.ts';
import { eventually } from '../support/eventually.ts';

void test('a level-based controller converges, writes status once per change and cleans up on delete', async () => {
  const ns = await createTestNamespace('runtime');
  const { kubeConfig } = await testCluster();
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const { log, lines } = captureLogger('info');
  const writer = new StatusWriter({ kubeConfig, resource: rpr });
  const events = new EventRecorder({ kubeConfig, logger: log, reportingInstance: 'runtime-test' });
  const finalizer = 'runpod-operator.dev/cleanup';
  let statusWrites = 0;
  let reconciles = 0;

  const controller = new Controller({
    name: 'runtime-test', log, maxConcurrentReconciles: 4,
    reconcile: async (key) => {
      reconciles++;
      const [namespace, name] = splitKey(key);
      // Read the live object (not the cache): status is the durable record.
      let run: TestRun;
      try {
        run = (await api.getNamespacedCustomObject({ ...rpr, namespace, name })) as TestRun;
      } catch (err) {
        if ((err as { code?: number }).code === 404) return {};
        throw err;
      }
      if ((run.metadata as { deletionTimestamp?: string }).deletionTimestamp) {
        await removeFinalizer(api, rpr, run, finalizer);
        return {};
      }
      const withFinalizer = await addFinalizer(api, rpr, run, finalizer);
      if (withFinalizer !== run) return {}; // the write's own watch event brings us back
      const generation = (run.metadata as { generation?: number }).generation ?? 0;
      const result = await writer.write(run, { observedGeneration: generation, phase: 'Pending', reason: 'Created', message: `generation ${generation}` });
      if (result.written) {
        statusWrites++;
        events.record(run, { type: 'Normal', reason: 'Observed', note: `observed generation ${generation}` });
      }
      return {};
    },
  });
  const reflector = new Reflector({
    kubeConfig, log, path: resourcePath({ ...rpr, namespace: ns }),
    handlers: keyHandlers((key) => controller.enqueue(key)),
  });
  try {
    reflector.start();
    controller.start();
    await reflector.waitForSync();
    for (let i = 0; i < 5; i++) await api.createNamespacedCustomObject({ ...rpr, namespace: ns, body: testRun(ns, `r${i}`) });

    const all = async () => (await api.listNamespacedCustomObject({ ...rpr, namespace: ns })) as { items: TestRun[] };
    await eventually('every run has a finalizer and a status', async () =>
      (await all()).items.length === 5 && (await all()).items.every((r) => r.metadata.finalizers?.includes(finalizer) && r.status?.phase === 'Pending'));
    await eventually('queue idle', () => controller.stats().activeWorkers === 0 && controller.stats().queueLength === 0);
    assert.equal(statusWrites, 5, 'one status write per run');

    // A spec change bumps the generation: exactly one more status write for that run.
    await api.patchNamespacedCustomObject({ ...rpr, namespace: ns, name: 'r0', body: { spec: { keepPod: true } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await eventually('r0 observed generation 2', async () =>
      ((await api.getNamespacedCustomObject({ ...rpr, namespace: ns, name: 'r0' })) as TestRun).status?.observedGeneration === 2);
    await eventually('queue idle', () => controller.stats().activeWorkers === 0 && controller.stats().queueLength === 0);
    assert.equal(statusWrites, 6);

    // Deleting lets the finalizer go and the objects disappear.
    for (let i = 0; i < 5; i++) await api.deleteNamespacedCustomObject({ ...rpr, namespace: ns, name: `r${i}` });
    await eventually('all gone', async () => (await all()).items.length === 0);
    await eventually('store empty', () => reflector.keys().length === 0);

    await events.flush();
    assert.equal(events.stats().created, 6);
    assert.equal(lines.filter((l) => l.level === 'error').length, 0, 'no reconcile error (conflicts, if any, are quiet)');
    assert.equal(controller.stats().reconciles.error, 0);
    assert.ok(reconciles >= 5 * 3, 'several passes per run, every one idempotent');
  } finally {
    await reflector.stop();
    await controller.stop();
    await events.close();
  }
});
