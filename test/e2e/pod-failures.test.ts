// Pods that end badly, end to end: a container that goes EXITED / ERROR or restart-loops after the
// pod was ready (or restarts or stops once its job's exit is recorded), and a pod key that may not delete its pod when the deadline passes. Every test ends
// with the leak check (world.stop()).
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { injectFault, simPods } from '../runpod-sim/client.ts';
import { runManifest, withWorld } from '../support/operator.ts';
import { eventually } from '../support/eventually.ts';

const ended = (run: { status?: { phase?: string } }) => run.status?.phase === 'Succeeded' || run.status?.phase === 'Failed';
const sleeper = { job: { command: ['sleep', '600'] }, results: { path: 'output' } };

/** Everything under the results dir that sits in a staging directory (`<uid>.partial-<hex>/…`). */
const staged = (dir: string): string[] => readdirSync(dir, { recursive: true, withFileTypes: true })
  .map((entry) => join(entry.parentPath, entry.name)).filter((path) => /\.partial-[0-9a-f]{8}(\/|$)/.test(path));

describe('pods that end before their run', { concurrency: true }, () => {
  for (const status of ['EXITED', 'ERROR'] as const) {
    test(`a pod that goes ${status} while its job runs is deleted at once: Failed/PodLost with what is known`, () =>
      withWorld(`gone-${status.toLowerCase()}`, async (world) => {
        await world.apply(runManifest('gone', sleeper));
        const running = await world.waitForRun('gone', 'JobRunning', (r) => r.status?.reason === 'JobRunning', 60_000);
        const podId = running.status?.pod?.id ?? '';
        await injectFault(world.sim.adminUrl, { fault: 'container-exit', podId, status });
        const run = await world.waitForRun('gone', 'Failed', ended, 60_000);
        assert.equal(run.status?.reason, 'PodLost', JSON.stringify(run.status));
        assert.match(run.status?.message ?? '', new RegExp(`went ${status} before the run ended; the job started at \\S+ and was running when last seen \\(no exit code recorded\\); no results were retrieved`));
        const done = await world.waitForRun('gone', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 30_000);
        assert.ok(done.status?.pod?.deletedAt);
        const [pod] = await simPods(world.sim.adminUrl);
        assert.equal(pod?.deletedBy, 'account', 'deleted by the controller: a stopped pod still bills its disk');
        await world.deleteRun('gone');
      }));
  }

  test('a container that ends on its own after the job started (restarted by Runpod): the job is lost: Failed/PodLost, the pod deleted', () =>
    withWorld('restart-loop', async (world) => {
      await world.apply(runManifest('loop', sleeper));
      const running = await world.waitForRun('loop', 'JobRunning', (r) => r.status?.reason === 'JobRunning', 60_000);
      await injectFault(world.sim.adminUrl, { fault: 'container-exit', podId: running.status?.pod?.id ?? '' });
      const run = await world.waitForRun('loop', 'Failed', ended, 60_000);
      assert.equal(run.status?.reason, 'PodLost', JSON.stringify(run.status));
      assert.match(run.status?.message ?? '', /restarted its container: the job's exit code is lost; the job started at \S+ and was running when last seen/);
      await world.waitForRun('loop', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 30_000);
      await world.deleteRun('loop');
    }));

  for (const [how, status] of [['restarts its container', 'RUNNING'], ['goes EXITED (it is started again)', 'EXITED']] as const) {
    test(`a pod that ${how} after the job's exit was recorded, mid-retrieval: the results on its volume are retrieved: Succeeded`, () =>
      withWorld(`late-${status.toLowerCase()}`, async (world) => {
        const job = { command: ['sh', '-c', 'sleep 4 && mkdir -p output && head -c 1000000 /dev/urandom > output/model.bin'] };
        await world.apply(runManifest('late', { job, results: { path: 'output' } }));
        const running = await world.waitForRun('late', 'JobRunning', (r) => r.status?.reason === 'JobRunning' || ended(r), 60_000);
        const podId = running.status?.pod?.id ?? '';
        // A slow link (about 15 s for the result), so the pod goes while its results are being fetched.
        await injectFault(world.sim.adminUrl, { fault: 'slow-link', podId, bytesPerSecond: 64 * 1024 });
        await world.waitForRun('late', 'exit recorded', (r) => r.status?.job?.exitCode !== undefined || ended(r), 60_000);
        await injectFault(world.sim.adminUrl, { fault: 'container-exit', podId, status });
        const run = await world.waitForRun('late', 'Succeeded', ended, 120_000);
        assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
        assert.equal(run.status?.job?.exitCode, 0);
        assert.deepEqual([run.status?.results?.files, run.status?.results?.bytes], [1, 1_000_000]);
        assert.equal(run.status?.pod?.startedAgainAt !== undefined, status === 'EXITED', 'only a stopped pod is started again');
        const done = await world.waitForRun('late', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 30_000);
        assert.ok(done.status?.pod?.deletedAt);
        const [pod] = await simPods(world.sim.adminUrl);
        if (status === 'RUNNING') assert.ok((pod?.restarts ?? 0) >= 1, 'the container did restart');
        await world.deleteRun('late');
      }));
  }
});

describe('a pod that breaks (ERROR) mid-retrieval, after the job\'s exit was recorded', { concurrency: true }, () => {
  test('is not started again (its volume is not to be trusted) but deleted, and what the cut-short retrieval staged is removed', () =>
    withWorld('late-error', async (world) => {
      const job = { command: ['sh', '-c', 'sleep 4 && mkdir -p output && head -c 1000000 /dev/urandom > output/model.bin'] };
      await world.apply(runManifest('broken', { job, results: { path: 'output' } }));
      const running = await world.waitForRun('broken', 'JobRunning', (r) => r.status?.reason === 'JobRunning' || ended(r), 60_000);
      const podId = running.status?.pod?.id ?? '';
      await injectFault(world.sim.adminUrl, { fault: 'slow-link', podId, bytesPerSecond: 64 * 1024 });
      await eventually('a partial result staged', () => staged(world.resultsDir).some((path) => path.endsWith('.model.bin.part') && (statSync(path, { throwIfNoEntry: false })?.size ?? 0) > 0), 60_000);
      await injectFault(world.sim.adminUrl, { fault: 'container-exit', podId, status: 'ERROR' });
      const run = await world.waitForRun('broken', 'Failed', ended, 60_000);
      // Lost with its results, within the retrieve grace: no watchdog is blamed.
      assert.equal(run.status?.reason, 'PodLost', JSON.stringify(run.status));
      assert.match(run.status?.message ?? '', /went ERROR before the run ended; the job started at \S+ and exited with code 0 at \S+; no results were retrieved/);
      assert.equal(run.status?.pod?.startedAgainAt, undefined);
      // The staging goes in the reconcile that wrote the end, just after that write.
      await eventually('no staging left once the run has ended', () => staged(world.resultsDir).length === 0, 15_000);
      await world.waitForRun('broken', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 30_000);
      await world.deleteRun('broken');
    }));
});

describe('a pod key that may not delete its pod (API-NOTES §4.1)', { concurrency: true }, () => {
  const margin = 120;
  // The watchdog records "...; stopping the pod" before its stop call and the stop's answer after it:
  // the controller may read either (a loaded machine widens the gap between the two writes).
  for (const [refuse, how] of [[['delete', 'terminate', 'stop'], /its watchdog could not delete it \(deadline: DELETE: HTTP 403; terminate: HTTP 403; (stop: HTTP 403|stopping the pod)\); deleted by the controller/], [['delete', 'terminate'], /reached its deadline \(spec\.limits\.maxRuntimeSeconds\) and went EXITED|its watchdog could not delete it \(deadline: DELETE: HTTP 403; terminate: HTTP 403; stopping the pod\)/]] as const) {
    test(`refused ${refuse.join(', ')}: at the deadline the controller deletes the pod itself, well within deadline + margin`, () =>
      withWorld(`undeletable-${refuse.length}`, async (world) => {
        await world.apply(runManifest('undeletable', { ...sleeper, limits: { maxRuntimeSeconds: 30, readyTimeoutSeconds: 30 } }));
        await world.waitForRun('undeletable', 'JobRunning', (r) => r.status?.reason === 'JobRunning', 60_000);
        const run = await world.waitForRun('undeletable', 'Failed', ended, 90_000);
        assert.equal(run.status?.reason, 'DeadlineExceeded', JSON.stringify(run.status));
        assert.match(run.status?.message ?? '', how);
        const done = await world.waitForRun('undeletable', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 60_000);
        const [pod] = await simPods(world.sim.adminUrl);
        assert.equal(pod?.deletedBy, 'account', 'the pod key could not delete it: the controller did');
        const lived = Date.parse(pod.deletedAt ?? '') - Date.parse(pod.createdAt);
        assert.ok(lived <= (30 + margin) * 1000, `deleted ${lived} ms after its create: past deadline + margin`);
        assert.equal(done.status?.pod?.id, pod.id);
        await world.deleteRun('undeletable');
      }, { deadlineMargin: `${margin}s`, watchdogPeriod: '1s', sim: { podKeys: { refuse: [...refuse] } } }));
  }
});

describe('an image the watchdog cannot call Runpod from', { concurrency: true }, () => {
  test('no curl, python3 or GNU wget: the status says exactly that, no job is started, the controller deletes the pod', () =>
    withWorld('no-http', async (world) => {
      await world.apply(runManifest('nohttp', { ...sleeper, image: 'bare:1' }));
      const run = await world.waitForRun('nohttp', 'Failed', ended, 90_000);
      assert.equal(run.status?.reason, 'BootFailed', JSON.stringify(run.status));
      assert.match(run.status?.message ?? '', /the image lacks curl \(or python3, or GNU wget\): the watchdog cannot call Runpod/);
      assert.equal(run.status?.job?.startedAt, undefined, 'a pod that cannot delete itself gets no job');
      await world.waitForRun('nohttp', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 30_000);
      assert.equal((await simPods(world.sim.adminUrl))[0]?.deletedBy, 'account');
      await world.deleteRun('nohttp');
    }, { sim: { images: { 'bare:1': { withoutCommands: ['curl', 'python3', 'wget'] } } } }));
});
