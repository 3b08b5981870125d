// decide() state by state: pure, so every rule of a run's life is checked without any I/O.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Observation } from '../../../src/run/decide/model.ts';
import type { RunpodRunStatus } from '../../../src/api/status.ts';
import { applyCreateOutcome, applyProbeOutcome, applyRetrievalOutcome, decide, nextCandidate, podName } from '../../../src/run/decide/decide.ts';
import { at, createdStatus, unixAt, observe, pod, readyStatus, spec, ssh, state, t0 } from '../fixture.ts';

describe('decide: before any Runpod call', () => {
  test('adds the finalizer first', () => {
    assert.deepEqual(decide(observe({ run: { ...observe().run, hasFinalizer: false } })).action, { type: 'addFinalizer' });
  });

  // Chaos seed 5171: a bad-key run's first pass only added the finalizer (Pending/Created); a controller
  // kill and 110 runs queued before its next pass left it so until its user deleted it 40 s later.
  test('a run that never created a pod is judged on its spec and key before it gets a finalizer', () => {
    const run = { ...observe().run, hasFinalizer: false };
    const badKey = decide(observe({ run, credentials: { found: false, invalid: true, message: 'Secret ns/runpod key "apiKey" holds a control character' } }));
    assert.deepEqual([badKey.status.phase, badKey.status.reason, badKey.action], ['Pending', 'CredentialsInvalid', { type: 'none' }]);
    const badSpec = decide(observe({ run, spec: { ok: false, message: 'spec.gpu: exactly one of gpu.types and gpu.auto must be set' } }));
    assert.deepEqual([badSpec.status.phase, badSpec.status.reason, badSpec.action], ['Failed', 'InvalidSpec', { type: 'none' }]);
    const created = decide(observe({ run, status: createdStatus(), credentials: { found: false, message: 'Secret ns/runpod not found' } }));
    assert.deepEqual(created.action, { type: 'addFinalizer' }, 'a run that sent a create gets its finalizer back first');
  });

  test('the first status already says the run is in progress (kstatus reads a status without conditions as Current)', () => {
    const steps = [
      decide(observe({ run: { ...observe().run, hasFinalizer: false } })),
      decide(observe({ sshKeysReady: false })),
    ];
    for (const d of steps) {
      assert.equal(d.status.phase, 'Pending');
      assert.equal(d.status.reason, 'Created');
      assert.equal(d.status.observedGeneration, 1);
      for (const [type, value] of [['Reconciling', 'True'], ['Ready', 'False'], ['Stalled', 'False']]) {
        assert.ok(d.status.conditions?.some((c) => c.type === type && c.status === value), `${type}=${value} in ${JSON.stringify(d.status)}`);
      }
    }
  });

  test('an invalid spec fails the run with InvalidSpec and calls nothing', () => {
    const d = decide(observe({ spec: { ok: false, message: 'spec.gpu: exactly one of gpu.types and gpu.auto must be set' } }));
    assert.equal(d.status.phase, 'Failed');
    assert.equal(d.status.reason, 'InvalidSpec');
    assert.match(d.status.message!, /spec\.gpu/);
    assert.deepEqual(d.action, { type: 'none' });
    assert.equal(d.events[0]?.type, 'Warning');
    assert.ok(d.status.conditions?.some((c) => c.type === 'Stalled' && c.status === 'True'));
    assert.ok(d.status.conditions?.some((c) => c.type === 'Failed' && c.status === 'True'));
  });

  test('missing credentials wait with backoff, without any Runpod call', () => {
    const d = decide(observe({ credentials: { found: false, message: 'Secret ns/runpod not found' }, pods: undefined }));
    assert.equal(d.status.phase, 'Pending');
    assert.equal(d.status.reason, 'CredentialsMissing');
    assert.equal(d.requeue, 'backoff');
    assert.deepEqual(d.action, { type: 'none' });
  });

  test('a key Runpod refuses (401 on the pod list) fails the run CredentialsRejected', () => {
    const d = decide(observe({ credentials: { found: true, rejected: true }, pods: undefined }));
    assert.equal(d.status.reason, 'CredentialsRejected');
    assert.equal(d.status.phase, 'Failed');
  });

  test('nothing is rented while a Secret or ConfigMap the job needs is missing', () => {
    const d = decide(observe({ jobInputs: { ok: false, message: 'waiting for spec.job.env[0] HF_TOKEN: Secret ns/hf has no key "token"' } }));
    assert.equal(d.status.reason, 'CredentialsMissing');
    assert.match(d.status.message!, /HF_TOKEN/);
    assert.equal(d.requeue, 'backoff');
  });

  test('generates the SSH keys before provisioning', () => {
    assert.deepEqual(decide(observe({ sshKeysReady: false })).action, { type: 'ensureSshKeys' });
  });

  test('waits for the first pod list before deciding anything about pods', () => {
    assert.deepEqual(decide(observe({ pods: undefined })).action, { type: 'none' });
  });
});

