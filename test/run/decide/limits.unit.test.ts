// decide() for the limits a run's pod lives under, whoever else is watching: the deadline and the cost
// cap are absolute (keepPod too), the controller bounds the watchdog's verdict, the boot grace and the
// retrieve grace itself, a cancel is bounded in time, the cost counts every pod of the run, and a run
// that lost its credentials mid-run keeps its phase and its guards.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunpodRun } from '../../../src/api/runpodrun.ts';
import type { RunpodRunStatus } from '../../../src/api/status.ts';
import { applyCreateOutcome, applyProbeOutcome, applyRetrievalOutcome, decide } from '../../../src/run/decide/decide.ts';
import type { Observation, PodView } from '../../../src/run/decide/model.ts';
import { buildCreatePodRequest } from '../../../src/run/act/pod-request.ts';
import { VERDICT_BOUND_SECONDS, VERDICT_LAST_CALL_SECONDS } from '../../../src/pod/protocol.ts';
import * as fixture from '../fixture.ts';
import { at, spec, ssh, state, t0, unixAt, type ValidSpec } from '../fixture.ts';

/** Pod p1, listed with its SSH endpoint. */
const pod = (over: Partial<PodView> = {}): PodView => fixture.pod({ ssh, ...over });

/** At `seconds`, with a list of that moment showing `items` (pod p1 by default). */
const observe = (seconds: number, status: RunpodRunStatus, over: Partial<Observation> = {}, items: PodView[] = [pod()]): Observation =>
  fixture.observeAt(seconds, status, over, items);

/** Pod p1 created at t0 on type A and ready (PodReady) at `readyAt`. */
const readyStatus = (readyAt = 2, specOver: ValidSpec = spec()): RunpodRunStatus => fixture.readyStatus({ readyAt, spec: specOver, pod: pod() });

/** A run that ended Succeeded with its pod kept (keepPod), results verified at 100 s. */
function keptAfterSuccess(): RunpodRunStatus {
  const kept = spec({ keepPod: true });
  const exited = state({ keep: true }, { status: 'exited', startedAt: unixAt(10), endedAt: unixAt(90), exitCode: 0 });
  const obs = observe(95, readyStatus(2, kept), { spec: kept, podState: exited });
  const retrieving = decide(obs);
  assert.deepEqual(retrieving.action, { type: 'retrieveResults' });
  applyRetrievalOutcome(obs, retrieving.status, { kind: 'verified', files: 1, bytes: 1, location: '/r', verifiedAt: at(100) });
  const end = decide(observe(101, retrieving.status, { spec: kept }));
  assert.equal(end.status.phase, 'Succeeded');
  assert.notEqual(end.status.pod?.state, 'Deleting');
  return end.status;
}

