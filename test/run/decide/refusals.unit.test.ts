// decide() for what Runpod refuses or shows late: 429s and the spend limit (a wait, never a reason to
// fail or to try the next type), a key lacking a scope (terminal), and a pod list lagging behind
// creates and deletes (never a second create, never a pod judged gone on the list's word).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunpodRunStatus } from '../../../src/api/status.ts';
import { applyCreateOutcome, decide, type CreateOutcome } from '../../../src/run/decide/decide.ts';
import type { Observation, PodView } from '../../../src/run/decide/model.ts';
import * as fixture from '../fixture.ts';
import { at, t0 } from '../fixture.ts';

/** The spec's limits (queueTimeoutSeconds 600) merged with `limits`. */
const observe = (over: Partial<Observation> = {}, status: RunpodRunStatus = {}, limits: Record<string, unknown> = {}): Observation =>
  fixture.observe({ spec: fixture.spec({}, { queueTimeoutSeconds: 600, ...limits }), ...over }, status);

const pod = (over: Partial<PodView> = {}): PodView => fixture.pod({ costPerHour: 0.69, ...over });

/** decide's first create, answered with `outcome` (at `seconds`). */
function refused(outcome: CreateOutcome, seconds = 0, limits: Record<string, unknown> = {}, over: Partial<Observation> = {}): RunpodRunStatus {
  const obs = observe({ now: at(seconds), pods: { listedAt: at(seconds), items: [] }, ...over }, {}, limits);
  const first = decide(obs);
  assert.equal(first.action.type, 'createPod');
  applyCreateOutcome(obs, first.status, 'r-1', outcome);
  return first.status;
}

describe('refused creates: 429', () => {
  test('a long Retry-After makes the run wait Pending/RateLimited, then the same attempt is sent again; never NoCapacity', () => {
    let status = refused({ kind: 'rate-limited', message: 'Runpod createPod failed (rate-limited, HTTP 429)', retryAfterMs: 3_600_000 });
    assert.equal(status.phase, 'Pending');
    assert.equal(status.reason, 'RateLimited');
    assert.equal(status.attempts?.[0]?.outcome, 'RateLimited');
    assert.equal(status.attempts?.[0]?.retryAfter, at(3600).toISOString());
    const waiting = decide(observe({ now: at(1800), pods: { listedAt: at(1800), items: [] } }, status));
    assert.deepEqual(waiting.action, { type: 'none' });
    assert.deepEqual(waiting.requeue, { afterMs: 1_800_000 }, 'wakes when Retry-After is over, not sooner');
    assert.equal(waiting.status.reason, 'RateLimited');
    // Many 429s in a row: each is waited out on the same attempt and the same type.
    for (let round = 1; round <= 5; round += 1) {
      const now = 3600 * round + 1;
      const again = decide(observe({ now: at(now), pods: { listedAt: at(now), items: [] } }, status));
      assert.deepEqual(again.action, { type: 'createPod', attemptName: 'r-1', gpuType: 'A', attemptNumber: 1 });
      assert.equal(again.status.attempts?.length, 1);
      assert.equal(again.status.attempts?.[0]?.outcome, 'Pending', 'recorded as pending before it is sent');
      applyCreateOutcome(observe({ now: at(now) }), again.status, 'r-1', { kind: 'rate-limited', message: '429', retryAfterMs: 3_600_000 });
      status = again.status;
      assert.notEqual(status.phase, 'Failed');
    }
  });
});

