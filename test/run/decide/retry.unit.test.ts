// spec.retry and limits.activeDeadlineSeconds, state by state: which failures earn another try, that the
// next pod is created only after the last is confirmed deleted and its backoff has passed, that each try
// walks the GPU types from the first, and that the run's own limits never retry.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunpodRunStatus } from '../../../src/api/status.ts';
import type { Observation } from '../../../src/run/decide/model.ts';
import { parseSpec } from '../../../src/api/runpodrun.ts';
import { applyCreateOutcome, applyProbeOutcome, decide } from '../../../src/run/decide/decide.ts';
import { at, observe, pod, readyStatus, spec, state, type ValidSpec } from '../fixture.ts';

const retrying = (retry: Record<string, unknown>, limits: Record<string, unknown> = {}): ValidSpec => spec({ retry }, limits);

/** At `seconds`, the list of that moment showing `items`, with `spec`. */
const obsAt = (seconds: number, status: RunpodRunStatus, s: ValidSpec, items = [pod()], over: Partial<Observation> = {}): Observation =>
  observe({ now: at(seconds), pods: { listedAt: at(seconds), items }, spec: s, ...over }, status);

/** A ready pod whose job started at 10 s, under `s`. */
function running(s: ValidSpec): RunpodRunStatus {
  const status = readyStatus({ spec: s });
  status.job = { startedAt: at(10).toISOString() };
  return status;
}

/** The current pod deleted and confirmed gone at `seconds` (three 404s, a newer list without it). */
function confirmDeleted(status: RunpodRunStatus, s: ValidSpec, seconds: number): ReturnType<typeof decide> {
  const id = status.pod?.id ?? '';
  return decide(obsAt(seconds, status, s, [], { deletions: { [id]: { sentAt: at(seconds - 10), notFoundLooks: 3, lookedAt: at(seconds - 1) } } }));
}

describe('spec.retry', () => {
  test('limit 0 (the default): a pod that went EXITED mid-job fails the run PodLost, as without retries', () => {
    const s = spec();
    assert.deepEqual(s.spec.retry, { limit: 0 });
    const d = decide(obsAt(100, running(s), s, [pod({ status: 'EXITED' })]));
    assert.equal(d.status.phase, 'Failed');
    assert.equal(d.status.reason, 'PodLost');
    assert.equal(d.status.retries, 0);
  });

  test('a platform failure: Pending/Retrying, the pod deleted first, then after the backoff a new pod from the first GPU type', () => {
    const s = retrying({ limit: 2 });
    const d = decide(obsAt(100, running(s), s, [pod({ status: 'EXITED' })]));
    assert.equal(d.status.phase, 'Pending');
    assert.equal(d.status.reason, 'Retrying');
    assert.match(d.status.message!, /^try 1 ended PodLost: pod r-1 went EXITED .*; try 2 of 3 creates a pod once this one is deleted, not before 2026-12-01T12:01:50.000Z$/);
    assert.equal(d.status.retries, 1);
    assert.equal(d.status.pod?.state, 'Deleting');
    assert.equal(d.status.job, undefined, 'the last try\'s job is not the next one\'s');
    assert.ok(d.status.conditions?.some((c) => c.type === 'PodReady' && c.status === 'False'));
    assert.equal(d.status.attempts?.[0]?.reason, 'PodLost');
    assert.deepEqual(d.events.map((e) => [e.type, e.reason]), [['Normal', 'Retrying']]);
    // Deleted before anything else.
    assert.deepEqual(decide(obsAt(101, d.status, s, [pod({ status: 'EXITED' })])).action, { type: 'deletePod', podId: 'p1' });
    // Confirmed gone at 105: the backoff (10 s from 100) still holds the create.
    const gone = confirmDeleted(d.status, s, 105);
    assert.equal(gone.status.pod?.state, 'Deleted');
    assert.deepEqual(gone.action, { type: 'none' });
    assert.deepEqual(gone.requeue, { afterMs: 5000 });
    assert.equal(gone.status.reason, 'Retrying');
    // At 110: try 2 walks from type A again, a new attempt (pod name r-2) marked with its try.
    const next = decide(obsAt(110, gone.status, s, []));
    assert.deepEqual(next.action, { type: 'createPod', attemptName: 'r-2', gpuType: 'A', attemptNumber: 2 });
    assert.deepEqual(next.status.attempts?.at(-1), { name: 'r-2', gpuType: 'A', time: at(110).toISOString(), outcome: 'Pending', try: 2 });
    assert.equal(next.status.phase, 'Provisioning');
  });

  test('the next try\'s job is told its try (RUNPOD_OPERATOR_ATTEMPT), and a failure past the limit ends the run with that try\'s reason', () => {
    const s = retrying({ limit: 1 });
    const first = decide(obsAt(100, running(s), s, [pod({ status: 'ERROR' })]));
    let status = confirmDeleted(first.status, s, 105).status;
    const create = decide(obsAt(110, status, s, []));
    status = create.status;
    applyCreateOutcome(obsAt(110, status, s, []), status, 'r-2', { kind: 'created', pod: pod({ id: 'p2', name: 'r-2', createdAt: at(110).toISOString() }) });
    status.pod!.sshHost = '127.0.0.1';
    status.pod!.sshPort = 2222;
    applyProbeOutcome(obsAt(115, status, s, [pod({ id: 'p2', name: 'r-2' })]), status, { kind: 'ready' });
    const start = decide(obsAt(116, status, s, [pod({ id: 'p2', name: 'r-2' })], { podState: state() }));
    assert.deepEqual(start.action, { type: 'startJob', try: 2 });
    status.job = { startedAt: at(117).toISOString() };
    const again = decide(obsAt(200, status, s, [pod({ id: 'p2', name: 'r-2', status: 'EXITED' })]));
    assert.equal(again.status.phase, 'Failed');
    assert.equal(again.status.reason, 'PodLost');
    assert.equal(again.status.retries, 1);
  });

  test('a job failure is retried only for an exit code in onExitCodes, without retrieving its results', () => {
    const s = retrying({ limit: 1, onExitCodes: [3] });
    const exited = (code: number) => state({}, { status: 'exited', startedAt: 10, endedAt: 20, exitCode: code });
    const three = decide(obsAt(30, running(s), s, [pod()], { podState: exited(3) }));
    assert.equal(three.status.reason, 'Retrying');
    assert.equal(three.status.attempts?.[0]?.reason, 'JobFailed');
    assert.match(three.status.message!, /exited with code 3 \(spec\.retry\.onExitCodes\); its results are not retrieved/);
    assert.equal(three.status.pod?.state, 'Deleting');
    // Another code is the job's verdict: retrieved, then JobFailed, as without retries.
    const four = decide(obsAt(30, running(s), s, [pod()], { podState: exited(4) }));
    assert.deepEqual(four.action, { type: 'retrieveResults' });
    assert.equal(four.status.retries, 0);
    // Past the limit, code 3 too.
    const spent = { ...running(s), retries: 1 };
    assert.deepEqual(decide(obsAt(30, spent, s, [pod()], { podState: exited(3) })).action, { type: 'retrieveResults' });
  });

  test('no GPU type got ready on the walk: a platform failure, retried from the first type', () => {
    const s = retrying({ limit: 1 });
    const status: RunpodRunStatus = {
      phase: 'Provisioning',
      attempts: [
        { name: 'r-1', gpuType: 'A', time: at(0).toISOString(), outcome: 'NotReady', podId: 'p1' },
        { name: 'r-2', gpuType: 'B', time: at(70).toISOString(), outcome: 'NotReady', podId: 'p2' },
      ],
      pod: { id: 'p2', name: 'r-2', state: 'Deleted', deletedAt: at(140).toISOString(), createdAt: at(70).toISOString() },
    };
    const d = decide(obsAt(150, status, s, []));
    assert.equal(d.status.reason, 'Retrying');
    assert.match(d.status.message!, /^try 1 ended NoCapacity: no GPU type could be provisioned \(tried: A, B\)/);
    assert.deepEqual(decide(obsAt(160, d.status, s, [])).action, { type: 'createPod', attemptName: 'r-3', gpuType: 'A', attemptNumber: 3 });
    // Without retries: NoCapacity at once.
    assert.equal(decide(obsAt(150, status, spec(), [])).status.reason, 'NoCapacity');
  });

  test('the run\'s own limits and a cancel never retry', () => {
    const s = retrying({ limit: 3 });
    const late = decide(obsAt(700, running(s), s));
    assert.equal(late.status.reason, 'DeadlineExceeded');
    assert.equal(late.status.phase, 'Failed');
    const cancelled = retrying({ limit: 3 });
    cancelled.spec.cancel = true;
    const lost = decide(obsAt(100, running(s), cancelled, [pod({ status: 'EXITED' })]));
    assert.equal(lost.status.phase, 'Failed');
    assert.equal(lost.status.retries, 0);
  });
});

