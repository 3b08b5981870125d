// act() on fakes of its two seams (the pod backend, the job host): one row per action and outcome,
// each asserting the status act returns and the evidence it records. The fakes answer as the real
// implementations do (RunpodError kinds, 'notFound'/'missing', HostKeyMismatchError).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RunpodRun } from '../../../src/api/runpodrun.ts';
import type { RunpodRunStatus } from '../../../src/api/status.ts';
import { act, type ActContext } from '../../../src/run/act/act.ts';
import { applyCreateOutcome, decide, learn } from '../../../src/run/decide/decide.ts';
import type { JobHost } from '../../../src/run/ports/job-host.ts';
import type { Action, Observation } from '../../../src/run/decide/model.ts';
import type { PodBackend } from '../../../src/run/ports/pod-backend.ts';
import type { RunApi } from '../../../src/run/ports/run-api.ts';
import { RunEvidence } from '../../../src/run/memory/evidence.ts';
import { SpendRoom, spendPriceKey } from '../../../src/run/memory/spend-room.ts';
import type { GpuTypeOffer } from '../../../src/runpod/catalog.ts';
import { RunpodError, type RunpodErrorKind, type RunpodOperation } from '../../../src/runpod/index.ts';
import { podSchema } from '../../../src/runpod/schemas.ts';
import { HostKeyMismatchError } from '../../../src/ssh/errors.ts';
import { at, observe, readyStatus, spec, ssh, t0 } from '../fixture.ts';
import { claimVisibleAfterMs, figuresFreshForMs } from '../../../src/run/decide/timings.ts';

/** What act "learned" at: later than the observation, so a row sees which clock act used. */
const actedAt = at(7);
const keys = { clientPrivateKey: 'client-private', clientPublicKey: 'client-public', hostPrivateKey: 'host-private', hostPublicKey: 'host-public' };

function offer(id: string, pricePerGpuHour: number, inStock = true): GpuTypeOffer {
  const availability = inStock ? 'HIGH' : 'NONE';
  return {
    id, name: id, manufacturer: 'Nvidia', memoryGb: 48, availability, inStock, dataCenters: [], cudaVersions: [],
    secure: { offered: true, pricePerGpuHour, maxCount: 8 }, community: { offered: true, pricePerGpuHour, maxCount: 8 },
  };
}

const refusal = (kind: RunpodErrorKind, operation: RunpodOperation = 'createPod', retryAfterMs?: number): RunpodError =>
  new RunpodError({ kind, operation, detail: `fake ${kind}`, retryAfterMs });

interface Harness {
  ctx: ActContext;
  evidence: RunEvidence;
  /** Every call the fakes saw, in order. */
  calls: string[];
  /** The account's spend room (none shared with another harness unless given). */
  room: SpendRoom;
}

interface HarnessOptions {
  status?: RunpodRunStatus;
  obs?: Partial<Observation>;
  pods?: Partial<PodBackend> | 'none';
  host?: Partial<JobHost>;
  ctx?: Partial<ActContext>;
}

