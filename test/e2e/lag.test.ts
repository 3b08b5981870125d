// Runpod's pod list lagging behind creates and deletes (API-NOTES S6), and the documented
// PROVISIONING -> STARTING -> RUNNING statuses, end to end against the simulator. Every test ends with
// the leak check.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { countRequests, injectFault, simPods, simStats } from '../runpod-sim/client.ts';
import { kubectl } from '../support/kubectl.ts';
import { hasCondition, runManifest, withWorld } from '../support/operator.ts';

const podReady = (run: Parameters<typeof hasCondition>[0]) => hasCondition(run, 'PodReady');

describe('list lag', { concurrency: true }, () => {
  test('a pod missing from lists (and GETs) for 20 s after its create is neither lost nor created again; its delete is sent once', () =>
    withWorld('lag', async (world) => {
      await world.apply(runManifest('lag'));
      const run = await world.waitForRun('lag', 'PodReady', podReady, 120_000);
      assert.equal(run.status?.phase, 'Running');
      assert.equal(run.status?.attempts?.length, 1);
      assert.equal(run.status?.attempts?.[0]?.outcome, 'Created');
      assert.ok(run.status?.pod?.listedAt, 'the status records when a list first showed the pod');
      assert.ok(Date.parse(run.status.pod.listedAt) - Date.parse(run.status.pod.createdAt ?? '') >= 20_000, 'listed only after the lag');
      assert.equal((await simPods(world.sim.adminUrl)).length, 1, 'exactly one pod');
      await world.deleteRun('lag');
      const stats = await simStats(world.sim.adminUrl);
      assert.equal(countRequests(stats, 'DELETE', '/v2/pods/{id}'), 1, 'the still-listed pod was not deleted again');
      assert.equal(countRequests(stats, 'POST', '/v2/pods'), 1);
    }, { sim: { listLag: { createdMs: 20_000, deletedMs: 12_000, get: true } } }));

  // Chaos seed 12: with GET lagging by a second, the watchdog's first look at its own pod met a 404
  // and the pod was given up as one that cannot delete itself (BootFailed), six runs out of thirty.
  test('a pod its own GET does not show yet (a lag of seconds) still boots: its watchdog looks again', () =>
    withWorld('lag-get', async (world) => {
      await world.apply(runManifest('lag-get', { job: { command: ['true'] } }));
      const run = await world.waitForRun('lag-get', 'ended', (r) => r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed', 120_000);
      assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
      assert.equal((await simPods(world.sim.adminUrl)).length, 1, 'exactly one pod');
      await world.deleteRun('lag-get');
    }, { sim: { listLag: { createdMs: 3000, deletedMs: 3000, get: true } } }));
});

describe('deleting a run while its create answer is lost', { concurrency: true }, () => {
  test('the finalizer stays until the pod the lost create made shows up late, is adopted, and its delete is confirmed', () =>
    withWorld('lost-delete', async (world) => {
      // The pod is created but the answer is a 500, and lists show the new pod only 20 s later.
      await injectFault(world.sim.adminUrl, { fault: 'create-ambiguous', status: 500 });
      await world.apply(runManifest('lost-delete'));
      await world.waitForRun('lost-delete', 'its create answer lost', (r) => r.status?.attempts?.[0]?.outcome === 'Ambiguous');
      const deleting = await kubectl(['delete', 'rpr', 'lost-delete', '-n', world.namespace, '--wait=false']);
      assert.equal(deleting.status, 0, deleting.stderr);
      const [pod] = await simPods(world.sim.adminUrl);
      assert.ok(pod, 'the lost create made a pod');
      const waiting = await world.waitForRun('lost-delete', 'waiting for its lost pod', (r) => /waiting to learn whether pod lost-delete-1 exists/.test(r.status?.message ?? ''));
      assert.ok(waiting.metadata.finalizers?.length, 'the finalizer stays while the pod may exist');
      const gone = await kubectl(['wait', '--for=delete', 'rpr/lost-delete', '-n', world.namespace, '--timeout=90s']);
      assert.equal(gone.status, 0, gone.stderr);
      const after = (await simPods(world.sim.adminUrl)).find((p) => p.id === pod.id);
      assert.ok(after?.deletedAt, 'the pod was deleted before the finalizer went');
      assert.equal(after.deletedBy, 'account');
    }, { sim: { listLag: { createdMs: 20_000, deletedMs: 0, get: false } } }));
});

describe('status flow', { concurrency: true }, () => {
  test('PROVISIONING -> STARTING -> RUNNING: a booting pod is neither lost nor ready', () =>
    withWorld('flow', async (world) => {
      await world.apply(runManifest('flow'));
      const run = await world.waitForRun('flow', 'PodReady', podReady, 120_000);
      assert.equal(run.status?.pod?.state, 'RUNNING');
      assert.equal(run.status?.attempts?.length, 1);
      assert.equal((await simPods(world.sim.adminUrl)).length, 1);
      await world.deleteRun('flow');
    }, { sim: { pods: { statusFlow: 'provisioning-starting-running' } } }));
});