describe('limits.activeDeadlineSeconds', () => {
  test('bounds each pod\'s deadline from the first create, and ends the run then, between tries too', () => {
    const s = retrying({ limit: 3 }, { activeDeadlineSeconds: 300 });
    const status = readyStatus({ spec: s });
    assert.equal(status.pod?.deadline, at(300).toISOString(), 'maxRuntimeSeconds (600) is later than the run\'s end');
    // With a pod: at the end plus the controller's margin, the pod is deleted.
    assert.equal(decide(obsAt(359, status, s)).status.phase, 'Running');
    const over = decide(obsAt(361, status, s));
    assert.equal(over.status.reason, 'DeadlineExceeded');
    assert.match(over.status.message!, /outlived spec\.limits\.activeDeadlineSeconds \(300s after its first create, 2026-12-01T12:00:00.000Z\); deleted by the controller/);
    assert.equal(over.status.pod?.state, 'Deleting');
    // Between tries (nothing billing): at the end itself, and no other pod.
    const retried = decide(obsAt(100, running(s), s, [pod({ status: 'EXITED' })]));
    const gone = confirmDeleted(retried.status, s, 105).status;
    gone.nextTryAfter = at(400).toISOString();
    const ended = decide(obsAt(301, gone, s, []));
    assert.equal(ended.status.reason, 'DeadlineExceeded');
    assert.deepEqual(ended.action, { type: 'none' });
  });

  test('the spec bounds retry.limit (0..10) and onExitCodes (1..255), naming the field', () => {
    const base = { credentials: { secretName: 'runpod' }, image: 'img', gpu: { types: ['A'] }, job: { command: ['true'] }, limits: { maxRuntimeSeconds: 600 } };
    for (const [retry, field] of [[{ limit: 11 }, 'spec.retry.limit'], [{ limit: 1, onExitCodes: [0] }, 'spec.retry.onExitCodes'], [{ limit: 1, onExitCodes: [256] }, 'spec.retry.onExitCodes']] as const) {
      const verdict = parseSpec({ ...base, retry });
      assert.ok(!verdict.ok, JSON.stringify(retry));
      assert.match(verdict.message, new RegExp(field.replace(/\./g, '\\.')), JSON.stringify(retry));
    }
    assert.ok(parseSpec({ ...base, retry: { limit: 10, onExitCodes: [1, 255] }, limits: { maxRuntimeSeconds: 600, activeDeadlineSeconds: 3600 } }).ok);
  });
});
