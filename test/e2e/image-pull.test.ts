// An image the registry refuses, end to end: the pod is created and bills but never starts, and only
// Runpod's system lines say why. The controller reads them while the pod has no SSH port and ends the
// run ImagePullFailed with the pod deleted, well before readyTimeoutSeconds and without renting the
// next GPU type (which would pull the same image). Ends with the leak check (world.stop()).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { simPods } from '../runpod-sim/client.ts';
import { runManifest, withWorld } from '../support/operator.ts';

const ended = (run: { status?: { phase?: string } }) => run.status?.phase === 'Succeeded' || run.status?.phase === 'Failed';

describe('an image the registry refuses', { concurrency: true }, () => {
  test('a private image without its credential: Failed/ImagePullFailed quoting the registry, one pod, deleted', () =>
    withWorld('image-pull', async (world) => {
      await world.apply(runManifest('private', { image: 'acme/private-trainer:1', limits: { maxRuntimeSeconds: 600, readyTimeoutSeconds: 600 } }));
      const run = await world.waitForRun('private', 'Failed', ended, 120_000);
      assert.equal(run.status?.reason, 'ImagePullFailed', JSON.stringify(run.status));
      assert.match(run.status?.message ?? '', /^Runpod could not pull acme\/private-trainer:1 on pod private-1: ".*pull access denied for acme\/private-trainer.*unauthorized"; the pod is deleted$/);
      assert.equal(run.status?.attempts?.length, 1, 'no other GPU type was tried');
      const done = await world.waitForRun('private', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 30_000);
      const [pod] = await simPods(world.sim.adminUrl);
      const lived = Date.parse(pod?.deletedAt ?? '') - Date.parse(pod?.createdAt ?? '');
      assert.ok(lived < 150_000, `the pod lived ${lived} ms: its refusal was read, not readyTimeoutSeconds (600 s) waited out`);
      assert.equal(done.status?.pod?.id, pod?.id);
      await world.deleteRun('private');
    }, { sim: { images: { 'acme/private-trainer:1': { registryAuth: { username: 'acme-ci', password: 'registry-password-123' } } } } }));
});
