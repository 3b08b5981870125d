// decide() while a run's results wait for a transfer slot or move: the controller renews the retrieve
// grace on the pod (the renewRetrieveGrace step: retrieve.until, honoured by the watchdog) and records
// the renewal in status.pod.retrieveGraceUntil, which its own guard honours too, after a restart as
// well. The grace then bounds a controller that is gone (the renewals stop), not one that is busy.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunpodRunStatus } from '../../../src/api/status.ts';
import { decide } from '../../../src/run/decide/decide.ts';
import type { Observation, PodView } from '../../../src/run/decide/model.ts';
import * as fixture from '../fixture.ts';
import { at, spec, ssh, state, unixAt, type ValidSpec } from '../fixture.ts';

const pod = (over: Partial<PodView> = {}): PodView => fixture.pod({ ssh, ...over });
const observe = (seconds: number, status: RunpodRunStatus, over: Partial<Observation> = {}): Observation =>
  fixture.observeAt(seconds, status, over, [pod()]);

/** A 60 s retrieve grace; the job ran from 10 s to 100 s. Poll interval 5 s: a renewal reaches 120 s ahead. */
const short: ValidSpec = spec({}, { maxRuntimeSeconds: 86_400, retrieveGraceSeconds: 60 });
const exited = state({}, { status: 'exited', startedAt: unixAt(10), endedAt: unixAt(100), exitCode: 0 });
const queued = { state: 'queued', ahead: 3 } as const;
const margin = 60;

/** The run as the reconcile that saw its job's end left it: Retrieving, the transfer just queued. */
function retrieving(specOver: ValidSpec = short): RunpodRunStatus {
  const d = decide(observe(101, fixture.readyStatus({ readyAt: 2, spec: specOver, pod: pod() }), { spec: specOver, podState: exited }));
  assert.equal(d.status.phase, 'Retrieving');
  return d.status;
}

describe('the retrieve grace while a transfer waits or moves', () => {
  test('queued near the grace\'s end: the grace is renewed on the pod and recorded, and the status says what it waits for', () => {
    const d = decide(observe(130, retrieving(), { spec: short, podState: exited, transfer: queued }));
    assert.deepEqual(d.action, { type: 'renewRetrieveGrace', seconds: 120 });
    assert.equal(d.status.pod?.retrieveGraceUntil, at(250).toISOString());
    assert.equal(d.status.phase, 'Retrieving');
    assert.match(d.status.message!, /waiting for a transfer slot \(3 ahead, --max-concurrent-transfers\); the pod's retrieve grace is extended to .* while it waits/);
  });

  test('moving too; not again before half of the renewal is spent', () => {
    const renewed = decide(observe(130, retrieving(), { spec: short, podState: exited, transfer: { state: 'running' } }));
    assert.deepEqual(renewed.action, { type: 'renewRetrieveGrace', seconds: 120 });
    const soon = decide(observe(180, renewed.status, { spec: short, podState: exited, transfer: { state: 'running' } }));
    assert.deepEqual(soon.action, { type: 'retrieveResults' });
    const later = decide(observe(195, soon.status, { spec: short, podState: exited, transfer: { state: 'running' } }));
    assert.deepEqual(later.action, { type: 'renewRetrieveGrace', seconds: 120 });
    assert.equal(later.status.pod?.retrieveGraceUntil, at(315).toISOString());
  });

  test('the controller\'s own guard honours the renewal: past the grace + margin nothing is deleted, past the renewal + margin it is', () => {
    const renewed = decide(observe(130, retrieving(), { spec: short, podState: exited, transfer: queued })).status;
    // A restarted controller: its pool is empty, the status still holds the renewal.
    const afterGrace = decide(observe(100 + 60 + margin + 1, renewed, { spec: short, podState: exited }));
    assert.notEqual(afterGrace.status.pod?.state, 'Deleting', afterGrace.status.message);
    assert.equal(afterGrace.status.phase, 'Retrieving');
    // Nobody renewed since (the controller gone, or its transfer ended unverified): within one renewal.
    const afterRenewal = decide(observe(250 + margin + 1, renewed, { spec: short, podState: exited }));
    assert.equal(afterRenewal.status.reason, 'ResultsUnverified');
    assert.equal(afterRenewal.status.pod?.state, 'Deleting');
  });

  test('no renewal with plenty of grace left, for a kept pod, or once the transfer settled', () => {
    const long = spec({}, { maxRuntimeSeconds: 86_400, retrieveGraceSeconds: 3600 });
    assert.deepEqual(decide(observe(130, retrieving(long), { spec: long, podState: exited, transfer: queued })).action, { type: 'retrieveResults' });
    const kept = spec({ keepPod: true }, { maxRuntimeSeconds: 86_400, retrieveGraceSeconds: 60 });
    const keptState = state({ keep: true }, exited.job);
    const keptRun = decide(observe(101, fixture.readyStatus({ readyAt: 2, spec: kept, pod: pod() }), { spec: kept, podState: keptState })).status;
    assert.deepEqual(decide(observe(130, keptRun, { spec: kept, podState: keptState, transfer: queued })).action, { type: 'retrieveResults' });
    const settled = decide(observe(130, retrieving(), { spec: short, podState: exited, retrieval: { kind: 'unverified', message: 'the store did not answer' } }));
    assert.deepEqual(settled.action, { type: 'none' }, 'the next try waits its backoff');
    assert.equal(settled.status.pod?.retrieveGraceUntil, undefined);
  });

  test('never past the pod\'s deadline', () => {
    const tight = spec({}, { maxRuntimeSeconds: 180, retrieveGraceSeconds: 60 });
    const d = decide(observe(130, retrieving(tight), { spec: tight, podState: exited, transfer: queued }));
    assert.deepEqual(d.action, { type: 'renewRetrieveGrace', seconds: 50 });
    assert.equal(d.status.pod?.retrieveGraceUntil, at(180).toISOString());
  });
});
