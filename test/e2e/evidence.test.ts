// What counts as evidence, end to end against a lagging Runpod: a lost create is not resent while the
// list may not show its pod yet, a pod is not judged gone on a few quick 404s, and a pod judged gone
// that shows up again is deleted, never left to bill.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { countRequests, injectFault, simPods, simStats } from '../runpod-sim/client.ts';
import { hasCondition, runManifest, withWorld } from '../support/operator.ts';

const podReady = (run: Parameters<typeof hasCondition>[0]) => hasCondition(run, 'PodReady');

describe('evidence under list lag', { concurrency: true }, () => {
  test('a create answered 500 whose pod lists only 20 s later is adopted, never sent again', () =>
    withWorld('lostlag', async (world) => {
      await injectFault(world.sim.adminUrl, { fault: 'create-ambiguous', count: 1 });
      await world.apply(runManifest('lostlag'));
      const run = await world.waitForRun('lostlag', 'PodReady', podReady, 120_000);
      assert.equal(run.status?.attempts?.length, 1);
      assert.match(run.status?.attempts?.[0]?.message ?? '', /adopted/);
      assert.ok(run.status?.attempts?.[0]?.lostAt, 'the moment the answer was lost is recorded');
      assert.equal((await simPods(world.sim.adminUrl)).length, 1, 'exactly one pod was ever created');
      assert.equal(countRequests(await simStats(world.sim.adminUrl), 'POST', '/v2/pods'), 1);
      await world.deleteRun('lostlag');
    }, { sim: { listLag: { createdMs: 20_000 } } }));

  // testTimings: a new pod may be missing for 30 s (production: a minute), then three 404s 5 s apart
  // (10 s) must span 10 s: a lag between the two tells quick 404s from spaced ones.
  test('a new pod unlisted and 404 for 35 s (past the 30 s a new pod may be missing here) is not judged gone on quick 404s', () =>
    withWorld('slowlist', async (world) => {
      // Ready in time once listed: the lag is not the pod's fault.
      await world.apply(runManifest('slowlist', { limits: { maxRuntimeSeconds: 600, readyTimeoutSeconds: 180 } }));
      const run = await world.waitForRun('slowlist', 'PodReady', podReady, 150_000);
      assert.notEqual(run.status?.phase, 'Failed', JSON.stringify(run.status));
      assert.equal(run.status?.attempts?.length, 1);
      assert.equal((await simPods(world.sim.adminUrl)).length, 1);
      await world.deleteRun('slowlist');
    }, { sim: { listLag: { createdMs: 35_000, get: true } } }));

  test('a pod judged gone (unlisted and 404 for 55 s) that then shows up is deleted, not abandoned', () =>
    withWorld('comeback', async (world) => {
      await world.apply(runManifest('comeback'));
      const lost = await world.waitForRun('comeback', 'PodLost', (r) => r.status?.reason === 'PodLost', 150_000);
      assert.equal(lost.status?.phase, 'Failed');
      // Once listed, the pod the run judged gone is deleted by the controller (the leak check proves it is gone).
      await world.waitForRun('comeback', 'its pod deleted', (r) => r.status?.pod?.state === 'Deleted' && r.status.pod.deletedAt !== undefined
        && Date.parse(r.status.pod.deletedAt) - Date.parse(r.status.pod.createdAt ?? '') > 55_000, 120_000);
      const pods = await simPods(world.sim.adminUrl);
      assert.equal(pods.length, 1);
      assert.equal(pods[0]?.deletedBy, 'account', 'deleted by the controller once it showed up again');
      await world.deleteRun('comeback');
    }, { sim: { listLag: { createdMs: 55_000, get: true } } }));
});
