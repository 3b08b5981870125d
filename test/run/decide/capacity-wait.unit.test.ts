// decide() when every GPU type is refused for capacity: the run waits (Pending/WaitingForCapacity),
// walks the types again, in place, with a growing jittered backoff, until spec.limits.queueTimeoutSeconds.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunpodRunStatus } from '../../../src/api/status.ts';
import { applyCreateOutcome, decide } from '../../../src/run/decide/decide.ts';
import type { Observation, PodView } from '../../../src/run/decide/model.ts';
import * as fixture from '../fixture.ts';
import { spec, t0 } from '../fixture.ts';

/** At `seconds`, an empty list of that moment, the spec's limits merged with `limits`. */
const observe = (seconds: number, status: RunpodRunStatus, limits: Record<string, unknown> = {}): Observation =>
  fixture.observeAt(seconds, status, { spec: spec({}, limits) });

const pod = (over: Partial<PodView> = {}): PodView => fixture.pod({ costPerHour: 0.69, ...over });

/** Every create until the status waits is answered "no capacity"; returns the creates sent and the status. */
function refuseUntilWaiting(seconds: number, status: RunpodRunStatus, limits: Record<string, unknown> = {}): { sent: string[]; status: RunpodRunStatus; afterMs: number } {
  const sent: string[] = [];
  for (let i = 0; i < 10; i += 1) {
    const obs = observe(seconds, status, limits);
    const d = decide(obs);
    if (d.action.type !== 'createPod') {
      assert.ok(typeof d.requeue === 'object', JSON.stringify(d.requeue));
      return { sent, status: d.status, afterMs: d.requeue.afterMs };
    }
    sent.push(`${d.action.attemptName}:${d.action.gpuType}`);
    applyCreateOutcome(obs, d.status, d.action.attemptName, { kind: 'capacity', message: 'no instances' });
    status = d.status;
  }
  assert.fail('never waited');
}

