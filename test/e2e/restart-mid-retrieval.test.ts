// Chaos seed 1807, run chaos-004-keep-pod (keepPod, maxRuntimeSeconds 145, pod clock +600 s, a slow
// link): its job exited 0 and its results were never retrieved. Its leaders had about 26 s between
// the job's end and the pod's deadline, and lost them in two ways, each reproduced here end to end:
//
// 1. A leader that starts after the pod restarted its container (new port mappings) connects first to
//    the SSH port its status recorded, the old one: `#connectIfReady` (src/run/reconciler.ts) reads
//    status.pod.sshPort before decide copies the list's port into the status (decide/following.ts),
//    so every new leader (and every first reconcile after a restart) spends a poll on ECONNREFUSED.
// 2. While the account's pod list is refused (a 401 blip, not confirmed yet), a run whose job has
//    exited does nothing at all (decide.ts guardWithoutCredentials): the retrieval, which needs SSH
//    only, waits for Runpod, and the pod's deadline does not.
//
// Every test ends with the leak check (world.stop()).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import type { RunpodRun } from '../../src/api/runpodrun.ts';
import { simPods, injectFault, type SimPod } from '../runpod-sim/client.ts';
import { runManifest, withWorld, type World } from '../support/operator.ts';
import { eventually } from '../support/eventually.ts';

const ended = (run: RunpodRun) => run.status?.phase === 'Succeeded' || run.status?.phase === 'Failed';
const job = { command: ['sh', '-c', 'mkdir -p output && head -c 1000000 /dev/urandom > output/model.bin && sleep 3'] };

async function simPod(world: World, run: string, predicate: (pod: SimPod) => boolean, what: string, timeoutMs = 60_000): Promise<SimPod> {
  let last: SimPod | undefined;
  try {
    return await eventually(`the pod of ${run}: ${what}`, async () => {
      last = (await simPods(world.sim.adminUrl)).find((p) => p.name === `${run}-1`);
      return last && predicate(last) ? last : undefined;
    }, timeoutMs, 100);
  } catch (error) {
    return assert.fail(`${(error as Error).message}; last: ${JSON.stringify(last && { ...last, processes: undefined, env: undefined })}`);
  }
}

/** A kept run whose pod's clock is 10 min ahead (as chaos-004's was), once its job runs. */
async function keptJobRunning(world: World, run: string): Promise<SimPod> {
  await world.apply(runManifest(run, { job, results: { path: 'output' }, keepPod: true, limits: { maxRuntimeSeconds: 300, readyTimeoutSeconds: 60 } }));
  const pod = await simPod(world, run, () => true, 'created');
  await injectFault(world.sim.adminUrl, { fault: 'clock-skew', podId: pod.id, offsetSeconds: 600 });
  await world.waitForRun(run, 'JobRunning', (r) => r.status?.reason === 'JobRunning' || ended(r), 60_000);
  return pod;
}

describe('a kept pod whose clock is off, mid-retrieval (chaos seed 1807, chaos-004-keep-pod)', { concurrency: true }, () => {
  test('a controller restarted after the pod restarted its container (new ports): the new leader goes to the port Runpod lists, not the one its status recorded', () =>
    withWorld('restart-ports', async (world) => {
      const pod = await keptJobRunning(world, 'kept');
      // About 15 s for the result: the retrieval is under way when the controller goes.
      await injectFault(world.sim.adminUrl, { fault: 'slow-link', podId: pod.id, bytesPerSecond: 64 * 1024 });
      const retrieving = await world.waitForRun('kept', 'Retrieving', (r) => r.status?.phase === 'Retrieving' || ended(r), 60_000);
      assert.equal(retrieving.status?.phase, 'Retrieving', JSON.stringify(retrieving.status));
      const oldPort = retrieving.status?.pod?.sshPort;
      assert.ok(oldPort, 'the status records the pod\'s SSH port');
      await sleep(2000);
      await world.stopController();

      // The container's main process ends; Runpod starts it again with new port mappings.
      await injectFault(world.sim.adminUrl, { fault: 'container-exit', podId: pod.id, status: 'RUNNING' });
      const restarted = await simPod(world, 'kept', (p) => p.restarts >= 1 && p.ready && p.sshPort !== null && p.sshPort !== oldPort, 'restarted with a new SSH port');
      const stale = await world.run('kept');
      assert.equal(stale?.status?.pod?.sshPort, oldPort, 'the status still holds the old port when the new leader starts');

      const mark = world.logLines.length;
      await world.startController();
      const run = await world.waitForRun('kept', 'ended', ended, 120_000);
      const toOldPort = world.logLines.slice(mark).filter((line) => line.includes(`127.0.0.1:${oldPort}`));
      // The kept pod goes with its run before anything is asserted: a failure here is not also a leak.
      await world.deleteRun('kept');
      assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
      assert.equal(run.status?.pod?.sshPort, restarted.sshPort);
      assert.deepEqual(toOldPort.map((line) => (JSON.parse(line) as { err?: { message?: string } }).err?.message ?? line), [],
        `the new leader connected to the old SSH port ${oldPort} although Runpod listed ${restarted.sshPort}`);
    }));

  test('while the account\'s pod list is refused (401, not confirmed yet), a run whose job exited still retrieves its results over SSH', () =>
    withWorld('refused-retrieval', async (world) => {
      await keptJobRunning(world, 'refused');
      // The job ends while no controller runs; the new leader's pod lists are refused for a while (a blip).
      await world.stopController();
      await sleep(5000);
      await injectFault(world.sim.adminUrl, { fault: 'refuse', status: 401, method: 'GET', path: '/v2/pods', count: 1000 });
      await world.startController();
      await world.waitForRun('refused', 'CredentialsRejected', (r) => r.status?.reason === 'CredentialsRejected' || ended(r), 30_000);
      // SSH answers the whole time, the job's exit is on the pod: 25 s is ample for a 1 MB result.
      let last: RunpodRun | undefined;
      const giveUp = Date.now() + 25_000;
      while (Date.now() < giveUp && !last?.status?.results?.retrievedAt) {
        last = await world.run('refused');
        await sleep(250);
      }
      const retrievedWhileRefused = Boolean(last?.status?.results?.retrievedAt);
      // Runpod accepts the key again: the run must end either way before the leak check.
      await fetch(`${world.sim.adminUrl}/faults`, { method: 'DELETE' });
      const run = await world.waitForRun('refused', 'ended', ended, 90_000);
      await world.deleteRun('refused');
      assert.ok(retrievedWhileRefused, `25 s after the list was refused, nothing retrieved: ${last?.status?.phase}/${last?.status?.reason}: ${last?.status?.message}`);
      assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
    }));
});
