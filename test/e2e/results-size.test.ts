// results.maxBytes end to end: a result set larger than the cap is not retrieved; the run ends
// Failed/ResultsTooLarge saying how large it was, and the pod is deleted. Ends with the leak check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { simPods } from '../runpod-sim/client.ts';
import { runManifest, withWorld } from '../support/operator.ts';

test('results larger than results.maxBytes: Failed/ResultsTooLarge, nothing stored, the pod deleted', () =>
  withWorld('toolarge', async (world) => {
    await world.apply(runManifest('toolarge', {
      job: { command: ['sh', '-c', 'mkdir -p output && head -c 3000 /dev/zero > output/a.bin && head -c 3000 /dev/zero > output/b.bin'] },
      results: { path: 'output', maxBytes: '4Ki' },
    }));
    const run = await world.waitForRun('toolarge', 'Failed', (r) => r.status?.phase === 'Failed', 90_000);
    assert.equal(run.status?.reason, 'ResultsTooLarge', JSON.stringify(run.status));
    assert.match(run.status?.message ?? '', /6000 bytes in 2 files.*spec\.results\.maxBytes \(4Ki = 4096 bytes\)/);
    assert.equal(run.status?.results?.retrievedAt, undefined);
    const deleted = await world.waitForRun('toolarge', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 60_000);
    assert.equal(deleted.status?.pod?.state, 'Deleted');
    assert.ok((await simPods(world.sim.adminUrl)).every((pod) => pod.deletedAt), 'the pod is deleted');
    await world.deleteRun('toolarge');
  }));
