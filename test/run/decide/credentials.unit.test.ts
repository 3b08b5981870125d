// decide() for keys that cannot be used: a Secret whose key is malformed (the run's own
// Pending/CredentialsInvalid, never a throw), and Runpod refusing a key (401/403 on the pod list).
// A refusal ends at once only a run that never created a pod; a run that has one keeps its phase and
// its guards until the observer confirms the refusal (several refused lists over a minute).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunpodRunStatus } from '../../../src/api/status.ts';
import { decide } from '../../../src/run/decide/decide.ts';
import type { Observation } from '../../../src/run/decide/model.ts';
import { at, observe as observeAt0, pod, readyStatus, spec, ssh, state, unixAt } from '../fixture.ts';

const invalid = {
  found: false as const, invalid: true as const,
  message: 'Secret ns/runpod key "apiKey" does not hold a usable Runpod API key: it contains a control character (0x01) at byte 9 of 24',
};

const observe = (seconds: number, status: RunpodRunStatus, over: Partial<Observation> = {}): Observation =>
  observeAt0({ now: at(seconds), pods: { listedAt: at(seconds), items: [pod({ ssh })] }, ...over }, status);

function runningStatus(specOver = spec()): RunpodRunStatus {
  const running = state({}, { status: 'running', startedAt: unixAt(10) });
  const d = decide(observe(20, readyStatus({ spec: specOver, readyAt: 2 }), { spec: specOver, podState: running }));
  assert.equal(d.status.phase, 'Running');
  return d.status;
}

describe('a malformed key in the run\'s Secret', () => {
  test('before any create: Pending/CredentialsInvalid with the Secret\'s message, backoff, no Runpod call', () => {
    const d = decide(observeAt0({ credentials: invalid, pods: undefined }));
    assert.equal(d.status.phase, 'Pending');
    assert.equal(d.status.reason, 'CredentialsInvalid');
    assert.equal(d.status.message, invalid.message);
    assert.deepEqual(d.action, { type: 'none' });
    assert.equal(d.requeue, 'backoff');
    assert.deepEqual(d.events.map((e) => e.reason), ['CredentialsInvalid']);
  });

  test('mid-run: the run keeps its phase and its guards, the reason says the key is invalid', () => {
    const within = decide(observe(300, runningStatus(), { credentials: invalid, pods: undefined }));
    assert.equal(within.status.phase, 'Running');
    assert.equal(within.status.reason, 'CredentialsInvalid');
    assert.match(within.status.message!, /control character \(0x01\).*keeps its pod and its limits/);
    assert.deepEqual(within.action, { type: 'none' });
    const past = decide(observe(600 + 61, runningStatus(), { credentials: invalid, pods: undefined }));
    assert.equal(past.status.reason, 'DeadlineExceeded');
    assert.deepEqual(past.action, { type: 'deletePod', podId: 'p1' });
  });

  test('a deleting run with the skip-cleanup annotation lets go; without it, CleanupBlocked names the annotation', () => {
    const run = { ...observeAt0().run, deleting: true, skipCleanup: true };
    assert.deepEqual(decide(observeAt0({ run, credentials: invalid, pods: undefined }, readyStatus())).action, { type: 'removeFinalizer' });
    const blocked = decide(observeAt0({ run: { ...run, skipCleanup: false }, credentials: invalid, pods: undefined }, readyStatus()));
    assert.equal(blocked.status.reason, 'CleanupBlocked');
    assert.match(blocked.status.message!, /control character.*skip-cleanup=true/);
  });
});