describe('refused creates: the account spend limit', () => {
  const facts = { limitUsdPerHour: 80, podUsdPerHour: 0.69 };
  const spendLimit: CreateOutcome = { kind: 'spend-limit', message: 'Runpod createPod failed (spend-limit, HTTP 400): Spend limit reached', spend: facts };

  test('waits Pending/SpendLimitReached with the headroom in the message; no other GPU type is tried', () => {
    const status = refused(spendLimit, 0, {}, { spend: { runningUsdPerHour: 79.31 } });
    assert.equal(status.phase, 'Pending');
    assert.equal(status.reason, 'SpendLimitReached');
    assert.equal(status.attempts?.[0]?.outcome, 'SpendLimited');
    assert.equal(status.waitingSince, t0.toISOString());
    assert.match(status.message!, /account spend limit \$80\.00\/h, running pods \$79\.31\/h, this pod needs \$0\.69\/h/);
    const full = { spend: { ...facts, runningUsdPerHour: 79.5 } };
    for (const seconds of [5, 30, 300]) {
      const d = decide(observe({ now: at(seconds), pods: { listedAt: at(seconds), items: [] }, ...full }, status));
      assert.deepEqual(d.action, { type: 'none' }, `no create at ${seconds}s while there is no room`);
      assert.equal(d.status.reason, 'SpendLimitReached');
      assert.match(d.status.message!, /account spend limit \$80\.00\/h, running pods \$79\.50\/h, this pod needs \$0\.69\/h; waiting for running pods to free room until 2026-12-01T12:10:00\.000Z/);
      assert.equal(d.status.attempts?.length, 1);
    }
  });

  test('once running pods free room the same attempt (same type) is sent again, after a spacing', () => {
    const status = refused(spendLimit, 0, {}, { spend: { runningUsdPerHour: 79.5 } });
    const room = { spend: { ...facts, runningUsdPerHour: 40 } };
    assert.deepEqual(decide(observe({ now: at(2), pods: { listedAt: at(2), items: [] }, ...room }, status)).action, { type: 'none' }, 'spaced, even with room');
    const d = decide(observe({ now: at(11), pods: { listedAt: at(11), items: [] }, ...room }, status));
    assert.deepEqual(d.action, { type: 'createPod', attemptName: 'r-1', gpuType: 'A', attemptNumber: 1 });
    applyCreateOutcome(observe({ now: at(11) }), d.status, 'r-1', { kind: 'created', pod: pod({ createdAt: at(11).toISOString() }) });
    assert.equal(d.status.waitingSince, undefined, 'the wait is over');
    assert.equal(d.status.attempts?.[0]?.outcome, 'Created');
    assert.equal(d.status.reason, 'WaitingForSsh');
  });

  test('unknown figures (no account:read): retried blind, once a minute', () => {
    const status = refused({ kind: 'spend-limit', message: 'spend limit', spend: {} });
    assert.match(status.message!, /account spend limit not known yet/);
    assert.deepEqual(decide(observe({ now: at(30), pods: { listedAt: at(30), items: [] } }, status)).action, { type: 'none' });
    assert.equal(decide(observe({ now: at(61), pods: { listedAt: at(61), items: [] } }, status)).action.type, 'createPod');
  });

  test('past spec.limits.queueTimeoutSeconds the run ends Failed/NoCapacity, naming the limit', () => {
    const status = refused(spendLimit, 0, {}, { spend: { runningUsdPerHour: 79.5 } });
    const d = decide(observe({ now: at(601), pods: { listedAt: at(601), items: [] }, spend: { ...facts, runningUsdPerHour: 79.5 } }, status));
    assert.equal(d.status.phase, 'Failed');
    assert.equal(d.status.reason, 'NoCapacity');
    assert.match(d.status.message!, /spend limit left no room .*queueTimeoutSeconds \(600s\): account spend limit \$80\.00\/h/);
    assert.equal(d.events.at(-1)?.type, 'Warning');
  });

  test('queueTimeoutSeconds 0: the first refusal ends the run', () => {
    const status = refused(spendLimit, 0, { queueTimeoutSeconds: 0 });
    assert.equal(decide(observe({ now: at(1) }, status, { queueTimeoutSeconds: 0 })).status.reason, 'NoCapacity');
  });
});

