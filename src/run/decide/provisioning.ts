// Provisioning: adopting pods whose create answer was lost, choosing the next GPU type, creating
// attempts, and the waits of refused creates and of the capacity queue.
import type { GpuCandidate, Observation, PodView } from './model.ts';
import type { RunpodRunStatus } from '../../api/status.ts';
import type { RunpodRunSpec } from '../../api/spec.ts';
import { isRefused, judgeRefusedAttempt, nextCapacityRound, queueDeadline } from './refused-creates.ts';
import { fail, phase, step, wait, type Context, type Step } from './step.ts';
import { formatUsd, retireCurrentPod } from './cost.ts';
import { readVolumeFirst } from './network-volume.ts';
import { activeDeadlineMs, attemptsOfThisTry, currentTry, failOrRetry, waitForNextTry } from './retry.ts';

/** Attempts a run may make before it gives up (bounded status size). */
const maxAttempts = 32;
/** How often an unanswered ambiguous create may be retried on the same GPU type. */
const lostCreateRetries = 2;

/** A create whose answer was lost may still have made a pod: adopt it by its exact name. */
export function adoptAfterAmbiguousCreate(ctx: Context): void {
  // Every attempt whose answer is lost, not only the last: the capacity wait sends earlier attempts
  // again in place, so a lost one may stand before attempts that still wait their turn.
  for (const attempt of ctx.status.attempts ?? []) {
    if (attempt.outcome === 'Pending' || attempt.outcome === 'Ambiguous') adoptOrGiveUp(ctx, attempt);
  }
}

function adoptOrGiveUp(ctx: Context, lost: NonNullable<RunpodRunStatus['attempts']>[number]): void {
  const { obs, status } = ctx;
  const found = obs.pods?.items.find((pod) => pod.name === lost.name);
  if (found) {
    lost.outcome = 'Created';
    lost.podId = found.id;
    lost.message = 'adopted after the create answer was lost';
    retireCurrentPod(status);
    status.pod = podStatusFrom(found, lost.gpuType, obs, status);
    return;
  }
  if (!lost.lostAt) {
    // Found Pending: the process that sent it crashed, or could not write its answer (a 409 on the
    // status write after the POST). The answer is lost from now on, as far as anyone here can tell.
    lost.lostAt = obs.now.toISOString();
    return;
  }
  // Only lists started after the answer was lost count (one taken while the request hung proves
  // nothing), and only once a new pod has had the time to show up in them (lists lag behind creates).
  const lookedLongEnough = obs.pods !== undefined
    && obs.pods.listedAt.getTime() >= Date.parse(lost.lostAt) + Math.max(obs.settings.ambiguousLookupMs, obs.settings.timings.newPodListLagToleranceMs);
  if (lookedLongEnough) {
    lost.outcome = 'Failed';
    lost.message = 'the create answer was lost and no pod with its name appeared';
  }
}