describe('decide: provisioning', () => {
  test('records the attempt in the status before the create is sent', () => {
    const d = decide(observe());
    assert.deepEqual(d.action, { type: 'createPod', attemptName: 'r-1', gpuType: 'A', attemptNumber: 1 });
    assert.deepEqual(d.status.attempts, [{ name: 'r-1', gpuType: 'A', time: t0.toISOString(), outcome: 'Pending' }]);
    assert.equal(d.status.phase, 'Provisioning');
  });

  test('no capacity on the first type moves on to the second, then waits for capacity (capacity-wait.test.ts)', () => {
    const obs = observe();
    const first = decide(obs);
    applyCreateOutcome(obs, first.status, 'r-1', { kind: 'capacity', message: 'no instances' });
    const second = decide(observe({}, first.status));
    assert.deepEqual(second.action, { type: 'createPod', attemptName: 'r-2', gpuType: 'B', attemptNumber: 2 });
    applyCreateOutcome(obs, second.status, 'r-2', { kind: 'capacity', message: 'no instances' });
    const third = decide(observe({}, second.status));
    assert.equal(third.status.phase, 'Pending');
    assert.equal(third.status.reason, 'WaitingForCapacity');
    assert.match(third.status.message!, /no capacity on A, B/);
  });

  test('gpu.auto reads the catalog once, then goes cheapest first', () => {
    const auto = spec({ gpu: { auto: { minVramGb: 24 } } });
    assert.deepEqual(decide(observe({ spec: auto })).action, { type: 'readCatalog' });
    const d = decide(observe({ spec: auto, catalog: [{ gpuType: 'cheap', pricePerHour: 0.2 }, { gpuType: 'dear', pricePerHour: 2 }] }));
    assert.deepEqual(d.action, { type: 'createPod', attemptName: 'r-1', gpuType: 'cheap', attemptNumber: 1 });
    const none = decide(observe({ spec: auto, catalog: [] }));
    assert.equal(none.status.reason, 'NoCapacity');
  });

  test('gpu.auto: a type out of stock is skipped while another is in stock; with none in stock, the three cheapest are walked anyway', () => {
    const auto = spec({ gpu: { auto: {} } });
    const some = [{ gpuType: 'D', inStock: false }, { gpuType: 'A', inStock: true }];
    assert.deepEqual(decide(observe({ spec: auto, catalog: some })).action, { type: 'createPod', attemptName: 'r-1', gpuType: 'A', attemptNumber: 1 });
    const none = ['D', 'C', 'B', 'A'].map((gpuType) => ({ gpuType, inStock: false }));
    let status = decide(observe({ spec: auto, catalog: none })).status;
    const walked = [status.attempts?.at(-1)?.gpuType];
    for (const name of ['r-1', 'r-2']) {
      applyCreateOutcome(observe({ spec: auto }), status, name, { kind: 'capacity', message: 'no stock' });
      status = decide(observe({ spec: auto, catalog: none }, status)).status;
      walked.push(status.attempts?.at(-1)?.gpuType);
    }
    assert.deepEqual(walked, ['D', 'C', 'B']);
    applyCreateOutcome(observe({ spec: auto }), status, 'r-3', { kind: 'capacity', message: 'no stock' });
    const waiting = decide(observe({ spec: auto, catalog: none }, status));
    assert.equal(waiting.status.attempts?.length, 3, 'A, the fourth, is not tried: the wait walks the three again');
  });

  test('402 fails InsufficientBalance, 422 InvalidSpec, 401 CredentialsRejected', () => {
    for (const reason of ['InsufficientBalance', 'InvalidSpec', 'CredentialsRejected'] as const) {
      const obs = observe();
      const d = decide(obs);
      applyCreateOutcome(obs, d.status, 'r-1', { kind: 'failed', reason, message: 'm' });
      assert.equal(d.status.phase, 'Failed');
      assert.equal(d.status.reason, reason);
      assert.deepEqual(decide(observe({}, d.status)).action, { type: 'none' }, 'no further create');
    }
  });

  test('an ambiguous create is never resent: the pod is looked up by name and adopted', () => {
    const obs = observe();
    const d = decide(obs);
    applyCreateOutcome(obs, d.status, 'r-1', { kind: 'ambiguous', message: '500', lostAt: t0 });
    const waiting = decide(observe({ now: at(3), pods: { listedAt: at(3), items: [] } }, d.status));
    assert.deepEqual(waiting.action, { type: 'none' }, 'no create while the first may exist');
    const adopted = decide(observe({ now: at(6), pods: { listedAt: at(6), items: [pod({ id: 'p9' })] } }, waiting.status));
    assert.equal(adopted.status.pod?.id, 'p9');
    assert.equal(adopted.status.attempts?.[0]?.outcome, 'Created');
    assert.equal(adopted.status.attempts?.length, 1);
  });

  test('an ambiguous create with no pod after the lookup grace is retried on the same type', () => {
    const obs = observe();
    const d = decide(obs);
    applyCreateOutcome(obs, d.status, 'r-1', { kind: 'ambiguous', message: 'timeout', lostAt: t0 });
    const next = decide(observe({ now: at(61), pods: { listedAt: at(60), items: [] } }, d.status));
    assert.equal(next.status.attempts?.[0]?.outcome, 'Failed');
    assert.deepEqual(next.action, { type: 'createPod', attemptName: 'r-2', gpuType: 'A', attemptNumber: 2 });
  });

  test('a create recorded but never answered (controller crash) is treated as ambiguous', () => {
    const pending = decide(observe()).status;
    const restarted = decide(observe({ now: at(2), pods: { listedAt: at(2), items: [pod()] } }, pending));
    assert.equal(restarted.status.pod?.id, 'p1');
    assert.equal(restarted.status.attempts?.length, 1);
  });

  test('a pod of the run that is not its current pod is deleted before anything else', () => {
    const status = createdStatus();
    const d = decide(observe({ pods: { listedAt: t0, items: [pod(), pod({ id: 'p2', name: 'r-7' })] } }, status));
    assert.deepEqual(d.status.strayPods, ['p2']);
    assert.deepEqual(d.action, { type: 'deletePod', podId: 'p2' });
  });

  test('waits for ssh.direct, then probes SSH with the pinned key', () => {
    const status = createdStatus();
    const noSsh = decide(observe({ pods: { listedAt: t0, items: [pod()] } }, status));
    assert.equal(noSsh.status.reason, 'WaitingForSsh');
    assert.deepEqual(noSsh.action, { type: 'none' });
    const probe = decide(observe({ pods: { listedAt: t0, items: [pod({ ssh })] } }, status));
    assert.deepEqual(probe.action, { type: 'probeSsh', podId: 'p1', host: '127.0.0.1', port: 2222 });
  });

  test('a ready probe makes the run Running/PodReady with PodReady True', () => {
    const status = readyStatus();
    assert.equal(status.phase, 'Running');
    assert.ok(status.conditions?.some((c) => c.type === 'PodReady' && c.status === 'True'));
    const d = decide(observe({ now: at(72), pods: { listedAt: at(72), items: [pod({ ssh })] } }, status));
    assert.equal(d.status.reason, 'PodReady');
    assert.equal(d.status.estimatedCostUsd, '0.01', '0.50 $/h for 72 s');
    assert.equal(d.status.pod?.costPerHour, '0.50');
  });

  test('a foreign host key (the image\'s own sshd): never trusted, waited out until readyTimeoutSeconds, then the next GPU type', () => {
    let status = createdStatus();
    const listed = pod({ ssh });
    applyProbeOutcome(observe({ now: at(10) }), status, { kind: 'untrusted', message: 'host key mismatch at 127.0.0.1:2222' });
    assert.equal(status.phase, 'Provisioning');
    assert.equal(status.reason, 'WaitingForSsh');
    assert.match(status.message ?? '', /not the pinned one[^]*host key mismatch/);
    assert.ok(!status.conditions?.some((c) => c.type === 'PodReady' && c.status === 'True'));
    assert.equal(status.pod?.state, 'RUNNING');
    // Probed again (no job, no env, no upload: those need PodReady) ...
    assert.deepEqual(decide(observe({ now: at(13), pods: { listedAt: at(13), items: [listed] } }, status)).action, { type: 'probeSsh', podId: 'p1', host: '127.0.0.1', port: 2222 });
    // ... until the ready timeout: deleted, attempt NotReady, then the next type.
    status = decide(observe({ now: at(61), pods: { listedAt: at(61), items: [listed] } }, status)).status;
    assert.equal(status.pod?.state, 'Deleting');
    assert.equal(status.attempts?.[0]?.outcome, 'NotReady');
    assert.deepEqual(decide(observe({ now: at(61), pods: { listedAt: at(61), items: [listed] } }, status)).action, { type: 'deletePod', podId: 'p1' });
  });

  test('not ready within readyTimeoutSeconds: delete (confirmed), then the next GPU type', () => {
    let status = createdStatus();
    const late = { now: at(61), pods: { listedAt: at(61), items: [pod()] } };
    status = decide(observe(late, status)).status;
    assert.equal(status.pod?.state, 'Deleting');
    assert.equal(status.attempts?.[0]?.outcome, 'NotReady');
    assert.deepEqual(decide(observe(late, status)).action, { type: 'deletePod', podId: 'p1' });
    // Deleted, three looks (404s, or lists begun after the delete without it), and a newer list without
    // it: only then the next create. Short of the looks, the lists polled anyway are waited for, not a GET.
    const deletions = { p1: { sentAt: at(62), notFoundLooks: 1, listLooks: 1, listLookAt: at(66) } };
    const waiting = decide(observe({ now: at(70), pods: { listedAt: at(66), items: [] }, deletions }, status));
    assert.deepEqual(waiting.action, { type: 'none' });
    assert.equal(waiting.status.pod?.state, 'Deleting');
    const confirmed = decide(observe({ now: at(72), pods: { listedAt: at(72), items: [] }, deletions: { p1: { ...deletions.p1, listLooks: 2, listLookAt: at(72) } } }, status));
    assert.equal(confirmed.status.pod?.state, 'Deleted');
    assert.deepEqual(confirmed.action, { type: 'createPod', attemptName: 'r-2', gpuType: 'B', attemptNumber: 2 });
  });

  test('never creates while a deleted pod is still listed after the delete', () => {
    let status = createdStatus();
    status = decide(observe({ now: at(61), pods: { listedAt: at(61), items: [pod()] } }, status)).status;
    const d = decide(observe({ now: at(70), pods: { listedAt: at(70), items: [pod()] }, deletions: { p1: { sentAt: at(62), notFoundLooks: 3 } } }, status));
    assert.deepEqual(d.action, { type: 'lookForGonePod', podId: 'p1' }, 'looked at again: neither forgotten nor deleted again on the list\'s word');
  });

  test('a delete a look found did not take (alive more than 30 s after it was sent) is sent again; one found sooner is not', () => {
    let status = createdStatus();
    status = decide(observe({ now: at(61), pods: { listedAt: at(61), items: [pod()] } }, status)).status;
    const found = (seconds: number) => decide(observe({ now: at(seconds + 1), pods: { listedAt: at(seconds + 1), items: [pod()] }, deletions: { p1: { sentAt: at(62), notFoundLooks: 0, lookedAt: at(seconds), foundAt: at(seconds) } } }, status));
    assert.deepEqual(found(62 + 30).action, { type: 'lookForGonePod', podId: 'p1' }, 'found 30 s after: it may still be going');
    assert.deepEqual(found(62 + 31).action, { type: 'deletePod', podId: 'p1' });
  });
});