describe('a key lacking a scope', () => {
  test('a 403 about the key on create ends CredentialsInsufficient, naming the call; nothing else is tried', () => {
    const message = 'the Runpod API key may not create pods: Runpod createPod failed (forbidden, HTTP 403): API key is missing the required scope pods:write for POST /v2/pods';
    const status = refused({ kind: 'failed', reason: 'CredentialsInsufficient', message });
    assert.equal(status.phase, 'Failed');
    assert.equal(status.reason, 'CredentialsInsufficient');
    assert.match(status.message!, /pods:write/);
    assert.deepEqual(decide(observe({ now: at(5) }, status)).action, { type: 'none' });
  });

  test('a pod list refused with 403 ends CredentialsInsufficient before anything is created', () => {
    const d = decide(observe({ pods: undefined, credentials: { found: true, insufficient: 'the Runpod API key may not list pods: scope pods:read' } }));
    assert.equal(d.status.reason, 'CredentialsInsufficient');
    assert.match(d.status.message!, /may not list pods/);
    assert.deepEqual(d.action, { type: 'none' });
  });
});

describe('list lag', () => {
  function created(): RunpodRunStatus {
    const obs = observe();
    const first = decide(obs);
    applyCreateOutcome(obs, first.status, 'r-1', { kind: 'created', pod: pod() });
    return first.status;
  }

  test('a new pod missing from the list (and 404 on GET) is neither gone nor created again for a minute; then the evidence decides', () => {
    const status = created();
    for (const seconds of [5, 20, 59]) {
      const d = decide(observe({ now: at(seconds), pods: { listedAt: at(seconds), items: [] }, deletions: { p1: { notFoundLooks: 5 } } }, status));
      assert.deepEqual(d.action, { type: 'none' }, `at ${seconds}s`);
      assert.notEqual(d.status.phase, 'Failed');
      assert.match(d.status.message!, /waiting for Runpod to list it/);
    }
    // Past the tolerance: a pod that never showed up (or went meanwhile) is looked for like any other.
    assert.deepEqual(decide(observe({ now: at(61), pods: { listedAt: at(61), items: [] } }, status)).action, { type: 'lookForGonePod', podId: 'p1' });
    const gone = decide(observe({ now: at(61), pods: { listedAt: at(61), items: [] }, deletions: { p1: { notFoundLooks: 3 } } }, status));
    assert.equal(gone.status.reason, 'PodLost');
  });

  test('once listed, a pod that is missing again is judged by the usual evidence', () => {
    const listedOnce = decide(observe({ now: at(5), pods: { listedAt: at(5), items: [pod()] } }, created())).status;
    assert.equal(listedOnce.pod?.listedAt, at(5).toISOString());
    const d = decide(observe({ now: at(30), pods: { listedAt: at(30), items: [] }, deletions: { p1: { notFoundLooks: 0 } } }, listedOnce));
    assert.deepEqual(d.action, { type: 'lookForGonePod', podId: 'p1' });
  });

  test('a deleted pod still listed is looked at, not deleted again; past the tolerance the 404s win', () => {
    let status = created();
    status = decide(observe({ now: at(61), pods: { listedAt: at(61), items: [pod()] } }, status)).status;
    const deletions = { p1: { sentAt: at(62), notFoundLooks: 3 } };
    for (const seconds of [70, 200]) {
      const d = decide(observe({ now: at(seconds), pods: { listedAt: at(seconds), items: [pod()] }, deletions }, status));
      assert.deepEqual(d.action, { type: 'lookForGonePod', podId: 'p1' });
      assert.deepEqual(d.requeue, { afterMs: 5000 }, 'at the poll interval, not in a storm');
    }
    const after = decide(observe({ now: at(62 + 301), pods: { listedAt: at(62 + 301), items: [pod()] }, deletions }, status));
    assert.equal(after.status.pod?.state, 'Deleted');
    assert.notEqual(after.action.type, 'deletePod');
  });
});