describe('Runpod refuses the key on the pod list', () => {
  const unconfirmed = { found: true as const, rejected: true, refused: { lists: 1, since: at(290), confirmed: false } };
  const confirmed = { found: true as const, rejected: true, refused: { lists: 3, since: at(200), confirmed: true } };

  test('a run that never created a pod ends CredentialsRejected at once, confirmed or not', () => {
    for (const credentials of [unconfirmed, confirmed]) {
      const d = decide(observeAt0({ credentials, pods: undefined }));
      assert.equal(d.status.phase, 'Failed');
      assert.equal(d.status.reason, 'CredentialsRejected');
    }
  });

  test('a run with a pod keeps its phase, its pod and its guards while the refusal is unconfirmed', () => {
    const d = decide(observe(300, runningStatus(), { credentials: unconfirmed, pods: undefined }));
    assert.equal(d.status.phase, 'Running', 'a first 401 (a fresh observer after a restart) is evidence, not a verdict');
    assert.equal(d.status.reason, 'CredentialsRejected');
    assert.match(d.status.message!, /keeps its pod and its limits until Runpod accepts the key again or the refusal is confirmed/);
    assert.notEqual(d.status.pod?.state, 'Deleting');
    assert.deepEqual(d.action, { type: 'none' });
    const past = decide(observe(600 + 61, runningStatus(), { credentials: unconfirmed, pods: undefined }));
    assert.equal(past.status.reason, 'DeadlineExceeded', 'the deadline still ends it');
    assert.deepEqual(past.action, { type: 'deletePod', podId: 'p1' });
    const capped = spec({}, { maxRuntimeSeconds: 86_400, maxCostUsd: '0.05' });
    const spent = decide(observe(400, runningStatus(capped), { spec: capped, credentials: unconfirmed, pods: undefined }));
    assert.equal(spent.status.reason, 'CostCapReached', 'so does the cost cap');
  });

  test('the deadline passing while a refusal is unconfirmed: the deadline is the cause the message gives, the key a fact beside it', () => {
    // Chaos seed 1807: a run whose SSH was down for its last 50 s, and whose new leader's first list
    // was refused at its deadline, said it outlived its limit "while the key could not be used".
    const past = decide(observe(600 + 61, runningStatus(), { credentials: { ...unconfirmed, refused: { lists: 1, since: at(655), confirmed: false } }, pods: undefined }));
    assert.equal(past.status.reason, 'DeadlineExceeded');
    assert.match(past.status.message!, /^the pod outlived spec\.limits\.maxRuntimeSeconds \(600s\); deleted by the controller \(when this was checked, the key could not be used: Runpod rejected the API key \(401\)/);
  });

  test('a 403 (a scope the key lacks) on a run with a pod waits the same way: CredentialsInsufficient, phase kept', () => {
    const insufficient = { found: true as const, insufficient: 'the Runpod API key may not list pods: scope pods:read', refused: { lists: 2, since: at(280), confirmed: false } };
    const d = decide(observe(300, runningStatus(), { credentials: insufficient, pods: undefined }));
    assert.equal(d.status.phase, 'Running');
    assert.equal(d.status.reason, 'CredentialsInsufficient');
    assert.match(d.status.message!, /may not list pods.*keeps its pod and its limits/);
    assert.deepEqual(d.action, { type: 'none' });
  });

  test('once the refusal is confirmed, the run fails as before and its pod is deleted', () => {
    const d = decide(observe(300, runningStatus(), { credentials: confirmed, pods: undefined }));
    assert.equal(d.status.phase, 'Failed');
    assert.equal(d.status.reason, 'CredentialsRejected');
    assert.equal(d.status.pod?.state, 'Deleting');
  });

  test('an observer that had accepted lists and now meets refusals: a run with a pod waits as with a fresh one (said, guards kept; confirmed, it fails); one that never created a pod goes on', () => {
    // The last accepted list is kept, but it no longer ages: following it would say nothing of the key
    // and never end a run whose key Runpod revoked.
    const before = { pods: { listedAt: at(280), items: [pod({ ssh })] } };
    const d = decide(observe(300, runningStatus(), { credentials: unconfirmed, ...before }));
    assert.equal(d.status.phase, 'Running');
    assert.equal(d.status.reason, 'CredentialsRejected');
    assert.match(d.status.message!, /\(1 refused pod list since .*keeps its pod and its limits until Runpod accepts the key again or the refusal is confirmed/);
    assert.notEqual(d.status.pod?.state, 'Deleting');
    const failed = decide(observe(300, runningStatus(), { credentials: confirmed, ...before }));
    assert.equal(failed.status.phase, 'Failed');
    assert.equal(failed.status.reason, 'CredentialsRejected');
    assert.equal(failed.status.pod?.state, 'Deleting');
    // A create would be refused by the same key, and says so itself; a blip must not end a run that has not started.
    const pending = decide(observeAt0({ credentials: unconfirmed, ...before }));
    assert.notEqual(pending.status.phase, 'Failed');
    // A 5xx after the refusal says nothing of the key (rejected is cleared, the row of refusals stands): the run goes on.
    const afterA5xx = decide(observe(300, runningStatus(), { credentials: { found: true, refused: unconfirmed.refused }, ...before }));
    assert.equal(afterA5xx.status.reason, 'JobRunning');
  });

  test('Runpod accepting the key again: the run goes on where it was', () => {
    const waiting = decide(observe(300, runningStatus(), { credentials: unconfirmed, pods: undefined })).status;
    const running = state({}, { status: 'running', startedAt: unixAt(10) });
    const back = decide(observe(310, waiting, { podState: running }));
    assert.equal(back.status.phase, 'Running');
    assert.equal(back.status.reason, 'JobRunning');
  });
});

describe('what SSH alone still does while the key cannot be used (chaos seed 1807, chaos-004-keep-pod)', () => {
  const unconfirmed = { found: true as const, rejected: true, refused: { lists: 1, since: at(290), confirmed: false } };
  const missing = { found: false as const, message: 'Secret ns/runpod not found' };
  const exited = state({}, { status: 'exited', startedAt: unixAt(10), endedAt: unixAt(250), exitCode: 0 });

  test('a job that exited is recorded and its results retrieved; the key stays the reason, what SSH does follows it', () => {
    for (const credentials of [unconfirmed, missing]) {
      const d = decide(observe(300, runningStatus(), { credentials, podState: exited, pods: undefined }));
      assert.deepEqual(d.action, { type: 'retrieveResults' }, JSON.stringify(credentials));
      assert.equal(d.status.phase, 'Retrieving');
      assert.equal(d.status.reason, credentials.found ? 'CredentialsRejected' : 'CredentialsMissing');
      assert.match(d.status.message!, /keeps its pod and its limits .*; meanwhile over SSH: the job exited with code 0; retrieving/);
      assert.equal(d.status.job?.exitCode, 0);
      assert.equal(d.status.job?.finishedAt, at(250).toISOString());
    }
  });

  test('results the store holds verified while the key is refused are adopted, not retrieved again over them (chaos seed 11, chaos-002-keep-pod)', () => {
    // An earlier retrieval committed them; its status write was lost. A second retrieval from the same pod
    // would share its staging directory and, committing, replace them.
    const kept = spec({ keepPod: true });
    const ended = { ...runningStatus(kept), job: { startedAt: at(10).toISOString(), finishedAt: at(250).toISOString(), exitCode: 0 } };
    const stored = { files: 2, bytes: 20, location: '/r/ns/r/uid-1', verifiedAt: at(280) };
    for (const credentials of [unconfirmed, { found: false as const, message: 'Secret ns/runpod not found' }]) {
      const d = decide(observe(300, ended, { spec: kept, credentials, podState: { ...exited, keep: true }, pods: undefined, storedResults: stored }));
      assert.notEqual(d.action.type, 'retrieveResults', JSON.stringify(credentials));
      assert.equal(d.status.results?.retrievedAt, at(280).toISOString());
      assert.equal(d.status.phase, 'Succeeded');
    }
  });

  test('a kept pod whose results are in: the run succeeds without Runpod; a pod to delete waits for the key', () => {
    const kept = spec({ keepPod: true });
    const retrieved = { ...runningStatus(kept), job: { startedAt: at(10).toISOString(), finishedAt: at(250).toISOString(), exitCode: 0 }, results: { files: 1, bytes: 10, location: '/r', retrievedAt: at(280).toISOString() } };
    const d = decide(observe(300, retrieved, { spec: kept, credentials: unconfirmed, podState: { ...exited, keep: true }, pods: undefined }));
    assert.equal(d.status.phase, 'Succeeded');
    assert.match(d.status.message!, /kept while spec\.keepPod is set/);
  });

  test('nothing is started, nor judged from a state not read: the run idles as before', () => {
    const ready = readyStatus({ readyAt: 2 });
    const none = decide(observe(20, ready, { credentials: unconfirmed, podState: state(), pods: undefined }));
    assert.deepEqual(none.action, { type: 'none' }, 'no job is started while Runpod refuses the key');
    assert.equal(none.status.reason, 'CredentialsRejected');
    const unread = decide(observe(300, runningStatus(), { credentials: unconfirmed, pods: undefined }));
    assert.deepEqual(unread.action, { type: 'none' });
    assert.equal(unread.status.phase, 'Running');
  });

  test('the retrieve grace still ends a pod whose results are not in', () => {
    const long = spec({}, { maxRuntimeSeconds: 86_400, retrieveGraceSeconds: 60 });
    const recorded = decide(observe(260, runningStatus(long), { spec: long, credentials: unconfirmed, podState: exited, pods: undefined })).status;
    assert.equal(recorded.job?.finishedAt, at(250).toISOString());
    const within = decide(observe(250 + 60 + 59, recorded, { spec: long, credentials: unconfirmed, podState: exited, pods: undefined }));
    assert.deepEqual(within.action, { type: 'retrieveResults' });
    const past = decide(observe(250 + 60 + 61, recorded, { spec: long, credentials: unconfirmed, podState: exited, pods: undefined }));
    assert.equal(past.status.reason, 'ResultsUnverified');
    assert.equal(past.status.pod?.state, 'Deleting');
  });
});