function harness(options: HarnessOptions = {}): Harness {
  const calls: string[] = [];
  const status = options.status ?? {};
  const obs = observe(options.obs ?? {}, status);
  const evidence = new RunEvidence();
  const unexpected = (what: string) => (): never => assert.fail(`unexpected call: ${what}`);
  const pods: PodBackend = {
    catalog: unexpected('catalog'), createPod: unexpected('createPod'), deletePod: unexpected('deletePod'), startPod: unexpected('startPod'),
    lookForPod: unexpected('lookForPod'), spendLimitUsdPerHour: unexpected('spendLimitUsdPerHour'), networkVolume: unexpected('networkVolume'), systemLog: unexpected('systemLog'),
    ensureRegistry: unexpected('ensureRegistry'),
    ...(options.pods === 'none' ? {} : options.pods),
  };
  const jobHost: JobHost = {
    connected: true, sound: true, probe: unexpected('probe'), readState: unexpected('readState'),
    setKeep: (keep) => { calls.push(`setKeep ${keep}`); return Promise.resolve(); },
    startJob: (_spec, inputs) => { calls.push(`startJob ${Object.entries(inputs.env).map(([name, value]) => `${name}=${value}`).join(',')}`); return Promise.resolve(); },
    cancelJob: () => { calls.push('cancelJob'); return Promise.resolve(); },
    renewRetrieveGrace: (seconds) => { calls.push(`renewRetrieveGrace ${seconds}`); return Promise.resolve(); },
    ...options.host,
  };
  const run = { apiVersion: 'v1', kind: 'RunpodRun', metadata: { name: 'r', namespace: 'ns', uid: 'uid-1' }, spec: {}, status } as unknown as RunpodRun;
  const valid = obs.spec.ok ? obs.spec.spec : undefined;
  const ctx: ActContext = {
    run, obs, ...(valid ? { spec: valid } : {}),
    ...(options.pods === 'none' ? {} : { pods }),
    sshKeys: keys, jobHost, jobInputs: { env: { A: '1' }, files: [] },
    resultLocation: '/nowhere', runs: {} as RunApi, evidence,
    buildCreateRequest: (attemptName, attemptNumber, gpuType) => {
      calls.push(`build ${attemptName} #${attemptNumber} ${gpuType}`);
      return { name: attemptName, imageName: 'img', gpuTypeIds: [gpuType] };
    },
    refreshPods: () => { calls.push('refreshPods'); },
    now: () => actedAt,
    spendRoom: new SpendRoom(),
    ...options.ctx,
  };
  return { ctx, evidence, calls, room: ctx.spendRoom! };
}

// --- createPod ------------------------------------------------------------------------------------

const priceOf = (gpuType: string): string => spendPriceKey(gpuType, spec().spec);

/** The step, then what the reconciler writes of its answer (learn() on the status the step ran under). */
async function actAndLearn(action: Action, ctx: ActContext): Promise<RunpodRunStatus | undefined> {
  const outcome = await act(action, ctx);
  return outcome && learn(ctx.obs, ctx.run.status ?? {}, outcome);
}

/** The status decide writes before the first create: attempt r-1 on type A, unanswered. */
const beforeCreate = (): RunpodRunStatus => decide(observe()).status;
const createAction: Action = { type: 'createPod', attemptName: 'r-1', attemptNumber: 1, gpuType: 'A' };

async function create(answer: () => Promise<unknown>, pods: Partial<PodBackend> = {}): Promise<{ status: RunpodRunStatus; h: Harness }> {
  const h = harness({ status: beforeCreate(), pods: { createPod: answer as PodBackend['createPod'], ...pods } });
  const status = await actAndLearn(createAction, h.ctx);
  assert.ok(status, 'a create always returns the status it learned');
  assert.deepEqual(h.calls, ['build r-1 #1 A', 'refreshPods']);
  return { status, h };
}

test('createPod: created records the pod and moves to Provisioning/WaitingForSsh', async () => {
  const created = podSchema.parse({ id: 'p1', name: 'r-1', status: 'RUNNING', gpu: { id: 'A', count: 1 }, cost: 0.5, createdAt: t0.toISOString() });
  const { status } = await create(() => Promise.resolve(created));
  assert.equal(status.attempts?.[0]?.outcome, 'Created');
  assert.equal(status.attempts?.[0]?.podId, 'p1');
  assert.equal(status.pod?.id, 'p1');
  assert.equal(status.phase, 'Provisioning');
  assert.equal(status.reason, 'WaitingForSsh');
});

test('createPod: capacity marks the attempt NoCapacity with Runpod\'s words', async () => {
  const { status } = await create(() => Promise.reject(refusal('capacity')));
  assert.equal(status.attempts?.[0]?.outcome, 'NoCapacity');
  assert.match(status.attempts?.[0]?.message ?? '', /fake capacity/);
  assert.equal(status.pod, undefined);
});

