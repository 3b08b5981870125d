// Concurrent writes to a run (a label, an annotation, another writer) all through its retrieval:
// what the retrieval learned must survive them. Every test ends with the leak check (world.stop()).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { group, plural, version } from '../../src/api/runpodrun.ts';
import { testCluster } from '../support/cluster.ts';
import { runManifest, withWorld } from '../support/operator.ts';

const ended = (run: { status?: { phase?: string } }) => run.status?.phase === 'Succeeded' || run.status?.phase === 'Failed';

describe('a 409 on the status write after an act', () => {
  test('a verified retrieval survives a concurrent write: the run succeeds with its results', () =>
    withWorld('conflict', async (world) => {
      const { kubeConfig } = await testCluster();
      const objects = kubeConfig.makeApiClient(CustomObjectsApi);
      // Large enough that the retrieval takes a while: the run is bumped many times during it.
      const script = 'mkdir -p output && head -c 60000000 /dev/urandom > output/big.bin && echo small > output/small.txt';
      await world.apply(runManifest('conflict', { job: { command: ['sh', '-c', script] }, results: { path: 'output' } }));
      await world.waitForRun('conflict', 'Retrieving', (r) => r.status?.phase === 'Retrieving' || ended(r), 120_000);
      // Every bump changes the resourceVersion: the write after the retrieval is computed from an older
      // one. Bounded (about 20 s): a conflict is requeued with backoff, and constant bumping would only
      // slow the run down.
      let bumps = 0;
      let run = await world.run('conflict');
      while (run?.status?.phase === 'Retrieving' && bumps < 200) {
        await objects.patchNamespacedCustomObject(
          { group, version, plural, namespace: world.namespace, name: 'conflict', body: { metadata: { annotations: { 'example.com/bump': String(++bumps) } } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        await sleep(100);
        run = await world.run('conflict');
      }
      const final = await world.waitForRun('conflict', 'ended', ended, 180_000);
      assert.equal(final.status?.phase, 'Succeeded', JSON.stringify(final.status));
      assert.equal(final.status?.results?.files, 2);
      // The retrieval runs in the transfer pool, so the write after the step that takes its outcome meets
      // a 409 only when a bump lands in its milliseconds: test/run/learned-status.test.ts proves that
      // path on its own. Here: the run was written to all through its retrieval and lost nothing.
      assert.ok(bumps >= 5, `the run was bumped through its retrieval (${bumps} bumps)`);
      await world.deleteRun('conflict');
    }));
});