describe('no capacity on any type', () => {
  test('waits Pending/WaitingForCapacity instead of failing, then walks the same attempts again after a backoff', () => {
    const first = refuseUntilWaiting(0, {});
    assert.deepEqual(first.sent, ['r-1:A', 'r-2:B']);
    assert.equal(first.status.phase, 'Pending');
    assert.equal(first.status.reason, 'WaitingForCapacity');
    assert.equal(first.status.waitingSince, t0.toISOString());
    assert.match(first.status.message!, /no capacity on A, B.*queueTimeoutSeconds/);
    assert.ok(first.afterMs >= 8000 && first.afterMs <= 12_000, `first backoff about 10 s, got ${first.afterMs}`);
    // Woken early (a list, an event): nothing is sent before the round is due.
    const early = decide(observe(3, first.status));
    assert.deepEqual(early.action, { type: 'none' });
    assert.equal(early.status.reason, 'WaitingForCapacity');
    // The round: the same attempts (names, types) in order, nothing appended.
    const second = refuseUntilWaiting(first.afterMs / 1000, first.status);
    assert.deepEqual(second.sent, ['r-1:A', 'r-2:B']);
    assert.equal(second.status.attempts?.length, 2);
    assert.equal(second.status.waitingSince, t0.toISOString(), 'the wait counts from its start');
  });

  test('the backoff grows to a few minutes (jittered), so a long wait sends few creates', () => {
    let status: RunpodRunStatus = {};
    let seconds = 0;
    let creates = 0;
    const delays: number[] = [];
    while (seconds < 3600) {
      const round = refuseUntilWaiting(seconds, status, { queueTimeoutSeconds: 7200 });
      creates += round.sent.length;
      delays.push(round.afterMs);
      status = round.status;
      seconds += round.afterMs / 1000;
    }
    assert.ok(Math.max(...delays) <= 360_000, `at most about 5 minutes between rounds, got ${Math.max(...delays)}`);
    assert.ok(Math.max(...delays) >= 240_000, 'it does grow to minutes');
    assert.ok(creates <= 60, `an hour of waiting on two types sends few creates, got ${creates}`);
    assert.equal(status.attempts?.length, 2);
  });

  test('a round that finds capacity creates the pod and ends the wait', () => {
    const waiting = refuseUntilWaiting(0, {});
    const obs = observe(11, waiting.status);
    const d = decide(obs);
    assert.deepEqual(d.action, { type: 'createPod', attemptName: 'r-1', gpuType: 'A', attemptNumber: 1 });
    applyCreateOutcome(obs, d.status, 'r-1', { kind: 'created', pod: pod() });
    assert.equal(d.status.reason, 'WaitingForSsh');
    assert.equal(d.status.waitingSince, undefined);
    assert.ok(d.status.attempts?.every((a) => a.retryAfter === undefined), 'no attempt stays queued');
    assert.deepEqual(d.status.attempts?.map((a) => a.outcome), ['Created', 'NoCapacity']);
  });

  test('after spec.limits.queueTimeoutSeconds since the wait began: Failed/NoCapacity', () => {
    const waiting = refuseUntilWaiting(0, {}, { queueTimeoutSeconds: 30 });
    let status = waiting.status;
    let seconds = waiting.afterMs / 1000;
    for (let i = 0; i < 20 && status.phase !== 'Failed'; i += 1) {
      const round = refuseUntilWaiting(seconds, status, { queueTimeoutSeconds: 30 });
      status = round.status;
      seconds += round.afterMs / 1000;
    }
    assert.equal(status.phase, 'Failed');
    assert.equal(status.reason, 'NoCapacity');
    assert.match(status.message!, /queueTimeoutSeconds \(30s\)/);
    assert.ok(seconds <= 31, `ends at the timeout, not a round later (${seconds} s)`);
  });

  test('queueTimeoutSeconds 0 fails at once, as before', () => {
    const d = refuseUntilWaiting(0, {}, { queueTimeoutSeconds: 0 });
    assert.equal(d.status.phase, 'Failed');
    assert.equal(d.status.reason, 'NoCapacity');
  });

  // Chaos seed 5: walks that mixed "no capacity" with a lost create or a pod that never got ready
  // ended Failed/NoCapacity at once, because only an all-"no capacity" walk waited.
  const attempt = (name: string, gpuType: string, outcome: NonNullable<RunpodRunStatus['attempts']>[number]['outcome'], message?: string) =>
    ({ name, gpuType, time: t0.toISOString(), outcome, ...(message ? { message } : {}) });
  const lost = 'the create answer was lost and no pod with its name appeared';

  test('no capacity on A, lost creates on B given up: the run waits and each type is tried again once per round', () => {
    const status: RunpodRunStatus = { phase: 'Provisioning', attempts: [
      attempt('r-1', 'A', 'NoCapacity', 'no instances'), attempt('r-2', 'B', 'Failed', lost), attempt('r-3', 'B', 'Failed', lost), attempt('r-4', 'B', 'Failed', lost),
    ] };
    const waiting = decide(observe(0, status));
    assert.equal(waiting.status.phase, 'Pending', JSON.stringify(waiting.status));
    assert.equal(waiting.status.reason, 'WaitingForCapacity');
    assert.deepEqual(waiting.action, { type: 'none' });
    assert.ok(typeof waiting.requeue === 'object');
    const round = refuseUntilWaiting(waiting.requeue.afterMs / 1000, waiting.status);
    assert.deepEqual(round.sent, ['r-1:A', 'r-4:B'], 'the latest attempt of each type, in place: no create storm, nothing appended');
    assert.equal(round.status.attempts?.length, 4);
    assert.equal(round.status.reason, 'WaitingForCapacity');
  });

  test('a pod on A that never got ready, no capacity on B: the run waits for B; A is not tried again', () => {
    const status: RunpodRunStatus = { phase: 'Provisioning', attempts: [
      attempt('r-1', 'A', 'NotReady', 'SSH did not answer with the pinned host key within 60s'), attempt('r-2', 'B', 'NoCapacity', 'no instances'),
    ] };
    const waiting = decide(observe(0, status));
    assert.equal(waiting.status.reason, 'WaitingForCapacity', JSON.stringify(waiting.status));
    assert.ok(typeof waiting.requeue === 'object');
    const round = refuseUntilWaiting(waiting.requeue.afterMs / 1000, waiting.status);
    assert.deepEqual(round.sent, ['r-2:B']);
    assert.match(round.status.message!, /^no capacity on B;/);
  });

  test('every type had a pod that never got ready: Failed/NoCapacity, nothing to wait for', () => {
    const status: RunpodRunStatus = { phase: 'Provisioning', attempts: [attempt('r-1', 'A', 'NotReady'), attempt('r-2', 'B', 'NotReady')] };
    const d = decide(observe(0, status));
    assert.equal(d.status.phase, 'Failed');
    assert.equal(d.status.reason, 'NoCapacity');
    assert.match(d.status.message!, /no GPU type could be provisioned \(tried: A, B\)/);
  });
});
