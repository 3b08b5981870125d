// The tests' waits wake at a run's change (run-changes.ts), not at their next look: only a watch's
// event moves the generation the test waits for, so a watch that never delivers fails it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { group, plural, version } from '../../src/api/runpodrun.ts';
import { createTestNamespace, testCluster } from './cluster.ts';
import { runManifest } from './operator.ts';
import { RunChanges } from './run-changes.ts';

test('a wait wakes at the next change of a run in its namespace, and a change it missed wakes the next one at once', { timeout: 30_000 }, async () => {
  const { kubeConfig } = await testCluster();
  const namespace = await createTestNamespace('changes');
  const objects = kubeConfig.makeApiClient(CustomObjectsApi);
  const changes = new RunChanges(kubeConfig, `/apis/${group}/${version}/namespaces/${namespace}/${plural}`);
  try {
    // The watch opens at the first wait (and again at a later one if it was refused); an empty namespace sends nothing.
    const before = changes.generation;
    await changes.after(before, 2000);
    assert.equal(changes.generation, before);
    await objects.createNamespacedCustomObject({ group, version, namespace, plural, body: runManifest('one') });
    // Only a watch's event moves the generation: without one, this loop runs into the test's timeout.
    while (changes.generation === before) await changes.after(before, 5000);
    // A change between a look and the wait after it is not lost: that wait returns at once.
    assert.equal(await Promise.race([changes.after(before, 600_000).then(() => 'at once'), new Promise((resolve) => setTimeout(() => resolve('waited'), 1000))]), 'at once');
  } finally {
    await changes.stop();
  }
});
