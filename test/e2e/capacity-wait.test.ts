// No capacity on any GPU type, end to end: the run waits (Pending/WaitingForCapacity) with a backoff,
// without a create storm and without renting anything, until stock frees or queueTimeoutSeconds ends it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { countRequests, injectFault, simPods, simStats } from '../runpod-sim/client.ts';
import { kubectl } from '../support/kubectl.ts';
import { hasCondition, runManifest, withWorld } from '../support/operator.ts';

const podReady = (run: Parameters<typeof hasCondition>[0]) => hasCondition(run, 'PodReady');

describe('waiting for capacity', { concurrency: true }, () => {
  test('every type refused twice over: the run waits Pending/WaitingForCapacity, then a later round gets a pod', () =>
    withWorld('capwait', async (world) => {
      // Two types, two rounds of refusals: stock comes back for the third round.
      await injectFault(world.sim.adminUrl, { fault: 'no-capacity', count: 4 });
      await world.apply(runManifest('capwait'));
      const waiting = await world.waitForRun('capwait', 'WaitingForCapacity', (r) => r.status?.reason === 'WaitingForCapacity');
      assert.equal(waiting.status?.phase, 'Pending');
      assert.ok(waiting.status?.waitingSince);
      assert.equal((await simPods(world.sim.adminUrl)).length, 0, 'nothing rented while waiting');
      const run = await world.waitForRun('capwait', 'PodReady', podReady, 120_000);
      assert.deepEqual(run.status?.attempts?.map((a) => [a.name, a.outcome]), [['capwait-1', 'Created'], ['capwait-2', 'NoCapacity']], 'the same attempts again, none appended');
      assert.equal(run.status?.waitingSince, undefined);
      assert.equal(countRequests(await simStats(world.sim.adminUrl), 'POST', '/v2/pods'), 5, 'two refused rounds, then one create');
      assert.equal((await simPods(world.sim.adminUrl)).length, 1);
      assert.match((await kubectl(['get', 'events.events.k8s.io', '-n', world.namespace, '-o', 'json'])).stdout, /WaitingForCapacity/);
      await world.deleteRun('capwait');
    }));

  test('gpu.auto with the only fitting GPU taken by another run: the second run waits, and gets it once the first is deleted', () =>
    withWorld('capauto', async (world) => {
      // One A100 in EU-RO-1 (the default stock): the only type with 80 GB under $2/h there.
      const spec = { gpu: { auto: { minVramGb: 80, maxPricePerHour: '2' } }, dataCenterIds: ['EU-RO-1'] };
      await world.apply(runManifest('first', spec));
      await world.waitForRun('first', 'PodReady', podReady, 90_000);
      await world.apply(runManifest('second', spec));
      const waiting = await world.waitForRun('second', 'WaitingForCapacity', (r) => r.status?.reason === 'WaitingForCapacity');
      assert.equal(waiting.status?.phase, 'Pending');
      assert.deepEqual(waiting.status?.attempts?.map((a) => [a.gpuType, a.outcome]), [['NVIDIA A100 80GB PCIe', 'NoCapacity']], 'tried although the catalog showed it out of stock');
      await world.deleteRun('first');
      const run = await world.waitForRun('second', 'PodReady', podReady, 120_000);
      assert.equal(run.status?.pod?.gpuType, 'NVIDIA A100 80GB PCIe');
      assert.equal(run.status?.attempts?.length, 1);
      assert.ok(countRequests(await simStats(world.sim.adminUrl), 'POST', '/v2/pods') <= 8, 'a few rounds of one create');
      await world.deleteRun('second');
    }));

  test('no capacity for longer than queueTimeoutSeconds: Failed/NoCapacity after it, with few creates and no pod', () =>
    withWorld('captimeout', async (world) => {
      await injectFault(world.sim.adminUrl, { fault: 'no-capacity', count: 1000 });
      await world.apply(runManifest('captimeout', { limits: { maxRuntimeSeconds: 600, readyTimeoutSeconds: 60, queueTimeoutSeconds: 30 } }));
      await world.waitForRun('captimeout', 'WaitingForCapacity', (r) => r.status?.reason === 'WaitingForCapacity');
      const run = await world.waitForRun('captimeout', 'Failed', (r) => r.status?.phase === 'Failed', 90_000);
      assert.equal(run.status?.reason, 'NoCapacity');
      assert.match(run.status?.message ?? '', /queueTimeoutSeconds \(30s\)/);
      const waited = Date.parse(run.status?.completionTime ?? '') - Date.parse(run.status?.startTime ?? '');
      assert.ok(waited >= 30_000, `ended after the queue timeout, not before (${waited} ms)`);
      const creates = countRequests(await simStats(world.sim.adminUrl), 'POST', '/v2/pods');
      // Rounds at about 0, 10, 20 s (then the timeout): 2 types each.
      assert.ok(creates >= 4 && creates <= 10, `a few rounds of two creates, not a storm: ${creates}`);
      assert.equal((await simPods(world.sim.adminUrl)).length, 0);
      await world.deleteRun('captimeout');
    }));
});
