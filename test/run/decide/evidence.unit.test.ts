// decide() on evidence: when a pod may be judged gone on its own (spaced 404s in a row and a newer
// list), what a list that shows it again does, and when a lost create may be sent again.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunpodRunStatus } from '../../../src/api/status.ts';
import { applyCreateOutcome, decide } from '../../../src/run/decide/decide.ts';
import type { Deletion, Observation } from '../../../src/run/decide/model.ts';
import { RunEvidence } from '../../../src/run/memory/evidence.ts';
import * as fixture from '../fixture.ts';
import { at, pod } from '../fixture.ts';

/** The runs here may live an hour (maxRuntimeSeconds 3600): the evidence, not the deadline, decides. */
const spec = (extra: Record<string, unknown> = {}): fixture.ValidSpec => fixture.spec(extra, { maxRuntimeSeconds: 3600 });

const observe = (over: Partial<Observation> = {}, status: RunpodRunStatus = {}): Observation => fixture.observe({ spec: spec(), ...over }, status);

/** A ready pod p1, listed once at 5 s. */
const readyStatus = (): RunpodRunStatus => fixture.readyStatus({ spec: spec(), listedAt: 5 });

/** Observation at `seconds` with an empty list taken at `listedAt` (default: now) and the given evidence. */
const unlisted = (status: RunpodRunStatus, seconds: number, deletion: Deletion | undefined, listedAt = seconds) =>
  observe({ now: at(seconds), pods: { listedAt: at(listedAt), items: [] }, deletions: deletion ? { p1: deletion } : {} }, status);