for (const [name, error, message] of [
  ['an ambiguous RunpodError', refusal('ambiguous'), /fake ambiguous/],
  ['a transient RunpodError', refusal('transient'), /fake transient/],
  ['an error that is no RunpodError', new TypeError('boom'), /unexpected way/],
] as const) {
  test(`createPod: ${name} is Ambiguous, lost when act learned it (not when it observed)`, async () => {
    const { status } = await create(() => Promise.reject(error));
    assert.equal(status.attempts?.[0]?.outcome, 'Ambiguous');
    assert.match(status.attempts?.[0]?.message ?? '', message);
    assert.equal(status.attempts?.[0]?.lostAt, actedAt.toISOString());
  });
}

test('createPod: rate-limited waits out Retry-After (Pending/RateLimited), nothing fails', async () => {
  const { status } = await create(() => Promise.reject(refusal('rate-limited', 'createPod', 45_000)));
  assert.equal(status.attempts?.[0]?.outcome, 'RateLimited');
  assert.equal(status.attempts?.[0]?.retryAfter, new Date(t0.getTime() + 45_000).toISOString());
  assert.equal(status.phase, 'Pending');
  assert.equal(status.reason, 'RateLimited');
});

test('createPod: spend-limit records the account limit and the pod\'s price as evidence (Pending/SpendLimitReached)', async () => {
  const { status, h } = await create(() => Promise.reject(refusal('spend-limit')), {
    spendLimitUsdPerHour: () => Promise.resolve(10),
    catalog: () => Promise.resolve([offer('A', 0.69), offer('B', 2)]),
  });
  assert.equal(status.attempts?.[0]?.outcome, 'SpendLimited');
  assert.equal(status.phase, 'Pending');
  assert.equal(status.reason, 'SpendLimitReached');
  assert.equal(status.waitingSince, t0.toISOString());
  assert.deepEqual(h.room.known(priceOf('A'), actedAt), { limitUsdPerHour: 10, podUsdPerHour: 0.69 }, "the account's figures, for every run of its price");
  assert.match(status.message ?? '', /account spend limit \$10\.00\/h, this pod needs \$0\.69\/h/);
});

/** Three runs acting on the same status (each its own uid) with one spend room; the uids whose POST went out. */
async function createsOfThree(status: RunpodRunStatus, obs: Partial<Observation>, room: SpendRoom, answeredAt = actedAt): Promise<{ posts: string[]; statuses: (RunpodRunStatus | undefined)[] }> {
  const posts: string[] = [];
  const runs = ['uid-1', 'uid-2', 'uid-3'].map((uid) => {
    const h = harness({
      status: structuredClone(status), obs, ctx: { spendRoom: room, now: () => answeredAt },
      pods: { createPod: () => { posts.push(uid); return Promise.reject(refusal('spend-limit')); }, spendLimitUsdPerHour: () => Promise.resolve(1.8), catalog: () => Promise.resolve([offer('A', 0.69)]) },
    });
    (h.ctx.run.metadata as { uid: string }).uid = uid;
    return h;
  });
  const statuses = await Promise.all(runs.map((h) => actAndLearn(createAction, h.ctx)));
  return { posts, statuses };
}

function assertHeldBack(status: RunpodRunStatus | undefined, why: RegExp, waitsFrom: Date): void {
  assert.equal(status?.attempts?.[0]?.outcome, 'SpendLimited');
  assert.equal(status?.phase, 'Pending');
  assert.equal(status?.reason, 'SpendLimitReached');
  assert.match(status?.message ?? '', why);
  assert.equal(status?.attempts?.[0]?.retryAfter, new Date(waitsFrom.getTime() + 10_000).toISOString());
}