describe('keepPod: the deadline is absolute for every pod (item 3)', () => {
  test('a kept pod of a finished run stays until its deadline + margin, then the controller deletes it', () => {
    const kept = spec({ keepPod: true });
    const ended = keptAfterSuccess();
    const before = decide(observe(600 + 59, ended, { spec: kept }));
    assert.deepEqual(before.action, { type: 'none' }, 'kept within the deadline + margin');
    const after = decide(observe(600 + 61, ended, { spec: kept }));
    assert.deepEqual(after.action, { type: 'deletePod', podId: 'p1' });
    assert.equal(after.status.phase, 'Succeeded', 'the run\'s outcome stays');
    assert.equal(after.status.pod?.state, 'Deleting');
    assert.ok(after.events.some((e) => e.reason === 'DeadlineExceeded' && /kept/.test(e.note)), JSON.stringify(after.events));
  });

  test('a kept pod of a finished run goes when cancel is set', () => {
    const ended = keptAfterSuccess();
    const cancelled = decide(observe(200, ended, { spec: spec({ keepPod: true, cancel: true }) }));
    assert.deepEqual(cancelled.action, { type: 'deletePod', podId: 'p1' });
  });

  test('a kept pod of a finished run goes at the cost cap', () => {
    const capped = spec({ keepPod: true }, { maxRuntimeSeconds: 86_400, maxCostUsd: '0.05' });
    const ended = keptAfterSuccess();
    // 0.50 $/h for 400 s: 0.06 USD.
    const d = decide(observe(400, ended, { spec: capped }));
    assert.deepEqual(d.action, { type: 'deletePod', podId: 'p1' });
  });

  test('a kept pod of a finished run that stops (EXITED or ERROR) is deleted at once: its watchdog went with its container', () => {
    // Chaos seed 32: a kept pod went EXITED; nothing on it guarded its deadline, and the controller was down
    // at deadline + margin: it billed 21 s past its deadline.
    const kept = spec({ keepPod: true });
    const ended = keptAfterSuccess();
    for (const status of ['EXITED', 'ERROR']) {
      const d = decide(observe(200, ended, { spec: kept }, [pod({ status })]));
      assert.deepEqual(d.action, { type: 'deletePod', podId: 'p1' }, status);
      assert.equal(d.status.phase, 'Succeeded', 'the run\'s outcome stays');
      assert.ok(d.events.some((e) => e.reason === 'PodLost' && new RegExp(`kept \\(keepPod\\) and is deleted now: it went ${status}`).test(e.note)), JSON.stringify(d.events));
    }
    assert.deepEqual(decide(observe(200, ended, { spec: kept }, [pod({ status: 'RUNNING' })])).action, { type: 'none' }, 'a running kept pod stays');
  });

  test('a kept pod with a running job is deleted at the cost cap like any other', () => {
    const capped = spec({ keepPod: true }, { maxRuntimeSeconds: 86_400, maxCostUsd: '0.05' });
    const d = decide(observe(400, readyStatus(2, capped), { spec: capped, podState: state({ keep: true }, { status: 'running', startedAt: unixAt(10) }) }));
    assert.equal(d.status.reason, 'CostCapReached');
    assert.equal(d.status.pod?.state, 'Deleting');
  });
});