describe('a pod judged gone on its own', () => {
  test('the looks are at least 10 s apart, whatever wakes the reconcile sooner', () => {
    const status = readyStatus();
    const first = decide(unlisted(status, 100, undefined));
    assert.deepEqual(first.action, { type: 'lookForGonePod', podId: 'p1' });
    assert.deepEqual(first.requeue, { afterMs: 10_000 });
    // A reconcile 2 s after the first 404 (a watch event, a list): no look yet.
    const early = decide(unlisted(status, 102, { notFoundLooks: 1, lookedAt: at(100) }));
    assert.deepEqual(early.action, { type: 'none' });
    assert.deepEqual(early.requeue, { afterMs: 8000 });
    assert.notEqual(early.status.phase, 'Failed');
    assert.deepEqual(decide(unlisted(status, 110, { notFoundLooks: 1, lookedAt: at(100) })).action, { type: 'lookForGonePod', podId: 'p1' });
    // Three 404s in 20 s are not yet enough without a list taken after the last one.
    const noNewerList = decide(unlisted(status, 121, { notFoundLooks: 3, lookedAt: at(120) }, 119));
    assert.deepEqual(noNewerList.action, { type: 'none' });
    assert.notEqual(noNewerList.status.phase, 'Failed');
    const gone = decide(unlisted(status, 125, { notFoundLooks: 3, lookedAt: at(120) }, 124));
    assert.equal(gone.status.reason, 'PodLost');
    assert.equal(gone.status.pod?.state, 'Deleted');
  });

  test('a list that shows the pod after a 404 wipes that 404: only looks in a row count', () => {
    const evidence = new RunEvidence();
    evidence.recordDeletion('p1', { notFoundLooks: 2, lookedAt: at(110) });
    evidence.recordDeletion('p2', { notFoundLooks: 2, lookedAt: at(110) });
    // A list that started before the last look proves nothing about it.
    evidence.noteList(new Set(['p1']), at(109), [], 5000);
    assert.equal(evidence.deletions().p1?.notFoundLooks, 2);
    evidence.noteList(new Set(['p1']), at(111), [], 5000);
    assert.equal(evidence.deletions().p1, undefined, 'listed after its last 404: the evidence restarts');
    assert.equal(evidence.deletions().p2?.notFoundLooks, 2, 'a pod the list does not show keeps its looks');
    // A pod we deleted stays listed for a while (the list lags behind deletes): its evidence stays.
    const deleted = new RunEvidence();
    deleted.recordDeletion('p3', { sentAt: at(100), notFoundLooks: 3, lookedAt: at(110) });
    deleted.noteList(new Set(['p3']), at(111), ['p3'], 5000);
    assert.equal(deleted.deletions().p3?.notFoundLooks, 3);
  });

  test('a list begun after a delete that does not show the pod is a look, spaced; one that shows it again starts them over', () => {
    const evidence = new RunEvidence();
    evidence.recordDeletion('p1', { sentAt: at(100), notFoundLooks: 0 });
    evidence.recordDeletion('p2', { sentAt: at(100), notFoundLooks: 0 });
    const looks = (podId: string) => evidence.deletions()[podId]?.listLooks ?? 0;
    evidence.noteList(new Set(), at(99), ['p1'], 5000);
    assert.equal(looks('p1'), 0, 'a list begun before the delete proves nothing');
    evidence.noteList(new Set(), at(101), ['p1'], 5000);
    evidence.noteList(new Set(), at(103), ['p1'], 5000);
    assert.equal(looks('p1'), 1, 'lists closer than the spacing are one look');
    evidence.noteList(new Set(), at(106), ['p1'], 5000);
    assert.equal(looks('p1'), 2);
    assert.equal(looks('p2'), 0, 'only the pods whose deletion is pending are counted');
    evidence.noteList(new Set(['p1']), at(112), ['p1'], 5000);
    assert.equal(looks('p1'), 0, 'listed again: the list looks start over');
    assert.equal(evidence.deletions().p1?.sentAt?.getTime(), at(100).getTime(), 'the delete stays sent');
    evidence.recordDeletion('p3', { notFoundLooks: 0 });
    evidence.noteList(new Set(), at(120), ['p3'], 5000);
    assert.equal(looks('p3'), 0, 'no delete sent by this process: absence is not a look');
  });

  test('a deleted pod is confirmed by lists without it, with no GET; one still listed is looked at', () => {
    const status = readyStatus();
    status.pod = { ...status.pod!, state: 'Deleting' };
    status.phase = 'Failed';
    status.reason = 'Cancelled';
    const at130 = (deletion: Deletion, items = [] as ReturnType<typeof pod>[]) =>
      decide(observe({ now: at(130), pods: { listedAt: at(129), items }, deletions: { p1: deletion } }, status));
    assert.deepEqual(at130({ sentAt: at(100), notFoundLooks: 0, listLooks: 2, listLookAt: at(120) }).action, { type: 'none' }, 'waits for the next list');
    assert.equal(at130({ sentAt: at(100), notFoundLooks: 0, listLooks: 3, listLookAt: at(129) }).status.pod?.state, 'Deleted');
    assert.deepEqual(at130({ sentAt: at(100), notFoundLooks: 0 }, [pod()]).action, { type: 'lookForGonePod', podId: 'p1' },
      'listed after its delete: a GET tells a lagging list from a delete that did not take');
  });

  test('a pod judged gone that a later list shows again is deleted, never abandoned', () => {
    const status = readyStatus();
    const lost = decide(unlisted(status, 125, { notFoundLooks: 3, lookedAt: at(120) }, 124)).status;
    assert.equal(lost.phase, 'Failed');
    assert.equal(lost.pod?.state, 'Deleted');
    const back = decide(observe({ now: at(130), pods: { listedAt: at(129), items: [pod()] }, deletions: { p1: { notFoundLooks: 3, lookedAt: at(120) } } }, lost));
    assert.equal(back.status.pod?.state, 'Deleting');
    assert.equal(back.status.pod?.deletedAt, undefined, 'it bills again until its deletion is confirmed');
    assert.deepEqual(back.action, { type: 'deletePod', podId: 'p1' });
    // The same when the run is being deleted.
    const deleting = decide(observe({ now: at(130), run: { ...observe().run, deleting: true }, pods: { listedAt: at(129), items: [pod()] } }, lost));
    assert.deepEqual(deleting.action, { type: 'deletePod', podId: 'p1' });
    // Kept (keepPod): followed again, as a kept pod is.
    const kept = decide(observe({ now: at(130), spec: spec({ keepPod: true }), pods: { listedAt: at(129), items: [pod()] } }, lost));
    assert.equal(kept.status.pod?.state, 'RUNNING');
    assert.deepEqual(kept.action, { type: 'none' });
    // A list older than the verdict is not a reappearance.
    const stale = decide(observe({ now: at(130), pods: { listedAt: at(124), items: [pod()] } }, lost));
    assert.equal(stale.status.pod?.state, 'Deleted');
    // A pod whose own deletion was confirmed stays confirmed while a lagging list still shows it.
    const ours = decide(observe({ now: at(130), pods: { listedAt: at(129), items: [pod()] }, deletions: { p1: { sentAt: at(100), notFoundLooks: 3 } } }, lost));
    assert.equal(ours.status.pod?.state, 'Deleted');
  });
});