test('createPod: of the runs resending under the spend limit into room for one pod, one sends; the others wait without a call', async () => {
  // Every run saw the same list: room for one more 0.69 USD/h pod under 1.8 USD/h. Each resends as
  // decide() has it: the refused attempt back to Pending (the reason stays), then the create.
  const room = new SpendRoom();
  const spend = { limitUsdPerHour: 1.8, runningUsdPerHour: 0.69, podUsdPerHour: 0.69 };
  const listed = { spend, pods: { listedAt: at(11), items: [] }, now: at(11) };
  const refused = beforeCreate();
  applyCreateOutcome(observe({ spend }), refused, 'r-1', { kind: 'spend-limit', message: 'over the spend limit', spend });
  const resend = decide(observe(listed, refused));
  assert.deepEqual(resend.action, createAction);
  assert.equal(resend.status.attempts?.[0]?.outcome, 'Pending');
  const { posts, statuses: [first, ...others] } = await createsOfThree(resend.status, listed, room);
  assert.deepEqual(posts, ['uid-1'], 'one create went out, not one per waiting run');
  assert.equal(first?.attempts?.[0]?.outcome, 'SpendLimited');
  for (const status of others) assertHeldBack(status, /the room under the account spend limit is claimed by another run's create/, at(11));
  // The first was refused (at actedAt): the room that list showed is not believed again, one taken a while after is.
  assert.equal(room.claim('uid-2', spend, at(11), at(12)), 'refused-lately');
  assert.equal(room.claim('uid-2', spend, new Date(actedAt.getTime() + claimVisibleAfterMs), at(30)), 'granted');
});

test('createPod: after a restart, the runs resending blind under the spend limit send one create, not one each', async () => {
  // Chaos seed 29 at N=100 on 6ea4b76: the figures live in memory, so after each restart every waiting
  // run resent blind at once: up to 59 refused creates within 10 s.
  const refused = beforeCreate();
  applyCreateOutcome(observe(), refused, 'r-1', { kind: 'spend-limit', message: 'over the spend limit' });
  const restarted = { spend: { runningUsdPerHour: 0.69 }, pods: { listedAt: at(61), items: [] }, now: at(61) };
  const resend = decide(observe(restarted, refused));
  assert.deepEqual(resend.action, createAction);
  const { posts, statuses: [, ...others] } = await createsOfThree(resend.status, restarted, new SpendRoom(), at(62));
  assert.deepEqual(posts, ['uid-1'], 'one probe went out');
  for (const status of others) assertHeldBack(status, /claimed by another run's create/, at(61));
});

test('createPod: one run\'s refusal teaches the account\'s figures: a run of the same price is judged by the room, not sent blind', async () => {
  // After a restart no run knows the figures; the first probe's refusal reads them for all.
  const room = new SpendRoom();
  room.refused('uid-0', at(-25), priceOf('A'), { limitUsdPerHour: 1.8, podUsdPerHour: 0.69 });
  const refused = beforeCreate();
  applyCreateOutcome(observe(), refused, 'r-1', { kind: 'spend-limit', message: 'over the spend limit' });
  const listed = { spend: { runningUsdPerHour: 0.69 }, pods: { listedAt: at(0), items: [] }, now: at(61) };
  const { posts, statuses: [, ...others] } = await createsOfThree(decide(observe(listed, refused)).status, listed, room, at(62));
  assert.deepEqual(posts, ['uid-1'], 'room for one 0.69 USD/h pod beside 0.69 under 1.8: one goes');
  for (const status of others) assertHeldBack(status, /claimed by another run's create \(account spend limit \$1\.80\/h, running pods \$0\.69\/h, this pod needs \$0\.69\/h\)/, at(61));
});

test('createPod: a new run\'s create on an account refused lately waits without a call, as a refused run does', async () => {
  const room = new SpendRoom();
  room.refused('uid-0', at(-5), priceOf('A'), {});
  const listed = { spend: { runningUsdPerHour: 1.38 }, pods: { listedAt: at(0), items: [] } };
  const { posts, statuses } = await createsOfThree(beforeCreate(), listed, room);
  assert.deepEqual(posts, [], 'no create went out');
  for (const status of statuses) {
    assertHeldBack(status, /Runpod refused a create of this account under its spend limit moments ago/, t0);
    assert.equal(status?.waitingSince, t0.toISOString(), 'the queue timeout counts from here');
    assert.match(status?.attempts?.[0]?.message ?? '', /refused a create of this account/);
  }
});

test('createPod: a spend refusal re-reads only the figures the account does not know freshly', async () => {
  // Chaos seed 29 at N=100 on 6ea4b76 counted 320 GETs of the limit and 320 of the catalog beside 351
  // refusals: each refusal read both again, from a budget the waiting runs share.
  const reads: string[] = [];
  const pods = {
    spendLimitUsdPerHour: () => { reads.push('limit'); return Promise.resolve(1.8); },
    catalog: () => { reads.push('catalog'); return Promise.resolve([offer('A', 0.69), offer('B', 2)]); },
  };
  const refusedCreate = async (room: SpendRoom, gpuType: 'A' | 'B'): Promise<void> => {
    const h = harness({ status: beforeCreate(), ctx: { spendRoom: room }, pods: { createPod: () => Promise.reject(refusal('spend-limit')), ...pods } });
    await act({ ...createAction, gpuType }, h.ctx);
  };
  const learnedAt = new Date(actedAt.getTime() - figuresFreshForMs + 1000);
  const taught = (): SpendRoom => {
    const room = new SpendRoom();
    room.refused('uid-0', learnedAt, priceOf('A'), { limitUsdPerHour: 1.8, podUsdPerHour: 0.69 });
    return room;
  };
  const room = taught();
  await refusedCreate(room, 'A');
  assert.deepEqual(reads, [], 'both figures are fresh: nothing read');
  assert.deepEqual(room.known(priceOf('A'), new Date(learnedAt.getTime() + figuresFreshForMs)), {}, 'figures not read again still expire when they would have');
  const otherPrice = taught();
  await refusedCreate(otherPrice, 'B');
  assert.deepEqual(reads, ['catalog'], 'another price: only the catalog');
  assert.deepEqual(otherPrice.known(priceOf('B'), actedAt), { limitUsdPerHour: 1.8, podUsdPerHour: 2 });
  reads.length = 0;
  await refusedCreate(new SpendRoom(), 'A');
  assert.deepEqual(reads, ['limit', 'catalog'], 'nothing known: both read');
});

test('createPod: spend-limit with neither figure readable still waits, blind', async () => {
  const { status, h } = await create(() => Promise.reject(refusal('spend-limit')), {
    spendLimitUsdPerHour: () => Promise.reject(refusal('forbidden', 'getPod')),
    catalog: () => Promise.reject(refusal('transient', 'getPod')),
  });
  assert.equal(status.attempts?.[0]?.outcome, 'SpendLimited');
  assert.deepEqual(h.room.known(priceOf('A'), actedAt), {});
  assert.equal(status.attempts?.[0]?.retryAfter, new Date(t0.getTime() + 60_000).toISOString());
});

for (const [kind, reason] of [
  ['balance', 'InsufficientBalance'], ['invalid', 'InvalidSpec'], ['unauthorized', 'CredentialsRejected'], ['forbidden', 'CredentialsInsufficient'],
] as const) {
  test(`createPod: ${kind} fails the run (${reason})`, async () => {
    const { status } = await create(() => Promise.reject(refusal(kind)));
    assert.equal(status.attempts?.[0]?.outcome, 'Failed');
    assert.equal(status.phase, 'Failed');
    assert.equal(status.reason, reason);
  });
}

test('createPod without an account throws before any call', async () => {
  const h = harness({ status: beforeCreate(), pods: 'none' });
  await assert.rejects(act(createAction, h.ctx), /credentials missing/);
  assert.deepEqual(h.calls, []);
});

// --- deletePod and the looks for a gone pod -------------------------------------------------------

test('deletePod: deleted records when the delete was sent, no 404', async () => {
  const h = harness({ pods: { deletePod: (podId) => { h.calls.push(`delete ${podId}`); return Promise.resolve('deleted' as const); } } });
  assert.equal(await act({ type: 'deletePod', podId: 'p1' }, h.ctx), undefined);
  assert.deepEqual(h.evidence.deletion('p1'), { notFoundLooks: 0, sentAt: actedAt });
  assert.deepEqual(h.calls, ['delete p1', 'refreshPods']);
});

test('startPod: sends the start and lists the pods soon; a refusal fails the step (retried with backoff, bounded by decide)', async () => {
  const h = harness({ pods: { startPod: (podId) => { h.calls.push(`start ${podId}`); return Promise.resolve(); } } });
  assert.equal(await act({ type: 'startPod', podId: 'p1' }, h.ctx), undefined);
  assert.deepEqual(h.calls, ['start p1', 'refreshPods']);
  const refused = harness({ pods: { startPod: () => Promise.reject(new Error('There are not enough free GPUs on the host machine to start this pod.')) } });
  await assert.rejects(act({ type: 'startPod', podId: 'p1' }, refused.ctx), /not enough free GPUs/);
});

test('deletePod: a 404 is one look\'s worth of evidence, and the delete counts as sent', async () => {
  const h = harness({ pods: { deletePod: () => Promise.resolve('notFound' as const) } });
  await act({ type: 'deletePod', podId: 'p1' }, h.ctx);
  assert.deepEqual(h.evidence.deletion('p1'), { notFoundLooks: 1, sentAt: actedAt });
});

test('deletePod: a refusal throws and records nothing', async () => {
  const h = harness({ pods: { deletePod: () => Promise.reject(refusal('forbidden', 'deletePod')) } });
  await assert.rejects(act({ type: 'deletePod', podId: 'p1' }, h.ctx), /fake forbidden/);
  assert.deepEqual(h.evidence.deletions(), {});
  assert.deepEqual(h.calls, []);
});

test('lookForGonePod: missing adds a 404 and the moment of the look', async () => {
  const h = harness({ pods: { lookForPod: () => Promise.resolve('missing' as const) } });
  h.evidence.recordDeletion('p1', { notFoundLooks: 1, sentAt: t0 });
  await act({ type: 'lookForGonePod', podId: 'p1' }, h.ctx);
  assert.deepEqual(h.evidence.deletion('p1'), { notFoundLooks: 2, sentAt: t0, lookedAt: actedAt });
});

test('lookForGonePod: found restarts the 404 count and records when (decide judges the delete by it)', async () => {
  const h = harness({ pods: { lookForPod: () => Promise.resolve('found' as const) } });
  h.evidence.recordDeletion('p1', { notFoundLooks: 2, sentAt: t0 });
  await act({ type: 'lookForGonePod', podId: 'p1' }, h.ctx);
  assert.deepEqual(h.evidence.deletion('p1'), { notFoundLooks: 0, sentAt: t0, lookedAt: actedAt, foundAt: actedAt });
});

test('lookForGonePod: any other failure throws and records nothing', async () => {
  const h = harness({ pods: { lookForPod: () => Promise.reject(refusal('transient', 'getPod')) } });
  await assert.rejects(act({ type: 'lookForGonePod', podId: 'p1' }, h.ctx), /fake transient/);
  assert.deepEqual(h.evidence.deletions(), {});
});

// --- readCatalog ----------------------------------------------------------------------------------

test('readCatalog: the types that fit, cheapest first, each marked in stock or not, become the run\'s candidates', async () => {
  const h = harness({ obs: { spec: spec({ gpu: { auto: { maxPricePerHour: '1.5' } } }) }, pods: { catalog: () => Promise.resolve([offer('B', 1), offer('A', 0.5), offer('C', 3), offer('D', 0.2, false)]) } });
  await act({ type: 'readCatalog' }, h.ctx);
  assert.deepEqual(h.evidence.catalog('uid-1'), [{ gpuType: 'D', inStock: false }, { gpuType: 'A', inStock: true }, { gpuType: 'B', inStock: true }]);
});

test('readCatalog: nothing in stock: every type that fits is recorded, none in stock (decide picks the few it walks)', async () => {
  const h = harness({ obs: { spec: spec({ gpu: { auto: {} } }) }, pods: { catalog: () => Promise.resolve(['D', 'C', 'B', 'A'].map((id, i) => offer(id, i + 1, false))) } });
  await act({ type: 'readCatalog' }, h.ctx);
  assert.deepEqual(h.evidence.catalog('uid-1'), ['D', 'C', 'B', 'A'].map((gpuType) => ({ gpuType, inStock: false })));
});

// --- readNetworkVolume, readSystemLog -------------------------------------------------------------

test('readNetworkVolume: found with its data center and GPU types, or missing on Runpod\'s 404; another failure throws', async () => {
  const found = harness({ pods: { networkVolume: () => Promise.resolve({ dataCenterId: 'EU-RO-1', gpuTypes: ['A'] }) } });
  assert.deepEqual(await act({ type: 'readNetworkVolume', volumeId: 'nv1' }, found.ctx), { step: 'readNetworkVolume', result: { kind: 'found', dataCenterId: 'EU-RO-1', gpuTypes: ['A'] } });
  const missing = harness({ pods: { networkVolume: () => Promise.resolve('missing' as const) } });
  assert.deepEqual(await act({ type: 'readNetworkVolume', volumeId: 'nv1' }, missing.ctx), { step: 'readNetworkVolume', result: { kind: 'missing' } });
  const failing = harness({ pods: { networkVolume: () => Promise.reject(refusal('transient', 'getNetworkVolume')) } });
  await assert.rejects(act({ type: 'readNetworkVolume', volumeId: 'nv1' }, failing.ctx), /fake transient/);
});

test('readSystemLog: the lines, or none when the read fails (best effort: it explains, it holds nothing up)', async () => {
  const read = harness({ pods: { systemLog: () => Promise.resolve(['Pulling image img']) } });
  assert.deepEqual(await act({ type: 'readSystemLog', podId: 'p1' }, read.ctx), { step: 'readSystemLog', result: { podId: 'p1', lines: ['Pulling image img'] } });
  const failing = harness({ pods: { systemLog: () => Promise.reject(refusal('transient', 'podLogs')) } });
  assert.deepEqual(await act({ type: 'readSystemLog', podId: 'p1' }, failing.ctx), { step: 'readSystemLog', result: { podId: 'p1', lines: [] } });
});

// --- probeSsh -------------------------------------------------------------------------------------

/** A created pod with its SSH endpoint, not yet ready. */
function probing(answer: JobHost['probe']): Harness {
  const status = readyStatus();
  status.conditions = status.conditions?.filter((c) => c.type !== 'PodReady');
  status.phase = 'Provisioning';
  status.reason = 'WaitingForSsh';
  const outcomes: string[] = [];
  const h = harness({ status, host: { probe: answer }, ctx: { metrics: { sshConnection: (o) => outcomes.push(o), resultsRetrieved: () => undefined } } });
  return { ...h, calls: outcomes };
}

const probeAction: Action = { type: 'probeSsh', podId: 'p1', host: ssh.host, port: ssh.port };

test('probeSsh: ready sets PodReady and moves to Running', async () => {
  let target: unknown;
  const h = probing((t) => { target = t; return Promise.resolve(); });
  const status = await actAndLearn(probeAction, h.ctx);
  assert.deepEqual(target, { host: ssh.host, port: ssh.port, keys });
  assert.equal(status?.phase, 'Running');
  assert.equal(status?.conditions?.find((c) => c.type === 'PodReady')?.status, 'True');
  assert.deepEqual(h.calls, ['ok']);
});

test('probeSsh: untrusted (another host key) stays Provisioning/WaitingForSsh and says so', async () => {
  const h = probing(() => Promise.reject(new HostKeyMismatchError('SHA256:pinned', 'SHA256:other', `${ssh.host}:${ssh.port}`)));
  const status = await actAndLearn(probeAction, h.ctx);
  assert.equal(status?.phase, 'Provisioning');
  assert.equal(status?.reason, 'WaitingForSsh');
  assert.match(status?.message ?? '', /not the pinned one/);
  assert.equal(status?.conditions?.find((c) => c.type === 'PodReady'), undefined);
  assert.deepEqual(h.calls, ['host_key_mismatch']);
});

test('probeSsh: not yet (refused, timed out) learns nothing to write', async () => {
  const h = probing(() => Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })));
  assert.equal(await act(probeAction, h.ctx), undefined);
  assert.deepEqual(h.calls, ['failed']);
});