export function provision(ctx: Context, spec: RunpodRunSpec): Step {
  const { obs, status } = ctx;
  const cap = spec.limits.maxCostUsd;
  if (cap !== undefined && Number(status.estimatedCostUsd ?? 0) >= Number(cap)) {
    return fail(ctx, 'CostCapReached', `the run's earlier pods spent ${status.estimatedCostUsd ?? '0'} USD of spec.limits.maxCostUsd (${cap}); no other pod is created`);
  }
  const lost = status.attempts?.find((a) => a.outcome === 'Pending' || a.outcome === 'Ambiguous');
  if (lost) {
    phase(ctx, 'Provisioning', 'Provisioning', `looking for pod ${lost.name}: its create answer was lost`);
    return wait(obs.settings.pollIntervalMs);
  }
  const retrying = waitForNextTry(ctx);
  if (retrying) return retrying;
  const volume = readVolumeFirst(status, spec);
  if (volume) return volume;
  // A private image's credential exists on Runpod before a create names it.
  const registry = obs.jobInputs.ok ? obs.jobInputs.registry : undefined;
  if (registry && status.registry?.name !== registry) return step({ type: 'ensureRegistry', name: registry });
  const last = attemptsOfThisTry(status).at(-1);
  if (last && isRefused(last)) {
    const verdict = judgeRefusedAttempt(obs, status, last, spec.limits.queueTimeoutSeconds);
    if (verdict.kind === 'timedOut') return fail(ctx, 'NoCapacity', verdict.message);
    if (verdict.kind === 'wait') {
      phase(ctx, 'Pending', verdict.reason, verdict.message);
      return wait(verdict.afterMs);
    }
    // Refused before anything was created: the same attempt (same name) is sent again. The reason
    // stays until the answer, so a wait that retries does not flap its events.
    const again = last.outcome === 'RateLimited' ? 'after the rate limit' : 'under the spend limit';
    last.outcome = 'Pending';
    last.time = obs.now.toISOString();
    delete last.retryAfter;
    phase(ctx, 'Pending', status.reason ?? 'Provisioning', `creating pod ${last.name} on ${last.gpuType} again ${again}`);
    return step({ type: 'createPod', attemptName: last.name, gpuType: last.gpuType, attemptNumber: status.attempts?.length ?? 1 });
  }
  const queued = sendQueuedForCapacity(ctx, spec);
  if (queued) return queued;
  let candidates: GpuCandidate[];
  if (spec.gpu.types) {
    candidates = spec.gpu.types.map((gpuType) => ({ gpuType }));
  } else if (obs.catalog) {
    candidates = catalogCandidates(obs.catalog);
  } else {
    return step({ type: 'readCatalog' });
  }
  const all = status.attempts ?? [];
  const attempts = attemptsOfThisTry(status);
  const next = nextCandidate(candidates, attempts);
  if (!next) {
    const retryable = retryableAfterTheWalk(attempts);
    if (retryable.length > 0) return waitForCapacity(ctx, spec, retryable);
  }
  if (!next || all.length >= maxAttempts) {
    const tried = [...new Set(attempts.map((a) => a.gpuType))].join(', ');
    if (candidates.length === 0) return fail(ctx, 'NoCapacity', 'no GPU type offered on this cloud matches gpu.auto (minVramGb, maxPricePerHour, gpu.count, dataCenterIds)');
    const message = `no GPU type could be provisioned (tried: ${tried || 'none'})`;
    // Pods that never got ready on any type are the platform's failure (a retry may find other hosts).
    const notReady = attempts.length > 0 && all.length < maxAttempts && attempts.some((a) => a.outcome === 'NotReady');
    return notReady ? failOrRetry(ctx, { by: 'platform' }, 'NoCapacity', message) : fail(ctx, 'NoCapacity', message);
  }
  const attemptNumber = all.length + 1;
  const attemptName = podName(obs.run.name, attemptNumber);
  const nth = currentTry(status);
  status.attempts = [...all, { name: attemptName, gpuType: next.gpuType, time: obs.now.toISOString(), outcome: 'Pending', ...(nth > 1 ? { try: nth } : {}) }];
  phase(ctx, 'Provisioning', 'Provisioning', `creating pod ${attemptName} on ${next.gpuType}`);
  return step({ type: 'createPod', attemptName, gpuType: next.gpuType, attemptNumber });
}

/** With gpu.auto and nothing in stock: how many out-of-stock types a capacity wait walks (each round sends one create per type). */
const outOfStockCandidates = 3;

/**
 * gpu.auto's types in stock, cheapest first; with none in stock, the cheapest few that fit anyway, so
 * the run waits for capacity (their refusals, rounds with backoff) instead of failing on a snapshot of stock.
 */
function catalogCandidates(catalog: GpuCandidate[]): GpuCandidate[] {
  const inStock = catalog.filter((candidate) => candidate.inStock !== false);
  return inStock.length > 0 ? inStock : catalog.slice(0, outOfStockCandidates);
}

const capacityWaitReason = (spec: RunpodRunSpec, until: number): string =>
  `waiting for capacity until ${new Date(until).toISOString()} (spec.limits.queueTimeoutSeconds ${spec.limits.queueTimeoutSeconds}s)`;

/** The outcomes of a type's latest attempt that make the type worth another round of the capacity wait. */
const waitableOutcomes = new Set(['NoCapacity', 'Failed']);

/**
 * The walk is over: the types whose latest attempt was refused for capacity, or whose create answers
 * were lost until we gave up (a 5xx storm, not the type's fault), are worth another round; a type
 * whose pod never got ready is spent. (A non-terminal 'Failed' attempt is always a lost answer: any
 * other failed create ends the run.)
 */
function retryableAfterTheWalk(attempts: NonNullable<RunpodRunStatus['attempts']>): NonNullable<RunpodRunStatus['attempts']> {
  const latest = new Map<string, NonNullable<RunpodRunStatus['attempts']>[number]>();
  for (const attempt of attempts) if (!isRefused(attempt)) latest.set(attempt.gpuType, attempt);
  return [...latest.values()].filter((a) => waitableOutcomes.has(a.outcome));
}

/**
 * No type is left to try and some are worth another round: nothing exists, so the run waits
 * (Pending/WaitingForCapacity) and those attempts are queued to be sent again, in place (same name,
 * same type), at the next round.
 */