describe('the controller bounds the watchdog\'s verdict, the boot grace and the retrieve grace itself (item 7)', () => {
  const long = spec({}, { maxRuntimeSeconds: 86_400, bootGraceSeconds: 300, retrieveGraceSeconds: 120 });
  const margin = 60;

  test('no verdict from the watchdog within its probe bound, its last call and the margin of readiness: the pod is deleted, BootFailed', () => {
    const pending = state({ watchdog: { status: 'pending' } });
    // A boot grace longer than the verdict's bound, so that only the verdict's bound applies.
    const patient = spec({}, { maxRuntimeSeconds: 86_400, bootGraceSeconds: 1800 });
    const ready = readyStatus(2, patient);
    // The watchdog probes for 300 s from its start (about readiness) and gives its verdict by its last call's end.
    const bound = VERDICT_BOUND_SECONDS + VERDICT_LAST_CALL_SECONDS;
    assert.equal(bound, 315);
    const waiting = decide(observe(2 + bound + margin - 1, ready, { spec: patient, podState: pending }));
    assert.notEqual(waiting.status.pod?.state, 'Deleting', waiting.status.message);
    assert.match(waiting.status.message!, /waiting for its watchdog to prove that its key can read \(and so delete\) the pod \(up to 300s/);
    const d = decide(observe(2 + bound + margin + 1, ready, { spec: patient, podState: pending }));
    assert.equal(d.status.reason, 'BootFailed');
    assert.match(d.status.message!, /verdict/);
    assert.equal(d.status.pod?.state, 'Deleting');
  });

  test('the create env tells the watchdog its probe bound, the one the controller waits for (plus its last call)', () => {
    const verdict = spec();
    assert.ok(verdict.ok);
    const keys = { clientPrivateKey: 'x', clientPublicKey: 'ssh-ed25519 AAAA', hostPrivateKey: '-----BEGIN OPENSSH PRIVATE KEY-----\nx\n', hostPublicKey: 'ssh-ed25519 AAAA' };
    const run = { metadata: { name: 'r', namespace: 'ns', uid: 'uid-1' } } as RunpodRun;
    const body = buildCreatePodRequest({
      run, spec: verdict.spec, attemptName: 'r-1', attemptNumber: 1, gpuType: 'A', sshKeys: keys,
      clusterId: 'c', scope: 'cluster-wide', runpodApiUrl: 'https://api.runpod.io/v2', watchdogPeriodMs: 10_000, now: t0,
    });
    assert.equal(body.env?.RUNPOD_OPERATOR_VERDICT_BOUND, String(VERDICT_BOUND_SECONDS));
  });

  test('no job started within bootGraceSeconds (+ margin) of readiness, even with SSH down: deleted, BootTimeout', () => {
    const ready = readyStatus(2, long);
    const waiting = decide(observe(2 + 300 + margin - 1, ready, { spec: long }));
    assert.notEqual(waiting.status.pod?.state, 'Deleting');
    const d = decide(observe(2 + 300 + margin + 1, ready, { spec: long }));
    assert.equal(d.status.reason, 'BootTimeout');
    assert.equal(d.status.pod?.state, 'Deleting');
  });

  test('results not retrieved within retrieveGraceSeconds (+ margin) of the job\'s end, retrieval failing or SSH down: deleted, ResultsUnverified', () => {
    const exited = state({}, { status: 'exited', startedAt: unixAt(10), endedAt: unixAt(90), exitCode: 0 });
    const first = decide(observe(95, readyStatus(2, long), { spec: long, podState: exited }));
    assert.equal(first.status.job?.finishedAt, at(90).toISOString());
    const waiting = decide(observe(90 + 120 + margin - 1, first.status, { spec: long, retrievalFailures: 4 }));
    assert.notEqual(waiting.status.pod?.state, 'Deleting');
    const d = decide(observe(90 + 120 + margin + 1, first.status, { spec: long, retrievalFailures: 4 }));
    assert.equal(d.status.reason, 'ResultsUnverified');
    assert.equal(d.status.pod?.state, 'Deleting');
    // A kept pod is exempt from the retrieve grace (bounded by its deadline instead), as on the pod.
    const keptSpec = spec({ keepPod: true }, { maxRuntimeSeconds: 86_400, retrieveGraceSeconds: 120 });
    const kept = decide(observe(90 + 120 + margin + 1, first.status, { spec: keptSpec, retrievalFailures: 4 }));
    assert.notEqual(kept.status.pod?.state, 'Deleting');
  });
});

test('a pod that vanishes after the job\'s end, within the retrieve grace, is PodLost: its watchdog is not blamed', () => {
  // Chaos seed 29 at N=100 on bad10b2: a pod vanished 15 s after its job exited 0 (retrieveGraceSeconds
  // 3600); the run ended ResultsUnverified, "not retrieved within spec.limits.retrieveGraceSeconds and
  // it was deleted by its watchdog".
  const long = spec({}, { maxRuntimeSeconds: 86_400, retrieveGraceSeconds: 120 });
  const exited = state({}, { status: 'exited', startedAt: unixAt(10), endedAt: unixAt(90), exitCode: 0 });
  const first = decide(observe(95, readyStatus(2, long), { spec: long, podState: exited }));
  const gone: Partial<Observation> = { spec: long, deletions: { p1: { notFoundLooks: 3 } } };
  const vanished = decide(observe(105, first.status, gone, []));
  assert.equal(vanished.status.reason, 'PodLost');
  assert.match(vanished.status.message!, /disappeared from Runpod before the run ended; the job started at \S+ and exited with code 0 at \S+; no results were retrieved/);
  const afterGrace = decide(observe(90 + 120 + 1, first.status, gone, []));
  assert.equal(afterGrace.status.reason, 'ResultsUnverified');
  assert.match(afterGrace.status.message!, /not retrieved within spec.limits.retrieveGraceSeconds and it was deleted by its watchdog/);
});

test('a pod that vanished long before its deadline is PodLost at the deadline, even when restarts wiped the looks', () => {
  // Chaos seed 35 at N=100 on fa5eee1: a pod vanished 92 s into a 300 s deadline while the controller
  // was killed every ~20 s; each restart wiped the three gone-looks (kept in memory), so no term judged
  // the pod gone. At the deadline the controller deleted it to be safe and the run ended
  // "DeadlineExceeded: the pod outlived spec.limits.maxRuntimeSeconds", which never happened.
  const running = state({}, { status: 'running', startedAt: unixAt(10) });
  const following = decide(observe(20, readyStatus(), { podState: running }));
  const missing = decide(observe(100, following.status, { podState: running }, []));
  assert.deepEqual(missing.action, { type: 'lookForGonePod', podId: 'p1' });
  assert.equal(missing.status.pod?.missingSince, at(100).toISOString(), 'the first list without the pod is kept in status');
  // Every later term starts with no looks (a restart), until the deadline + margin.
  const later = decide(observe(130, missing.status, {}, []));
  assert.equal(later.status.pod?.missingSince, at(100).toISOString(), 'a later list does not move it');
  const atDeadline = decide(observe(600 + 61, later.status, {}, []));
  assert.equal(atDeadline.status.pod?.state, 'Deleting', 'still deleted, to be safe');
  assert.equal(atDeadline.status.reason, 'PodLost', atDeadline.status.message);
  assert.match(atDeadline.status.message!, /disappeared from Runpod before the run ended; .*not listed since 2026-12-01T12:01:40.000Z; the controller deletes it to be safe/);
  // A list that shows the pod again clears it: a listing flap says nothing at the deadline.
  const back = decide(observe(140, later.status, { podState: running }));
  assert.equal(back.status.pod?.missingSince, undefined);
  const deadline = decide(observe(600 + 61, back.status, {}, []));
  assert.equal(deadline.status.reason, 'DeadlineExceeded');
});

describe('cancel is bounded in time (item 6)', () => {
  const running = state({}, { status: 'running', startedAt: unixAt(10) });
  const cancel = spec({ cancel: true }, { maxRuntimeSeconds: 86_400, retrieveGraceSeconds: 3600 });

  /** The run as decide left it when it first saw the cancel, at 100 s. */
  function cancelSeen(): RunpodRunStatus {
    const base = spec({}, { maxRuntimeSeconds: 86_400, retrieveGraceSeconds: 3600 });
    const status = decide(observe(20, readyStatus(2, base), { spec: base, podState: running })).status;
    const d = decide(observe(100, status, { spec: cancel, podState: running }));
    assert.deepEqual(d.action, { type: 'cancelJob' });
    assert.ok(d.status.conditions?.some((c) => c.type === 'CancelRequested' && c.lastTransitionTime === at(100).toISOString()));
    return d.status;
  }

  test('SSH down after the cancel: the pod stays for 10 minutes to retrieve what exists, then goes', () => {
    const seen = cancelSeen();
    const waiting = decide(observe(100 + 599, seen, { spec: cancel }));
    assert.notEqual(waiting.status.pod?.state, 'Deleting');
    const d = decide(observe(100 + 601, seen, { spec: cancel }));
    assert.deepEqual(d.action, { type: 'deletePod', podId: 'p1' });
    assert.equal(d.status.pod?.state, 'Deleting');
  });

  test('retrieval throwing (never counted as unverified): the same bound; a shorter retrieve grace bounds it sooner', () => {
    const exited = state({}, { status: 'exited', startedAt: unixAt(10), endedAt: unixAt(101), exitCode: 143 });
    const seen = cancelSeen();
    const retrying = decide(observe(100 + 599, seen, { spec: cancel, podState: exited }));
    assert.deepEqual(retrying.action, { type: 'retrieveResults' });
    assert.deepEqual(decide(observe(100 + 601, seen, { spec: cancel, podState: exited })).action, { type: 'deletePod', podId: 'p1' });
    const quick = spec({ cancel: true }, { maxRuntimeSeconds: 86_400, retrieveGraceSeconds: 60 });
    assert.deepEqual(decide(observe(100 + 61, seen, { spec: quick, podState: exited })).action, { type: 'deletePod', podId: 'p1' });
  });
});

describe('maxCostUsd is never silently off, and counts every pod of the run (item 8)', () => {
  const capped = spec({}, { maxRuntimeSeconds: 86_400, maxCostUsd: '0.05' });
  const running = state({}, { status: 'running', startedAt: unixAt(10) });

  test('a rate missing from the create answer is taken from a later list, and the cap applies', () => {
    const obs = observe(0, {}, { spec: capped }, []);
    const first = decide(obs);
    applyCreateOutcome(obs, first.status, 'r-1', { kind: 'created', pod: pod({ costPerHour: undefined }) });
    first.status.pod!.sshHost = ssh.host;
    first.status.pod!.sshPort = ssh.port;
    applyProbeOutcome(observe(2, first.status, { spec: capped }), first.status, { kind: 'ready' });
    // 0.50 $/h for 400 s: 0.06 USD.
    const d = decide(observe(400, first.status, { spec: capped, podState: running }));
    assert.equal(d.status.pod?.costPerHour, '0.50');
    assert.equal(d.status.reason, 'CostCapReached');
    assert.equal(d.status.pod?.state, 'Deleting');
  });

  test('a capped run whose pod rate is unknown (or 0) never starts its job, and says why', () => {
    for (const costPerHour of [undefined, 0]) {
      const obs = observe(0, {}, { spec: capped }, []);
      const first = decide(obs);
      applyCreateOutcome(obs, first.status, 'r-1', { kind: 'created', pod: pod({ costPerHour }) });
      first.status.pod!.sshHost = ssh.host;
      first.status.pod!.sshPort = ssh.port;
      applyProbeOutcome(observe(2, first.status, { spec: capped }), first.status, { kind: 'ready' });
      const d = decide(observe(5, first.status, { spec: capped, podState: state() }, [pod({ costPerHour })]));
      assert.notDeepEqual(d.action, { type: 'startJob', try: 1 }, String(costPerHour));
      assert.match(d.status.message!, /maxCostUsd[^]*price/, String(costPerHour));
      // An uncapped run starts at once.
      assert.deepEqual(decide(observe(5, first.status, { podState: state() }, [pod({ costPerHour })])).action, { type: 'startJob', try: 1 });
    }
  });

  test('the spend of an earlier attempt\'s pod counts in estimatedCostUsd and against the cap', () => {
    // Attempt 1: pod p1 (0.50 $/h) never got ready; deleted at 100 s.
    const obs = observe(0, {}, { spec: capped }, []);
    const first = decide(obs);
    applyCreateOutcome(obs, first.status, 'r-1', { kind: 'created', pod: pod() });
    const notReady = decide(observe(61, first.status, { spec: capped }));
    assert.equal(notReady.status.pod?.state, 'Deleting');
    const gone = decide(observe(100, notReady.status, { spec: capped, deletions: { p1: { sentAt: at(62), notFoundLooks: 3 } } }, []));
    assert.deepEqual(gone.action, { type: 'createPod', attemptName: 'r-2', gpuType: 'B', attemptNumber: 2 });
    assert.equal(gone.status.estimatedCostUsd, '0.01', '0.50 $/h for 100 s');
    // Attempt 2: pod p2 from 200 s; at 500 s: 100 s + 300 s at 0.50 $/h = 0.056 USD, over the cap.
    const p2 = pod({ id: 'p2', name: 'r-2', gpuType: 'B', createdAt: at(200).toISOString() });
    applyCreateOutcome(observe(200, gone.status, { spec: capped }), gone.status, 'r-2', { kind: 'created', pod: p2 });
    gone.status.pod!.sshHost = ssh.host;
    gone.status.pod!.sshPort = ssh.port;
    applyProbeOutcome(observe(202, gone.status, { spec: capped }), gone.status, { kind: 'ready' });
    const d = decide(observe(500, gone.status, { spec: capped, podState: running }, [p2]));
    assert.equal(d.status.estimatedCostUsd, '0.06');
    assert.equal(d.status.reason, 'CostCapReached');
  });

  test('the watchdog of a later attempt gets what is left of the cap; none left: no create', () => {
    const verdict = spec({}, { maxCostUsd: '0.05' });
    assert.ok(verdict.ok);
    const keys = { clientPrivateKey: 'x', clientPublicKey: 'ssh-ed25519 AAAA', hostPrivateKey: '-----BEGIN OPENSSH PRIVATE KEY-----\nx\n', hostPublicKey: 'ssh-ed25519 AAAA' };
    const run = { metadata: { name: 'r', namespace: 'ns', uid: 'uid-1' } } as RunpodRun;
    const body = buildCreatePodRequest({
      run, spec: verdict.spec, attemptName: 'r-2', attemptNumber: 2, gpuType: 'B', sshKeys: keys, spentUsd: '0.02',
      clusterId: 'c', scope: 'cluster-wide', runpodApiUrl: 'https://api.runpod.io/v2', watchdogPeriodMs: 10_000, now: t0,
    });
    assert.equal(body.env?.RUNPOD_OPERATOR_MAX_COST_USD, '0.03');
    const spent: RunpodRunStatus = { ...readyStatus(2, capped), estimatedCostUsd: '0.05' };
    spent.pod!.state = 'Deleted';
    spent.pod!.deletedAt = at(360).toISOString();
    const d = decide(observe(400, spent, { spec: capped }, []));
    assert.notEqual(d.action.type, 'createPod');
    assert.equal(d.status.reason, 'CostCapReached');
  });
});

describe('credentials lost mid-run: the run keeps its phase and its guards (item 9)', () => {
  const missing = { found: false as const, message: 'Secret ns/runpod not found' };
  const running = state({}, { status: 'running', startedAt: unixAt(10) });

  function runningStatus(specOver = spec()): RunpodRunStatus {
    const d = decide(observe(20, readyStatus(2, specOver), { spec: specOver, podState: running }));
    assert.equal(d.status.phase, 'Running');
    return d.status;
  }

  test('within its limits: the phase stays Running, the reason says what is missing, nothing is deleted', () => {
    const d = decide(observe(300, runningStatus(), { credentials: missing, pods: undefined }));
    assert.equal(d.status.phase, 'Running');
    assert.equal(d.status.reason, 'CredentialsMissing');
    assert.match(d.status.message!, /Secret ns\/runpod not found/);
    assert.notEqual(d.status.pod?.state, 'Deleting');
    assert.deepEqual(d.action, { type: 'none' });
  });

  test('past the deadline + margin: DeadlineExceeded and the pod is deleted (with whatever key is left)', () => {
    const d = decide(observe(600 + 61, runningStatus(), { credentials: missing, pods: undefined }));
    assert.equal(d.status.phase, 'Failed');
    assert.equal(d.status.reason, 'DeadlineExceeded');
    assert.deepEqual(d.action, { type: 'deletePod', podId: 'p1' });
  });

  test('at the cost cap: CostCapReached and the pod is deleted', () => {
    const capped = spec({}, { maxRuntimeSeconds: 86_400, maxCostUsd: '0.05' });
    const d = decide(observe(400, runningStatus(capped), { spec: capped, credentials: missing, pods: undefined }));
    assert.equal(d.status.reason, 'CostCapReached');
    assert.deepEqual(d.action, { type: 'deletePod', podId: 'p1' });
  });

  test('a run that never sent a create still waits in Pending', () => {
    const d = decide(observe(5, {}, { credentials: missing, pods: undefined }));
    assert.equal(d.status.phase, 'Pending');
    assert.equal(d.status.reason, 'CredentialsMissing');
  });
});

test('a run that ended while its credentials were missing keeps sending the pod\'s delete (item 9)', () => {
  const missing = { found: false as const, message: 'Secret ns/runpod not found' };
  const running = state({}, { status: 'running', startedAt: unixAt(10) });
  const status = decide(observe(20, readyStatus(2), { podState: running })).status;
  const ended = decide(observe(600 + 61, status, { credentials: missing, pods: undefined }));
  assert.equal(ended.status.phase, 'Failed');
  // The act had no key this time (it threw): the next reconcile sends the delete again.
  assert.deepEqual(decide(observe(600 + 70, ended.status, { credentials: missing, pods: undefined })).action, { type: 'deletePod', podId: 'p1' });
});
