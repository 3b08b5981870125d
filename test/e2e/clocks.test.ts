// Pods whose clocks are hours off (the simulator's clock-skew fault, put on each pod as soon as it
// exists), end to end: a pod 2 h behind and one 2 h ahead both end right. A job that succeeds ends
// Succeeded with verified results and its times in the status on the controller's clock; a run that
// outlives maxRuntimeSeconds is deleted by its own watchdog at its deadline, neither early nor by the
// controller's guard after it. The world ends with the leak check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RunpodRun } from '../../src/api/runpodrun.ts';
import { injectFault, simPods, type SimPod } from '../runpod-sim/client.ts';
import { runManifest, withWorld, type World } from '../support/operator.ts';
import { eventually } from '../support/eventually.ts';

const TWO_HOURS = 7200;
const ended = (run: RunpodRun) => run.status?.phase === 'Succeeded' || run.status?.phase === 'Failed';

/** Skews the run's first pod as soon as the simulator has it. */
async function skew(world: World, run: string, offsetSeconds: number): Promise<void> {
  const pod = await eventually(`a pod of ${run} to skew`, async () => (await simPods(world.sim.adminUrl)).find((p) => p.name === `${run}-1`), 60_000, 100);
  return injectFault(world.sim.adminUrl, { fault: 'clock-skew', podId: pod.id, offsetSeconds });
}

const podOf = async (world: World, run: string): Promise<SimPod> => {
  const pod = (await simPods(world.sim.adminUrl)).find((p) => p.name === `${run}-1`);
  assert.ok(pod, `the pod of ${run}`);
  return pod;
};

async function succeeds(world: World, run: string): Promise<void> {
  const done = await world.waitForRun(run, 'ended', ended, 120_000);
  const { status } = done;
  assert.equal(status?.phase, 'Succeeded', `${run}: ${JSON.stringify(status)}`);
  assert.equal(status?.results?.files, 1, `${run}: ${JSON.stringify(status?.results)}`);
  assert.ok(status?.results?.retrievedAt, run);
  // The status's times are the controller's: within the pod's life as the simulator (this machine's clock) saw it.
  const pod = await podOf(world, run);
  const started = Date.parse(status?.job?.startedAt ?? '');
  const finished = Date.parse(status?.job?.finishedAt ?? '');
  const [from, to] = [Date.parse(pod.createdAt) - 2000, Date.parse(pod.deletedAt ?? new Date().toISOString()) + 2000];
  assert.ok(from <= started && started <= finished && finished <= to, `${run}: job ${status?.job?.startedAt} .. ${status?.job?.finishedAt}, pod ${pod.createdAt} .. ${pod.deletedAt}`);
}

async function deletedAtItsDeadline(world: World, run: string): Promise<void> {
  const done = await world.waitForRun(run, 'ended', ended, 150_000);
  assert.equal(done.status?.reason, 'DeadlineExceeded', `${run}: ${JSON.stringify(done.status)}`);
  const pod = await podOf(world, run);
  const deadline = Number(pod.env.RUNPOD_OPERATOR_DEADLINE) * 1000;
  const deletedAt = Date.parse(pod.deletedAt ?? '');
  assert.ok(deletedAt >= deadline, `${run}: deleted ${deadline - deletedAt} ms before its deadline`);
  assert.equal(pod.deletedBy, 'pod', `${run}: deleted ${deletedAt - deadline} ms after its deadline, not by its watchdog (${pod.deletedBy})`);
}

test('pods 2 h behind and 2 h ahead: a job succeeds with verified results; a run past maxRuntimeSeconds is deleted at its deadline', () =>
  withWorld('clocks', async (world) => {
    const job = { job: { command: ['sh', '-c', 'sleep 2 && mkdir -p output && echo done > output/r.txt'] }, results: { path: 'output' } };
    const sleeper = { job: { command: ['sleep', '600'] }, results: { path: 'output' }, limits: { maxRuntimeSeconds: 40, readyTimeoutSeconds: 60 } };
    const runs = { behind: -TWO_HOURS, ahead: TWO_HOURS, 'behind-deadline': -TWO_HOURS, 'ahead-deadline': TWO_HOURS };
    for (const name of Object.keys(runs)) await world.apply(runManifest(name, name.endsWith('deadline') ? sleeper : job));
    await Promise.all(Object.entries(runs).map(([name, offset]) => skew(world, name, offset)));
    await Promise.all([succeeds(world, 'behind'), succeeds(world, 'ahead'), deletedAtItsDeadline(world, 'behind-deadline'), deletedAtItsDeadline(world, 'ahead-deadline')]);
    for (const name of Object.keys(runs)) await world.deleteRun(name);
  }, { watchdogPeriod: '1s' }));