function waitForCapacity(ctx: Context, spec: RunpodRunSpec, retryable: NonNullable<RunpodRunStatus['attempts']>): Step {
  const { obs, status } = ctx;
  const now = obs.now.getTime();
  status.waitingSince ??= obs.now.toISOString();
  const types = retryable.map((a) => a.gpuType).join(', ');
  const until = queueDeadline(status, now, spec.limits.queueTimeoutSeconds);
  if (now >= until) {
    return fail(ctx, 'NoCapacity', `no GPU type had capacity within spec.limits.queueTimeoutSeconds (${spec.limits.queueTimeoutSeconds}s) (tried: ${types})`);
  }
  const round = nextCapacityRound(obs, Date.parse(status.waitingSince));
  for (const attempt of retryable) attempt.retryAfter = round.toISOString();
  phase(ctx, 'Pending', 'WaitingForCapacity', `no capacity on ${types}; ${capacityWaitReason(spec, until)}, trying again at ${round.toISOString()}`);
  return wait(Math.min(round.getTime(), until) - now);
}

/** A round of the capacity wait: the queued attempts are sent again one by one, in order, once due. */
function sendQueuedForCapacity(ctx: Context, spec: RunpodRunSpec): Step | undefined {
  const { obs, status } = ctx;
  const attempts = status.attempts ?? [];
  const queued = attemptsOfThisTry(status).filter((a) => waitableOutcomes.has(a.outcome) && a.retryAfter !== undefined);
  if (queued.length === 0) return undefined;
  const now = obs.now.getTime();
  const until = queueDeadline(status, now, spec.limits.queueTimeoutSeconds);
  const types = queued.map((a) => a.gpuType).join(', ');
  if (now >= until) {
    return fail(ctx, 'NoCapacity', `no GPU type had capacity within spec.limits.queueTimeoutSeconds (${spec.limits.queueTimeoutSeconds}s) (tried: ${types})`);
  }
  const due = queued.find((a) => Date.parse(a.retryAfter ?? '') <= now);
  if (!due) {
    const next = Math.min(...queued.map((a) => Date.parse(a.retryAfter ?? '')));
    phase(ctx, 'Pending', 'WaitingForCapacity', `no capacity on ${types}; ${capacityWaitReason(spec, until)}, trying again at ${new Date(next).toISOString()}`);
    return wait(Math.min(next, until) - now);
  }
  due.outcome = 'Pending';
  due.time = obs.now.toISOString();
  delete due.retryAfter;
  delete due.message;
  phase(ctx, 'Pending', 'WaitingForCapacity', `creating pod ${due.name} on ${due.gpuType} again; ${capacityWaitReason(spec, until)}`);
  return step({ type: 'createPod', attemptName: due.name, gpuType: due.gpuType, attemptNumber: attempts.indexOf(due) + 1 });
}

/** The next GPU type: after a type without capacity or readiness, the following one; after a lost answer, the same. */
export function nextCandidate(candidates: GpuCandidate[], attempts: NonNullable<RunpodRunStatus['attempts']>): GpuCandidate | undefined {
  let index = 0;
  let lostOnSameType = 0;
  for (const attempt of attempts) {
    // A refused create (429, spend limit) says nothing about the type: it is sent again as it was.
    if (isRefused(attempt)) continue;
    const at = candidates.findIndex((c) => c.gpuType === attempt.gpuType);
    if (attempt.outcome === 'Failed' && at === index && lostOnSameType < lostCreateRetries) {
      lostOnSameType++;
      continue;
    }
    lostOnSameType = 0;
    if (at >= 0) index = Math.max(index, at + 1);
  }
  return candidates[index];
}

/** Runpod names are free text; ours are `<run>-<attempt>` so a person can tell them apart. */
export function podName(runName: string, attempt: number): string {
  return `${runName.slice(0, 60)}-${attempt}`;
}

export function podStatusFrom(pod: PodView, gpuType: string, obs: Observation, status: RunpodRunStatus): NonNullable<RunpodRunStatus['pod']> {
  const createdAt = pod.createdAt ?? obs.now.toISOString();
  const maxRuntimeMs = obs.spec.ok ? obs.spec.spec.limits.maxRuntimeSeconds * 1000 : 0;
  const runEnd = obs.spec.ok ? activeDeadlineMs(obs.spec.spec, status) ?? Infinity : Infinity;
  return {
    id: pod.id,
    name: pod.name,
    gpuType: pod.gpuType ?? gpuType,
    gpuCount: pod.gpuCount,
    dataCenterId: pod.dataCenterId,
    costPerHour: pod.costPerHour === undefined ? undefined : formatUsd(pod.costPerHour),
    createdAt,
    deadline: new Date(Math.min(Date.parse(createdAt) + maxRuntimeMs, runEnd)).toISOString(),
    state: pod.status,
  };
}
