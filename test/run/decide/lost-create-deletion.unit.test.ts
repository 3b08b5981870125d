// decide() for a run deleted while its create answer is lost: the pod may exist without anyone having
// seen it yet, so the finalizer stays until the rule that gives up a lost create (a list begun a minute
// after lostAt without the pod's name) says there is none, and a pod that shows up meanwhile is
// adopted and deleted (confirmed) first.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunpodRunStatus } from '../../../src/api/status.ts';
import { applyCreateOutcome, decide } from '../../../src/run/decide/decide.ts';
import type { Observation, PodView } from '../../../src/run/decide/model.ts';
import { at, observe, pod, t0 } from '../fixture.ts';

/** The first create was sent at t0 and its answer lost (a timeout). */
function lostCreate(): RunpodRunStatus {
  const obs = observe();
  const first = decide(obs);
  assert.equal(first.action.type, 'createPod');
  applyCreateOutcome(obs, first.status, 'r-1', { kind: 'ambiguous', message: 'no answer within 60s', lostAt: t0 });
  assert.equal(first.status.attempts?.[0]?.outcome, 'Ambiguous');
  return first.status;
}

const deleting = (seconds: number, status: RunpodRunStatus, items: PodView[] = [], over: Partial<Observation> = {}) =>
  decide(observe({ now: at(seconds), run: { ...observe().run, deleting: true }, pods: { listedAt: at(seconds), items }, ...over }, status));

describe('deleting a run whose create answer is lost', () => {
  test('the finalizer stays while no list begun a minute after lostAt has missed the pod', () => {
    const status = lostCreate();
    for (const seconds of [1, 10, 59]) {
      const d = deleting(seconds, status);
      assert.notDeepEqual(d.action, { type: 'removeFinalizer' }, `at ${seconds}s the pod may still show up`);
      assert.match(d.status.message ?? '', /r-1/, 'the status says which pod it waits for');
    }
  });

  test('a pod that shows up late is adopted and deleted, and the finalizer goes only once the delete is confirmed', () => {
    const status = lostCreate();
    const late = pod({ id: 'p7', createdAt: t0.toISOString() });
    const found = deleting(30, status, [late]);
    assert.deepEqual(found.action, { type: 'deletePod', podId: 'p7' });
    assert.equal(found.status.attempts?.[0]?.outcome, 'Created');
    const unconfirmed = deleting(35, found.status, [late], { deletions: { p7: { sentAt: at(31), notFoundLooks: 0 } } });
    assert.notDeepEqual(unconfirmed.action, { type: 'removeFinalizer' });
    const confirmed = deleting(45, unconfirmed.status, [], { deletions: { p7: { sentAt: at(31), notFoundLooks: 3 } } });
    assert.deepEqual(confirmed.action, { type: 'removeFinalizer' });
  });

  test('a list begun a minute after lostAt without the name gives the create up: then the finalizer goes', () => {
    const status = lostCreate();
    const d = deleting(61, status);
    assert.equal(d.status.attempts?.[0]?.outcome, 'Failed');
    assert.deepEqual(d.action, { type: 'removeFinalizer' });
  });

  test('a create recorded but never answered (a crash before the answer) counts as lost from the first look', () => {
    const pending = decide(observe()).status;
    assert.equal(pending.attempts?.[0]?.outcome, 'Pending');
    const first = deleting(5, pending);
    assert.notDeepEqual(first.action, { type: 'removeFinalizer' });
    assert.equal(first.status.attempts?.[0]?.lostAt, at(5).toISOString());
    assert.notDeepEqual(deleting(60, first.status).action, { type: 'removeFinalizer' }, 'a minute after the first look, not after the attempt');
    assert.deepEqual(deleting(66, first.status).action, { type: 'removeFinalizer' });
  });

  test('skip-cleanup still lets go at once', () => {
    const run = { ...observe().run, deleting: true, skipCleanup: true };
    assert.deepEqual(decide(observe({ now: at(1), run, pods: undefined }, lostCreate())).action, { type: 'removeFinalizer' });
  });
});