test('probeSsh: without the run\'s SSH keys nothing is probed', async () => {
  const h = harness({ status: readyStatus(), ctx: { sshKeys: undefined } });
  assert.equal(await act(probeAction, h.ctx), undefined);
});

test('probeSsh: an abort is thrown, not taken for "not yet"', async () => {
  const controller = new AbortController();
  controller.abort(new Error('stopping'));
  const h = probing(() => Promise.reject(new Error('aborted')));
  await assert.rejects(act(probeAction, { ...h.ctx, signal: controller.signal }), /stopping/);
});

// --- the job's steps ------------------------------------------------------------------------------

test('startJob sends the spec and the job inputs through the job host, with the try in RUNPOD_OPERATOR_ATTEMPT', async () => {
  const h = harness();
  assert.equal(await act({ type: 'startJob', try: 2 }, h.ctx), undefined);
  assert.deepEqual(h.calls, [`startJob ${Object.entries(h.ctx.jobInputs?.env ?? {}).map(([name, value]) => `${name}=${value}`).join(',')},RUNPOD_OPERATOR_ATTEMPT=2`]);
});

test('startJob without its inputs throws before touching the pod', async () => {
  const h = harness({ ctx: { jobInputs: undefined } });
  await assert.rejects(act({ type: 'startJob', try: 1 }, h.ctx), /env and files could not all be read/);
  assert.deepEqual(h.calls, []);
});