describe('a create whose answer was lost', () => {
  /** Attempt r-1 recorded at 0 s; its answer lost at `lostSeconds` (a timeout ends long after the POST began). */
  function lost(lostSeconds: number): RunpodRunStatus {
    const obs = observe();
    const first = decide(obs);
    applyCreateOutcome(observe({ now: at(0) }), first.status, 'r-1', { kind: 'ambiguous', message: 'timeout', lostAt: at(lostSeconds) });
    return first.status;
  }
  const emptyList = (status: RunpodRunStatus, seconds: number, listedAt = seconds) =>
    decide(observe({ now: at(seconds), pods: { listedAt: at(listedAt), items: [] } }, status));

  test('the lookup counts from when the answer was lost, not from the attempt', () => {
    const status = lost(60);
    assert.equal(status.attempts?.[0]?.lostAt, at(60).toISOString());
    // A list taken while the request hung (or right after it) proves nothing.
    for (const [now, listedAt] of [[61, 59], [61, 61], [90, 89], [119, 118]] as const) {
      const d = emptyList(status, now, listedAt);
      assert.notEqual(d.action.type, 'createPod', `no resend at ${now} s with a list of ${listedAt} s`);
      assert.equal(d.status.attempts?.[0]?.outcome, 'Ambiguous');
    }
    // A list started a list-lag tolerance (60 s) after the loss: given up, the same type tried again.
    const after = emptyList(status, 121, 120);
    assert.equal(after.status.attempts?.[0]?.outcome, 'Failed');
    assert.deepEqual(after.action, { type: 'createPod', attemptName: 'r-2', gpuType: 'A', attemptNumber: 2 });
  });

  test('a pod that shows up late (list lag) is adopted, never created twice', () => {
    const status = lost(1);
    const waited = emptyList(status, 40, 40).status;
    const adopted = decide(observe({ now: at(45), pods: { listedAt: at(45), items: [pod({ id: 'late' })] } }, waited));
    assert.equal(adopted.status.pod?.id, 'late');
    assert.equal(adopted.status.attempts?.length, 1);
  });

  test('an attempt found Pending (a crash, or a 409 on the write after the POST) is stamped lost when first seen so', () => {
    const pending = decide(observe()).status;
    assert.equal(pending.attempts?.[0]?.outcome, 'Pending');
    const seen = emptyList(pending, 30, 30);
    assert.equal(seen.status.attempts?.[0]?.lostAt, at(30).toISOString());
    assert.notEqual(seen.action.type, 'createPod');
    assert.notEqual(emptyList(seen.status, 70, 70).action.type, 'createPod', 'the grace counts from 30 s');
    assert.deepEqual(emptyList(seen.status, 91, 90).action, { type: 'createPod', attemptName: 'r-2', gpuType: 'A', attemptNumber: 2 });
  });
});

describe('decide: a lost create that is not the last attempt (chaos seed 6)', () => {
  // The capacity wait sends earlier attempts again in place: attempt 1's answer was lost (a 503; the
  // pod existed) while attempt 2 still waited its turn. Sending attempt 2 then rented a second pod.
  const waiting = (): RunpodRunStatus => ({
    phase: 'Pending', reason: 'WaitingForCapacity', waitingSince: at(0).toISOString(),
    attempts: [
      { name: 'r-1', gpuType: 'A', time: at(1).toISOString(), outcome: 'Ambiguous', message: '503', lostAt: at(1).toISOString() },
      { name: 'r-2', gpuType: 'B', time: at(0).toISOString(), outcome: 'NoCapacity', retryAfter: at(1).toISOString() },
    ],
  });

  test('no other create is sent while that answer is lost', () => {
    const d = decide(observe({ now: at(2), pods: { listedAt: at(2), items: [] } }, waiting()));
    assert.notEqual(d.action.type, 'createPod', JSON.stringify(d.action));
  });

  test('its pod, once listed, is adopted', () => {
    const d = decide(observe({ now: at(10), pods: { listedAt: at(10), items: [pod({ name: 'r-1' })] } }, waiting()));
    assert.equal(d.status.attempts?.[0]?.outcome, 'Created');
    assert.equal(d.status.pod?.id, 'p1');
    assert.notEqual(d.action.type, 'createPod');
  });
});