describe('decide: ending early', () => {
  test('the controller guard deletes a pod past its deadline + margin: DeadlineExceeded', () => {
    const status = readyStatus();
    const d = decide(observe({ now: at(600 + 61), pods: { listedAt: at(600 + 61), items: [pod()] } }, status));
    assert.equal(d.status.reason, 'DeadlineExceeded');
    assert.equal(d.status.pod?.state, 'Deleting');
    assert.deepEqual(decide(observe({ now: at(662), pods: { listedAt: at(662), items: [pod()] } }, d.status)).action, { type: 'deletePod', podId: 'p1' });
  });

  test('a pod gone from the list is confirmed with 404s: PodLost before the deadline, DeadlineExceeded after', () => {
    const status = readyStatus();
    const looks = (n: number, seconds: number) => observe({ now: at(seconds), pods: { listedAt: at(seconds), items: [] }, deletions: { p1: { notFoundLooks: n } } }, status);
    assert.deepEqual(decide(looks(0, 100)).action, { type: 'lookForGonePod', podId: 'p1' });
    assert.equal(decide(looks(3, 100)).status.reason, 'PodLost');
    assert.equal(decide(looks(3, 601)).status.reason, 'DeadlineExceeded');
    assert.equal(decide(looks(3, 601)).status.pod?.state, 'Deleted');
  });

  test('a ready pod that went EXITED or ERROR is deleted at once: PodLost with what is known, DeadlineExceeded after the deadline', () => {
    for (const state of ['EXITED', 'ERROR'] as const) {
      const status = readyStatus();
      status.job = { startedAt: at(10).toISOString() };
      const gone = (seconds: number) => observe({ now: at(seconds), pods: { listedAt: at(seconds), items: [pod({ status: state })] } }, status);
      const d = decide(gone(100));
      assert.equal(d.status.phase, 'Failed');
      assert.equal(d.status.reason, 'PodLost');
      assert.equal(d.status.pod?.state, 'Deleting');
      assert.match(d.status.message!, new RegExp(`pod r-1 went ${state} before the run ended; the job started at ${at(10).toISOString()} and was running when last seen \\(no exit code recorded\\); no results were retrieved`));
      assert.deepEqual(decide(gone(101)).action, { type: 'none' });
      assert.deepEqual(decide(observe({ now: at(101), pods: { listedAt: at(101), items: [pod({ status: state })] } }, d.status)).action, { type: 'deletePod', podId: 'p1' });
      const late = decide(gone(601));
      assert.equal(late.status.reason, 'DeadlineExceeded');
      assert.match(late.status.message!, new RegExp(`went ${state}`));
    }
  });

  test('a pod that went EXITED after the job\'s exit was recorded is started again once, to fetch its results from its volume', () => {
    const status = readyStatus();
    status.job = { startedAt: at(10).toISOString(), finishedAt: at(40).toISOString(), exitCode: 0 };
    const listed = (seconds: number, podStatus: string, over: Partial<Observation> = {}) =>
      observe({ now: at(seconds), pods: { listedAt: at(seconds), items: [pod({ status: podStatus, ssh })] }, ...over }, status);
    const d = decide(listed(50, 'EXITED'));
    assert.deepEqual(d.action, { type: 'startPod', podId: 'p1' });
    assert.equal(d.status.phase, 'Retrieving');
    assert.equal(d.status.pod?.startedAgainAt, at(50).toISOString(), 'recorded before the start is sent: once per pod');
    assert.notEqual(d.status.pod?.state, 'Deleting');
    assert.match(d.status.message!, /went EXITED after the job exited with code 0, before its results were retrieved; starting it again/);
    assert.ok(d.events.some((e) => /starting it again/.test(e.note)), JSON.stringify(d.events));

    // Still EXITED in a list taken just after (lists lag): waited for, neither started twice nor deleted.
    const soon = decide(observe({ now: at(60), pods: { listedAt: at(60), items: [pod({ status: 'EXITED', ssh })] } }, d.status));
    assert.deepEqual(soon.action, { type: 'none' });
    assert.notEqual(soon.status.pod?.state, 'Deleting');
    // Running again: followed as before, on to the retrieval once the pod's state is read.
    const again = decide(observe({ now: at(70), pods: { listedAt: at(70), items: [pod({ ssh })] }, podState: state({}, { status: 'lost', startedAt: unixAt(65) }) }, d.status));
    assert.deepEqual(again.action, { type: 'retrieveResults' });
    // Not running again within the bound: given up, the pod deleted.
    const stuck = decide(observe({ now: at(50 + 61), pods: { listedAt: at(111), items: [pod({ status: 'EXITED', ssh })] } }, d.status));
    assert.equal(stuck.status.pod?.state, 'Deleting');
    assert.equal(stuck.status.phase, 'Failed');
    const stoppedAgain = decide(observe({ now: at(300), pods: { listedAt: at(300), items: [pod({ status: 'EXITED', ssh })] } }, again.status));
    assert.equal(stoppedAgain.status.pod?.state, 'Deleting', 'a pod that stops a second time is not started again');
  });

  test('a stopped pod is not started again when it must go or holds nothing to fetch', () => {
    const ended = { startedAt: at(10).toISOString(), finishedAt: at(40).toISOString(), exitCode: 0 };
    const cases: [string, string, RunpodRunStatus['job'], Partial<Observation>, number, Partial<RunpodRunStatus>][] = [
      ['ERROR (its volume is not to be trusted)', 'ERROR', ended, {}, 50, {}],
      ['no exit recorded', 'EXITED', { startedAt: at(10).toISOString() }, {}, 50, {}],
      ['the results already retrieved', 'EXITED', ended, {}, 50, { results: { retrievedAt: at(45).toISOString(), files: 1, bytes: 1 } }],
      ['past its deadline (a watchdog whose key may not delete stops its pod)', 'EXITED', ended, {}, 600, {}],
      ['past the retrieve grace', 'EXITED', ended, { spec: spec({}, { retrieveGraceSeconds: 30 }) }, 71, {}],
      ['cancelled', 'EXITED', ended, { spec: spec({ cancel: true }) }, 50, {}],
    ];
    for (const [why, podStatus, job, over, seconds, extra] of cases) {
      const status = { ...readyStatus(), job, ...extra };
      const d = decide(observe({ now: at(seconds), pods: { listedAt: at(seconds), items: [pod({ status: podStatus, ssh })] }, ...over }, status));
      assert.notDeepEqual(d.action, { type: 'startPod', podId: 'p1' }, why);
      assert.equal(d.status.pod?.startedAgainAt, undefined, why);
    }
  });

  test('a pod that went EXITED before it was ready is deleted and the next GPU type tried', () => {
    const status = createdStatus();
    const d = decide(observe({ now: at(5), pods: { listedAt: at(5), items: [pod({ status: 'EXITED' })] } }, status));
    assert.equal(d.status.phase, 'Provisioning');
    assert.equal(d.status.pod?.state, 'Deleting');
    assert.equal(d.status.attempts?.[0]?.outcome, 'NotReady');
    assert.match(d.status.attempts?.[0]?.message ?? '', /went EXITED before SSH answered/);
    const confirmed = decide(observe({ now: at(20), pods: { listedAt: at(20), items: [] }, deletions: { p1: { sentAt: at(6), notFoundLooks: 3 } } }, d.status));
    assert.deepEqual(confirmed.action, { type: 'createPod', attemptName: 'r-2', gpuType: 'B', attemptNumber: 2 });
  });

  test('a lost job (container restart) and a vanished pod say what is known', () => {
    const status = readyStatus();
    status.job = { startedAt: at(10).toISOString(), exitCode: 0 };
    const looks = observe({ now: at(100), pods: { listedAt: at(100), items: [] }, deletions: { p1: { notFoundLooks: 3 } } }, status);
    const vanished = decide(looks);
    assert.equal(vanished.status.reason, 'PodLost');
    assert.match(vanished.status.message!, /disappeared from Runpod before the run ended; the job started at \S+ and exited with code 0; no results were retrieved/);
    const ready = readyStatus();
    const lostState = state({}, { status: 'lost', startedAt: unixAt(3) });
    const lost = decide(observe({ now: at(5), pods: { listedAt: at(5), items: [pod({ ssh })] }, podState: lostState }, ready));
    assert.equal(lost.status.reason, 'PodLost');
    assert.equal(lost.status.pod?.state, 'Deleting');
    assert.match(lost.status.message!, /restarted its container: the job's exit code is lost; the job started at 2026-12-01T12:00:03.000Z and was running when last seen \(no exit code recorded\); no results were retrieved/);
  });

  test('a container restart after the job\'s exit was recorded: its results are still on the volume and are retrieved', () => {
    const status = readyStatus();
    status.job = { startedAt: at(10).toISOString(), finishedAt: at(40).toISOString(), exitCode: 0 };
    const lostState = state({}, { status: 'lost', startedAt: unixAt(60) });
    const d = decide(observe({ now: at(70), pods: { listedAt: at(70), items: [pod({ ssh })] }, podState: lostState }, status));
    assert.deepEqual(d.action, { type: 'retrieveResults' });
    assert.equal(d.status.phase, 'Retrieving');
    assert.notEqual(d.status.pod?.state, 'Deleting');
    assert.deepEqual(d.status.job, status.job, 'the recorded exit and end stand (the restart is not the job\'s end)');
    assert.match(d.status.message!, /restarted its container after the job exited with code 0/);
    // A non-zero exit recorded before the restart is retrieved as well, and still says so.
    status.job.exitCode = 3;
    const failed = decide(observe({ now: at(70), pods: { listedAt: at(70), items: [pod({ ssh })] }, podState: lostState }, status));
    assert.deepEqual(failed.action, { type: 'retrieveResults' });
    assert.equal(failed.status.job?.exitCode, 3);
  });

  test('a pod that no longer knows the job it reported started is lost: the job never starts twice', () => {
    const status = readyStatus();
    status.job = { startedAt: at(10).toISOString() };
    const forgot = decide(observe({ now: at(70), pods: { listedAt: at(70), items: [pod({ ssh })] }, podState: state() }, status));
    assert.notDeepEqual(forgot.action, { type: 'startJob', try: 1 });
    assert.equal(forgot.status.reason, 'PodLost');
    assert.equal(forgot.status.pod?.state, 'Deleting');
    assert.match(forgot.status.message!, /no longer knows the job that started at \S+/);
  });

  test('cancel deletes the pod, confirms, then fails Cancelled', () => {
    const status = readyStatus();
    const cancel = spec({ cancel: true });
    const first = decide(observe({ spec: cancel, pods: { listedAt: t0, items: [pod()] } }, status));
    assert.deepEqual(first.action, { type: 'deletePod', podId: 'p1' });
    const end = decide(observe({ spec: cancel, now: at(10), pods: { listedAt: at(10), items: [] }, deletions: { p1: { sentAt: at(1), notFoundLooks: 3 } } }, first.status));
    assert.equal(end.status.reason, 'Cancelled');
    assert.equal(end.status.phase, 'Failed');
    assert.equal(end.status.pod?.state, 'Deleted');
  });

  test('deleting the run deletes every pod of its marker, confirms, then removes the finalizer', () => {
    const status = readyStatus();
    const deleting = { ...observe().run, deleting: true };
    const first = decide(observe({ run: deleting, pods: { listedAt: t0, items: [pod(), pod({ id: 'p2' })] } }, status));
    assert.deepEqual(first.action, { type: 'deletePod', podId: 'p2' });
    const later = decide(observe({
      run: deleting, now: at(10), pods: { listedAt: at(10), items: [] },
      deletions: { p1: { sentAt: at(1), notFoundLooks: 3 }, p2: { sentAt: at(1), notFoundLooks: 3 } },
    }, first.status));
    assert.deepEqual(later.action, { type: 'removeFinalizer' });
  });

  test('deleting a run that never created a pod, or with skip-cleanup, removes the finalizer at once', () => {
    assert.deepEqual(decide(observe({ run: { ...observe().run, deleting: true }, pods: undefined })).action, { type: 'removeFinalizer' });
    const skip = { ...observe().run, deleting: true, skipCleanup: true };
    assert.deepEqual(decide(observe({ run: skip, pods: undefined }, readyStatus())).action, { type: 'removeFinalizer' });
  });

  test('deleting a run with no usable key: CleanupBlocked (a Warning naming skip-cleanup), backoff; a key again resumes the deletion', () => {
    const deleting = { ...observe().run, deleting: true };
    for (const credentials of [{ found: false as const, message: 'Secret ns/runpod not found' }, { found: true as const, rejected: true }]) {
      const blocked = decide(observe({ run: deleting, credentials, pods: { listedAt: t0, items: [pod()] } }, readyStatus()));
      assert.deepEqual(blocked.action, { type: 'none' });
      assert.equal(blocked.requeue, 'backoff');
      assert.equal(blocked.status.reason, 'CleanupBlocked');
      assert.match(blocked.status.message ?? '', /kubectl annotate runpodrun r -n ns runpod-operator\.dev\/skip-cleanup=true/);
      assert.deepEqual(blocked.events.map((e) => [e.type, e.reason]), [['Warning', 'CleanupBlocked']]);
      const resumed = decide(observe({ run: deleting, pods: { listedAt: t0, items: [pod()] } }, blocked.status));
      assert.deepEqual(resumed.action, { type: 'deletePod', podId: 'p1' });
      assert.equal(resumed.status.reason, 'Deleting');
    }
  });

  test('after the end nothing of the run may keep billing, unless kept', () => {
    const failed = decide(observe({ spec: { ok: false, message: 'x' } })).status;
    failed.attempts = [{ name: 'r-1', gpuType: 'A', time: t0.toISOString(), outcome: 'Created', podId: 'p1' }];
    assert.deepEqual(decide(observe({ pods: { listedAt: t0, items: [pod()] } }, failed)).action, { type: 'deletePod', podId: 'p1' });
  });
});

test('nextCandidate and podName', () => {
  const c = [{ gpuType: 'A' }, { gpuType: 'B' }];
  assert.equal(nextCandidate(c, [])?.gpuType, 'A');
  assert.equal(nextCandidate(c, [{ name: 'x', gpuType: 'A', time: '', outcome: 'NoCapacity' }])?.gpuType, 'B');
  const lost = { name: 'x', gpuType: 'A', time: '', outcome: 'Failed' as const };
  assert.equal(nextCandidate(c, [lost])?.gpuType, 'A');
  assert.equal(nextCandidate(c, [lost, lost])?.gpuType, 'A');
  assert.equal(nextCandidate(c, [lost, lost, lost])?.gpuType, 'B', 'a type whose answers keep getting lost is given up');
  assert.equal(podName('a'.repeat(80), 3), `${'a'.repeat(60)}-3`);
});

describe('decide: the job on a ready pod', () => {
  const listed = (seconds = 5) => ({ now: at(seconds), pods: { listedAt: at(seconds), items: [pod({ ssh })] } });

  test('waits for the watchdog to prove it can delete the pod before starting the job', () => {
    const d = decide(observe({ ...listed(), podState: state({ watchdog: { status: 'pending' } }) }, readyStatus()));
    assert.deepEqual(d.action, { type: 'none' });
    assert.match(d.status.message!, /watchdog/);
  });

  test('a watchdog that cannot delete its pod: the job is never started, the pod deleted, BootFailed', () => {
    const d = decide(observe({ ...listed(), podState: state({ watchdog: { status: 'failed', reason: 'HTTP 403' } }) }, readyStatus()));
    assert.equal(d.status.reason, 'BootFailed');
    assert.match(d.status.message!, /HTTP 403/);
    assert.equal(d.status.pod?.state, 'Deleting');
  });

  test('the watchdog could not delete the pod (watchdog.delete): the controller deletes it now, the run ends for the watchdog\'s reason', () => {
    const cases = [['deadline', 'DeadlineExceeded'], ['cost-cap', 'CostCapReached'], ['boot-grace', 'BootTimeout'], ['price-unknown', 'CostCapReached'], ['retrieve-grace', 'ResultsUnverified'], ['bootstrap', 'BootFailed'], ['unknown', 'PodLost']] as const;
    for (const [rule, reason] of cases) {
      const failure = { rule, at: 1_800_000_000, detail: 'DELETE: HTTP 403; terminate: HTTP 403; stop: HTTP 403' };
      const d = decide(observe({ ...listed(), podState: state({ deleteFailed: failure }, { status: 'running', startedAt: 1_800_000_000 }) }, readyStatus()));
      assert.equal(d.status.phase, 'Failed', rule);
      assert.equal(d.status.reason, reason, rule);
      assert.equal(d.status.pod?.state, 'Deleting');
      assert.match(d.status.message!, new RegExp(`its watchdog could not delete it \\(${rule}: DELETE: HTTP 403; terminate: HTTP 403; stop: HTTP 403\\); deleted by the controller`));
    }
    // Results already verified (the marker's rule): no failure, the pod just goes.
    const retrieved = readyStatus();
    retrieved.results = { files: 1, bytes: 1, location: '/r', retrievedAt: at(4).toISOString() };
    const d = decide(observe({ ...listed(), podState: state({ deleteFailed: { rule: 'retrieved', at: 1, detail: 'x' } }) }, retrieved));
    assert.equal(d.status.phase, 'Retrieving');
    assert.equal(d.status.pod?.state, 'Deleting');
  });

  test('keepPod is written to the pod before the job starts', () => {
    const d = decide(observe({ ...listed(), spec: spec({ keepPod: true }), podState: state({ keep: null }) }, readyStatus()));
    assert.deepEqual(d.action, { type: 'setKeep', keep: true });
  });

  test('starts the job, follows it, and retrieves once it exited', () => {
    assert.deepEqual(decide(observe({ ...listed(), podState: state() }, readyStatus())).action, { type: 'startJob', try: 1 });
    const running = decide(observe({ ...listed(), podState: state({}, { status: 'running', startedAt: 1_800_000_000 }) }, readyStatus()));
    assert.equal(running.status.reason, 'JobRunning');
    assert.ok(running.status.conditions?.some((c) => c.type === 'JobStarted' && c.status === 'True'));
    const exited = decide(observe({ ...listed(), podState: state({}, { status: 'exited', startedAt: 1_800_000_000, endedAt: 1_800_000_100, exitCode: 0 }) }, running.status));
    assert.equal(exited.status.phase, 'Retrieving');
    assert.equal(exited.status.job?.exitCode, 0);
    assert.deepEqual(exited.action, { type: 'retrieveResults' });
  });

  test('a retrieval in the transfer pool: says how many transfers are ahead, and is looked at again after a poll, not at once', () => {
    const exited = state({}, { status: 'exited', startedAt: 1_800_000_000, endedAt: 1_800_000_100, exitCode: 0 });
    const first = decide(observe({ ...listed(), podState: exited }, readyStatus()));
    assert.deepEqual(first.requeue, { afterMs: 0 }, 'nothing in the pool yet: the step starts the transfer');
    const queued = decide(observe({ ...listed(), podState: exited, transfer: { state: 'queued', ahead: 2 } }, first.status));
    assert.equal(queued.status.reason, 'Retrieving');
    assert.match(queued.status.message!, /retrieving and verifying its results; waiting for a transfer slot \(2 ahead, --max-concurrent-transfers\)/);
    assert.deepEqual(queued.action, { type: 'retrieveResults' });
    assert.deepEqual(queued.requeue, { afterMs: 5000 });
    const running = decide(observe({ ...listed(), podState: exited, transfer: { state: 'running' } }, queued.status));
    assert.doesNotMatch(running.status.message!, /waiting for a transfer slot/);
    assert.deepEqual(running.requeue, { afterMs: 5000 });
    const retrieval = { kind: 'verified', files: 2, bytes: 10, location: '/results/x', verifiedAt: at(8) } as const;
    const settled = decide(observe({ ...listed(), podState: exited, retrieval }, running.status));
    assert.equal(settled.status.results?.retrievedAt, at(8).toISOString(), 'the outcome is applied in the same pass');
    assert.deepEqual(settled.appliedRetrieval, retrieval, 'and handed back, to be let go once written');
    assert.deepEqual(settled.action, { type: 'deletePod', podId: 'p1' }, 'verified: the pass goes on to the pod\'s delete');
  });

  test('a settled transfer is applied before anything looks at the pod: its pod may be gone already (the watchdog deletes a marked pod)', () => {
    const exited = state({}, { status: 'exited', startedAt: 1_800_000_000, endedAt: 1_800_000_100, exitCode: 0 });
    const running = decide(observe({ ...listed(), podState: exited, transfer: { state: 'running' } }, readyStatus())).status;
    // The pod is no longer listed and SSH is gone: unless applied first, the run would end without its results.
    const retrieval = { kind: 'verified', files: 2, bytes: 10, location: '/results/x', verifiedAt: at(190) } as const;
    const gone = decide(observe({ now: at(200), pods: { listedAt: at(200), items: [] }, retrieval }, running));
    assert.equal(gone.status.results?.retrievedAt, at(190).toISOString());
    assert.notEqual(gone.status.phase, 'Failed');
    assert.deepEqual(gone.appliedRetrieval, retrieval);
  });

  test('a settled transfer that failed: said and counted in the same pass, the next try waits out its backoff from now', () => {
    const exited = state({}, { status: 'exited', startedAt: 1_800_000_000, endedAt: 1_800_000_100, exitCode: 0 });
    const running = decide(observe({ ...listed(), podState: exited, transfer: { state: 'running' } }, readyStatus())).status;
    const retrieval = { kind: 'unverified', message: 'the object store s3://b/x: ServiceUnavailable' } as const;
    const failed = decide(observe({ ...listed(), podState: exited, retrieval, retrievalFailures: 1 }, running));
    assert.equal(failed.status.reason, 'ResultsUnverified');
    assert.match(failed.status.message!, /^results not verified \(try 2\): the object store s3:\/\/b\/x: ServiceUnavailable/);
    assert.deepEqual(failed.appliedRetrieval, retrieval);
    // Counted: the third try is 2 s × 2² after this failure, as when the next reconcile sees it counted.
    assert.deepEqual([failed.action, failed.requeue], [{ type: 'none' }, { afterMs: 8000 }]);
    const next = decide(observe({ ...listed(), now: at(8), podState: exited, retrievalFailures: 2, lastRetrievalFailureAt: at(0) }, failed.status));
    assert.deepEqual(next.action, { type: 'retrieveResults' });
    assert.equal(next.appliedRetrieval, undefined);
  });

  test('a failed job\'s last log lines go into a Warning event once', () => {
    const exited = state({ logTail: 'step 1\nstep 2\nTraceback: boom\n' }, { status: 'exited', startedAt: 1, endedAt: 2, exitCode: 3 });
    const first = decide(observe({ ...listed(), podState: exited }, readyStatus()));
    const event = first.events.find((e) => e.reason === 'JobFailed');
    assert.equal(event?.type, 'Warning');
    assert.match(event?.note ?? '', /code 3[^]*Traceback: boom/);
    assert.ok(!decide(observe({ ...listed(), podState: exited }, first.status)).events.some((e) => e.reason === 'JobFailed'));
  });

  test('verified results: the pod is deleted (confirmed), then Succeeded; exit 3 gives JobFailed', () => {
    for (const [code, reason] of [[0, 'Succeeded'], [3, 'JobFailed']] as const) {
      const obs = observe({ ...listed(), podState: state({}, { status: 'exited', startedAt: 1, endedAt: 2, exitCode: code }) }, readyStatus());
      const exited = decide(obs);
      applyRetrievalOutcome(obs, exited.status, { kind: 'verified', files: 2, bytes: 10, location: '/results/x', verifiedAt: at(6) });
      assert.equal(exited.status.results?.retrievedAt, at(6).toISOString());
      assert.equal(exited.status.pod?.state, 'Deleting');
      assert.ok(exited.status.conditions?.some((c) => c.type === 'ResultsRetrieved' && c.status === 'True'));
      const deleting = decide(observe({ ...listed(6) }, exited.status));
      assert.deepEqual(deleting.action, { type: 'deletePod', podId: 'p1' });
      const end = decide(observe({ now: at(20), pods: { listedAt: at(20), items: [] }, deletions: { p1: { sentAt: at(7), notFoundLooks: 3 } } }, exited.status));
      assert.equal(end.status.reason, reason);
      if (code === 3) assert.match(end.status.message!, /code 3/);
    }
  });

  test('a spec change after the end is observed by every condition (kubectl wait skips a condition of an older generation)', () => {
    const obs = observe({ ...listed(), podState: state({}, { status: 'exited', startedAt: 1, endedAt: 2, exitCode: 0 }) }, readyStatus());
    const exited = decide(obs);
    applyRetrievalOutcome(obs, exited.status, { kind: 'verified', files: 2, bytes: 10, location: '/results/x', verifiedAt: at(6) });
    const end = decide(observe({ now: at(20), pods: { listedAt: at(20), items: [] }, deletions: { p1: { sentAt: at(7), notFoundLooks: 3 } } }, exited.status));
    assert.equal(end.status.phase, 'Succeeded');
    const later = decide(observe({ now: at(30), run: { ...observe().run, generation: 2 }, spec: spec({ keepPod: true }), pods: { listedAt: at(30), items: [] } }, end.status));
    assert.equal(later.status.observedGeneration, 2);
    assert.equal(later.status.phase, 'Succeeded');
    for (const condition of later.status.conditions ?? []) {
      assert.equal(condition.observedGeneration, 2, `${condition.type} observed generation 2`);
      const before = end.status.conditions?.find((c) => c.type === condition.type);
      assert.deepEqual({ ...condition, observedGeneration: before?.observedGeneration }, before, `${condition.type} otherwise unchanged`);
    }
  });

  test('unverified results keep the pod and are retried with backoff: ResultsUnverified', () => {
    const obs = observe({ ...listed(), podState: state({}, { status: 'exited', startedAt: 1, endedAt: 2, exitCode: 0 }), retrievalFailures: 2 }, readyStatus());
    const d = decide(obs);
    assert.equal(d.status.reason, 'ResultsUnverified');
    assert.deepEqual(d.action, { type: 'retrieveResults' });
    assert.deepEqual(d.requeue, { afterMs: 8000 });
    assert.notEqual(d.status.pod?.state, 'Deleting');
  });

  test('the retry after unverified results keeps what the last attempt found: the user acts on it', () => {
    const exited = state({}, { status: 'exited', startedAt: 1, endedAt: 2, exitCode: 0 });
    const first = { status: readyStatus() };
    applyRetrievalOutcome(observe({ ...listed(), podState: exited }), first.status, { kind: 'unverified', message: '1 refused symlinks (state -> ../.pod: points outside the results directory)' });
    const retry = decide(observe({ ...listed(), podState: exited, retrievalFailures: 1 }, first.status));
    assert.deepEqual(retry.action, { type: 'retrieveResults' });
    assert.equal(retry.status.reason, 'ResultsUnverified');
    assert.match(retry.status.message ?? '', /refused symlinks \(state -> \.\.\/\.pod: points outside the results directory\)/);
    assert.match(retry.status.message ?? '', /try 1/);
  });

  test('cancel while the job runs: the job is stopped first, its results retrieved, then the pod goes', () => {
    const running = state({}, { status: 'running', startedAt: 1 });
    const status = decide(observe({ ...listed(), podState: running }, readyStatus())).status;
    const d = decide(observe({ ...listed(), spec: spec({ cancel: true }), podState: running }, status));
    assert.deepEqual(d.action, { type: 'cancelJob' });
    assert.notEqual(d.status.pod?.state, 'Deleting');
  });

  test('the controller guard deletes a pod whose estimated spend reached maxCostUsd', () => {
    const capped = spec({ limits: { maxRuntimeSeconds: 86_400, readyTimeoutSeconds: 60, maxCostUsd: '0.05' } });
    // 0.50 $/h for 400 s: 0.06 USD.
    const d = decide(observe({ ...listed(400), spec: capped, podState: state({}, { status: 'running', startedAt: 1 }) }, readyStatus()));
    assert.equal(d.status.reason, 'CostCapReached');
    assert.equal(d.status.pod?.state, 'Deleting');
  });
});

describe('decide: a crash between the retrieved marker and the status write', () => {
  // The controller committed verified results to its store and marked them retrieved on the pod, then
  // died before writing the status; the watchdog deleted the pod on the marker. Found by the chaos suite.
  const exited = (): RunpodRunStatus => {
    const exitedState = state({}, { status: 'exited', startedAt: 1_800_000_000, endedAt: 1_800_000_100, exitCode: 0 });
    return decide(observe({ now: at(5), pods: { listedAt: at(5), items: [pod({ ssh })] }, podState: exitedState }, readyStatus())).status;
  };
  const gone = { now: at(60), pods: { listedAt: at(60), items: [] }, deletions: { p1: { notFoundLooks: 3 } } };
  const stored = { files: 3, bytes: 42, location: '/results/ns/r/uid-1', verifiedAt: at(20) };

  test('results found verified in the store are adopted: the run succeeds instead of ending ResultsUnverified', () => {
    const before = exited();
    assert.equal(before.phase, 'Retrieving');
    const adopted = decide(observe({ ...gone, storedResults: stored }, before));
    assert.equal(adopted.status.reason, 'Retrieving');
    assert.deepEqual(adopted.action, { type: 'deletePod', podId: 'p1' });
    // The delete was sent and Runpod has no such pod (the watchdog deleted it): the run ends.
    const confirmed = { now: at(90), pods: { listedAt: at(90), items: [] }, deletions: { p1: { sentAt: at(61), notFoundLooks: 3 } } };
    const status = decide(observe({ ...confirmed, storedResults: stored }, adopted.status)).status;
    assert.equal(status.phase, 'Succeeded', JSON.stringify(status));
    assert.deepEqual(status.results, { files: 3, bytes: 42, location: '/results/ns/r/uid-1', retrievedAt: at(20).toISOString() });
    assert.ok(status.conditions?.some((c) => c.type === 'ResultsRetrieved' && c.status === 'True'));
  });

  test('with nothing in the store the run does not succeed: the pod is lost with its results (PodLost, within the retrieve grace)', () => {
    const d = decide(observe(gone, exited()));
    assert.equal(d.status.phase, 'Failed');
    assert.equal(d.status.reason, 'PodLost');
    assert.match(d.status.message!, /no results were retrieved/);
  });
});