for (const action of [{ type: 'cancelJob' }, { type: 'setKeep', keep: true }, { type: 'setKeep', keep: false }, { type: 'renewRetrieveGrace', seconds: 120 }] as const) {
  const label = action.type === 'setKeep' ? `setKeep ${action.keep}` : action.type === 'renewRetrieveGrace' ? `renewRetrieveGrace ${action.seconds}` : action.type;
  test(`${label} goes to the job host and learns nothing to write`, async () => {
    const h = harness();
    assert.equal(await act(action, h.ctx), undefined);
    assert.deepEqual(h.calls, [label]);
  });
}

for (const action of [{ type: 'startJob', try: 1 }, { type: 'cancelJob' }, { type: 'setKeep', keep: true }, { type: 'renewRetrieveGrace', seconds: 120 }] as const) {
  test(`${action.type} without a connection to the pod throws and sends nothing`, async () => {
    const h = harness({ host: { connected: false } });
    await assert.rejects(act(action, h.ctx), /no SSH connection to the pod this time/);
    assert.deepEqual(h.calls, []);
  });
}

// --- retrieveResults with the pool ------------------------------------------------------------------

const retrievalRows: [string, Record<string, unknown>, number, number][] = [
  ['the retrieve grace ends first', {}, 120, 220],
  ['the deadline comes first', {}, 900, 600],
  ['a kept pod has no retrieve grace: its deadline', { keepPod: true }, 120, 600],
];
for (const [name, extra, graceSeconds, dueSeconds] of retrievalRows) {
  test(`retrieveResults queues the transfer due when its results are lost: ${name}`, async () => {
    let due: number | undefined;
    const transfers = { take: () => undefined, start: (_id: string, _key: string, _job: unknown, dueAt?: number) => { due = dueAt; } } as unknown as ActContext['transfers'];
    const status: RunpodRunStatus = { pod: { id: 'p1', name: 'r-1', deadline: at(600).toISOString() }, job: { startedAt: at(40).toISOString(), finishedAt: at(100).toISOString(), exitCode: 0 } };
    const h = harness({ status, obs: { spec: spec(extra, { retrieveGraceSeconds: graceSeconds }) }, ctx: { transfers } });
    assert.equal(await act({ type: 'retrieveResults' }, h.ctx), undefined, 'the outcome comes from a later reconcile');
    assert.equal(due, at(dueSeconds).getTime());
  });
}
