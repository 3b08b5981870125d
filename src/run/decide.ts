// The pure heart of the reconciler: from what was observed, the status to write and the one next
// step. No I/O, no clock but obs.now: every rule here is unit-tested state by state.
//
// Invariants it keeps:
// - an attempt is in the status before its create is sent (the act writes status first);
// - no create while an earlier pod of the run may still bill (strays and a deleting pod come first);
// - a pod is forgotten only after its deletion is confirmed (404s and absence from a newer list);
// - absence is evidence, never a reason to delete by itself.
import { setCondition, setPhase, conditionIs, isTerminal, observeGeneration } from './conditions.ts';
import type { Action, Decision, Deletion, GpuCandidate, Observation, PodView, RunEvent, SpendFacts } from './model.ts';
import type { Phase, Reason, RunpodRunStatus } from '../api/status.ts';
import { skipCleanupAnnotation } from '../api/runpodrun.ts';
import type { RunpodRunSpec } from '../api/spec.ts';
import type { DeleteFailure } from '../pod/index.ts';
import { reasonOfDeleteRule, whatIsKnown } from './pod-ended.ts';
import { headroom, isRefused, judgeRefusedAttempt, nextCapacityRound, queueDeadline, retryAfterRefusal } from './waiting.ts';

/** Attempts a run may make before it gives up (bounded status size). */
const maxAttempts = 32;
/** Spacing between the looks that confirm a deleted pod is gone (after Runpod answered its delete). */
const lookSpacingMs = 2000;
/**
 * Spacing between the looks that judge a pod gone on its own (nobody here deleted it): Runpod's GET
 * can answer 404 for a live pod for a few seconds, so three 404s must span 20 s (as the reference does).
 */
const goneLookSpacingMs = 10_000;
/**
 * How long a deleted pod may stay in Runpod's list while every GET of it answers 404 (the list lags
 * behind deletes) before the GETs' word is taken: the run must not wait on a stale list forever.
 */
const deletedListLagToleranceMs = 5 * 60_000;
/** How long a new pod may be missing from Runpod's lists (API-NOTES S6: seconds) before absence is evidence. */
const newPodListLagToleranceMs = 60_000;
/**
 * How long after readiness the controller waits for the bootstrap's and the watchdog's verdicts: the
 * watchdog's probe takes at most 5 tries of 10 s, a period apart; past this (+ the margin) it is broken.
 */
const verdictBoundMs = 5 * 60_000;
/** How long a cancelled run may keep its pod to retrieve what results exist (at most retrieveGraceSeconds). */
const cancelRetrieveBoundMs = 10 * 60_000;
/** How often an unanswered ambiguous create may be retried on the same GPU type. */
const lostCreateRetries = 2;

interface Context {
  obs: Observation;
  status: RunpodRunStatus;
  events: RunEvent[];
}

export function decide(obs: Observation): Decision {
  const status = structuredClone(obs.status);
  observeGeneration(status, obs.run.generation);
  const ctx: Context = { obs, status, events: [] };
  updateCost(ctx);
  const decision = decideStep(ctx);
  // Again: the step may have ended the pod's life (deletedAt), which fixes the final cost.
  updateCost(ctx);
  const transition = transitionEvent(obs.status, status);
  return { ...decision, status, events: transition ? [...ctx.events, transition] : ctx.events };
}

/** The event a change of reason deserves (a Warning when the run failed). */
export function transitionEvent(before: RunpodRunStatus, after: RunpodRunStatus): RunEvent | undefined {
  if (after.reason === before.reason || !after.reason || !after.message) return undefined;
  const warning = after.phase === 'Failed' || after.reason === 'CleanupBlocked';
  return { type: warning ? 'Warning' : 'Normal', reason: after.reason, note: after.message };
}

type Step = Omit<Decision, 'status' | 'events'>;
const step = (action: Action, afterMs = 0): Step => ({ action, requeue: { afterMs } });
const wait = (afterMs: number): Step => ({ action: { type: 'none' }, requeue: { afterMs } });
const done: Step = { action: { type: 'none' }, requeue: 'none' };

function decideStep(ctx: Context): Step {
  const { obs, status } = ctx;
  if (obs.run.deleting) return cleanUpForDeletion(ctx);
  // The first status written already says Reconciling: kstatus (Flux, kpt) reads a status without
  // conditions as Current, i.e. done, before anything happened.
  if (status.phase === undefined) phase(ctx, 'Pending', 'Created', 'the controller picked up the run; nothing is rented yet');
  if (!obs.run.hasFinalizer) return step({ type: 'addFinalizer' });
  if (isTerminal(status.phase)) return afterTheEnd(ctx);
  if (!obs.spec.ok) return fail(ctx, 'InvalidSpec', obs.spec.message);
  const spec = obs.spec.spec;
  status.startTime ??= obs.now.toISOString();
  if (!obs.credentials.found) {
    if (everCreated(status)) return guardWithoutCredentials(ctx, spec, obs.credentials.message);
    phase(ctx, 'Pending', 'CredentialsMissing', obs.credentials.message);
    return { action: { type: 'none' }, requeue: 'backoff' };
  }
  if (!obs.jobInputs.ok && !everCreated(status)) {
    // Nothing is rented until everything the job needs exists.
    phase(ctx, 'Pending', 'CredentialsMissing', obs.jobInputs.message);
    return { action: { type: 'none' }, requeue: 'backoff' };
  }
  if (obs.sshSecretConflict) {
    phase(ctx, status.phase ?? 'Pending', 'SshSecretConflict', obs.sshSecretConflict);
    return { action: { type: 'none' }, requeue: 'backoff' };
  }
  if (!obs.sshKeysReady) return step({ type: 'ensureSshKeys' });
  if (!obs.pods) {
    if (obs.credentials.rejected) return fail(ctx, 'CredentialsRejected', 'Runpod rejected the API key (401) when listing pods');
    if (obs.credentials.insufficient) return fail(ctx, 'CredentialsInsufficient', obs.credentials.insufficient);
    return wait(1000);
  }

  adoptAfterAmbiguousCreate(ctx);
  adoptStoredResults(ctx);
  markStrays(ctx);
  // When the cancel was first seen (durable: its bound survives a restart).
  if (spec.cancel) setCondition(status, 'CancelRequested', 'True', 'Cancelled', 'spec.cancel is set', obs.run.generation, obs.now);
  if (spec.cancel && !cancelNeedsThePod(ctx, spec)) markCurrentPodForDeletion(ctx);
  const deleting = continueDeletions(ctx);
  if (deleting) return deleting;

  const pod = status.pod;
  const podAlive = pod?.id !== undefined && pod.state !== 'Deleted';
  if (status.results?.retrievedAt && (!podAlive || spec.keepPod)) return finish(ctx);
  if (spec.cancel && !podAlive) {
    return fail(ctx, 'Cancelled', status.results?.retrievedAt
      ? 'cancelled by spec.cancel; the results that existed were retrieved and the pod deleted'
      : 'cancelled by spec.cancel; the pod was deleted');
  }
  if (!podAlive) return provision(ctx, spec);
  return followPod(ctx, spec);
}

/**
 * Results the store holds verified while the status records none (the status write after the commit
 * was lost to a crash): they are this run's, so the run goes on as if that write had happened, rather
 * than ending ResultsUnverified once the watchdog deletes the marked pod.
 */
function adoptStoredResults(ctx: Context): void {
  const { obs, status } = ctx;
  const stored = obs.storedResults;
  if (!stored || status.results?.retrievedAt || !status.job?.finishedAt) return;
  applyRetrievalOutcome(obs, status, { kind: 'verified', ...stored });
}

/**
 * The credentials went while the run may have a pod (a create was sent): the run keeps its phase, and
 * the deadline (+ margin) and the cost cap still end it and delete the pod (with the last usable key,
 * when the act has one); nothing else happens until the key is back.
 */
function guardWithoutCredentials(ctx: Context, spec: RunpodRunSpec, message: string): Step {
  const { obs, status } = ctx;
  const pod = status.pod;
  phase(ctx, status.phase ?? 'Provisioning', 'CredentialsMissing', `${message}; the run keeps its pod and its limits until the key is back`);
  if (pod?.id && pod.state !== 'Deleted' && pod.state !== 'Deleting') {
    const cap = spec.limits.maxCostUsd;
    if (obs.now.getTime() > Date.parse(pod.deadline ?? '') + obs.settings.deadlineMarginMs) {
      fail(ctx, 'DeadlineExceeded', `the pod outlived spec.limits.maxRuntimeSeconds (${spec.limits.maxRuntimeSeconds}s) while the credentials were missing (${message}); deleted by the controller`);
    } else if (cap !== undefined && Number(status.estimatedCostUsd ?? 0) >= Number(cap)) {
      fail(ctx, 'CostCapReached', `the estimated spend ${status.estimatedCostUsd ?? '0'} USD reached spec.limits.maxCostUsd (${cap}) while the credentials were missing (${message}); deleted by the controller`);
    }
  }
  return continueDeletions(ctx) ?? { action: { type: 'none' }, requeue: 'backoff' };
}

/**
 * A cancelled run whose job started keeps its pod until what results exist are retrieved: a few tries,
 * and never longer than retrieveGraceSeconds or 10 minutes (the shorter) after the cancel was seen,
 * whatever happens meanwhile (SSH down, retrieval throwing): a cancel stops the billing.
 */
function cancelNeedsThePod(ctx: Context, spec: RunpodRunSpec): boolean {
  const { status, obs } = ctx;
  const since = Date.parse(status.conditions?.find((c) => c.type === 'CancelRequested')?.lastTransitionTime ?? obs.now.toISOString());
  const bound = Math.min(spec.limits.retrieveGraceSeconds * 1000, cancelRetrieveBoundMs);
  return conditionIs(status, 'PodReady') && status.job?.startedAt !== undefined
    && !status.results?.retrievedAt && obs.retrievalFailures < 3 && obs.now.getTime() <= since + bound;
}

/** Results verified and the pod gone (or kept): Succeeded on exit 0, JobFailed otherwise. */
function finish(ctx: Context): Step {
  const { status } = ctx;
  const code = status.job?.exitCode;
  const where = status.results?.location ?? '';
  const kept = status.pod?.state !== 'Deleted' ? ` (pod ${status.pod?.name ?? ''} kept: keepPod)` : '';
  if (ctx.obs.spec.ok && ctx.obs.spec.spec.cancel) return fail(ctx, 'Cancelled', `cancelled by spec.cancel; results retrieved to ${where}`);
  if (code === 0) {
    phase(ctx, 'Succeeded', 'Succeeded', `the job exited 0; ${status.results?.files ?? 0} verified result files in ${where}${kept}`);
    return done;
  }
  return fail(ctx, 'JobFailed', `the job exited with code ${code ?? 'unknown'}; results retrieved to ${where}${kept}`);
}

// --- deletion ---------------------------------------------------------------------------------

function cleanUpForDeletion(ctx: Context): Step {
  const { obs, status } = ctx;
  if (!obs.run.hasFinalizer) return done;
  // No create was ever sent (or the user accepts that only the watchdog bounds the cost): nothing to wait for.
  if (obs.run.skipCleanup || !everCreated(status)) return step({ type: 'removeFinalizer' });
  const missing = cleanupBlocker(obs);
  if (missing) {
    // Said once (the reason changes: an event) and then waited out with backoff, never dropped
    // silently: the pods may bill on, so only the user may let go.
    status.reason = 'CleanupBlocked';
    status.message = `the run is being deleted, but its pods cannot be deleted: ${missing}. Restore the key, `
      + `or let go without cleanup (the pod's watchdog still deletes it at its deadline): `
      + `kubectl annotate runpodrun ${obs.run.name} -n ${obs.run.namespace} ${skipCleanupAnnotation}=true`;
    return { action: { type: 'none' }, requeue: 'backoff' };
  }
  if (!obs.pods) return wait(1000);
  reviveIfListedAgain(ctx);
  markCurrentPodForDeletion(ctx);
  for (const pod of obs.pods.items) addStray(status, pod.id);
  if (status.reason === 'CleanupBlocked') status.reason = 'Deleting';
  status.message = 'the run is being deleted: deleting its pods';
  return continueDeletions(ctx) ?? step({ type: 'removeFinalizer' });
}

/** What keeps a deleted run from deleting its pods (no usable key), or undefined. */
function cleanupBlocker(obs: Observation): string | undefined {
  if (!obs.credentials.found) {
    return `${obs.credentials.message}, and this controller holds no earlier key of this run (it was restarted since, or never read one)`;
  }
  if (obs.credentials.rejected) return 'Runpod rejects the run\'s API key (401 when listing pods: revoked or wrong)';
  return obs.credentials.insufficient;
}

const everCreated = (status: RunpodRunStatus): boolean => (status.attempts?.length ?? 0) > 0;

/** After Succeeded/Failed nothing of ours may keep billing, except a kept pod. */
function afterTheEnd(ctx: Context): Step {
  const { obs, status } = ctx;
  if (!everCreated(status)) return done;
  // Without a list (credentials gone) a pending delete is still sent; only its confirmation waits.
  if (!obs.pods) return continueDeletions(ctx) ?? wait(1000);
  reviveIfListedAgain(ctx);
  const keep = obs.spec.ok && obs.spec.spec.keepPod && stillKept(ctx, obs.spec.spec);
  for (const pod of obs.pods.items) {
    if (!(keep && pod.id === status.pod?.id)) addStray(status, pod.id);
  }
  if (!keep) markCurrentPodForDeletion(ctx);
  return continueDeletions(ctx) ?? (keep && status.pod?.state !== 'Deleted' ? wait(obs.settings.pollIntervalMs) : done);
}

/**
 * keepPod keeps a pod after its job ended until the run is deleted, cancel is set, or its deadline
 * (+ margin) or cost cap passes: both are absolute, as on the pod (DESIGN.md §1). Says why when not.
 */
function stillKept(ctx: Context, spec: RunpodRunSpec): boolean {
  const { obs, status } = ctx;
  const pod = status.pod;
  if (!pod?.id || pod.state === 'Deleted' || pod.state === 'Deleting') return true;
  const cap = spec.limits.maxCostUsd;
  const why = spec.cancel ? 'spec.cancel is set'
    : obs.now.getTime() > Date.parse(pod.deadline ?? '') + obs.settings.deadlineMarginMs ? 'its deadline (spec.limits.maxRuntimeSeconds) passed'
      : cap !== undefined && Number(status.estimatedCostUsd ?? 0) >= Number(cap) ? `the estimated spend reached spec.limits.maxCostUsd (${cap})`
        : undefined;
  if (!why) return true;
  ctx.events.push({ type: 'Normal', reason: spec.cancel ? 'Cancelled' : why.startsWith('its deadline') ? 'DeadlineExceeded' : 'CostCapReached', note: `pod ${pod.name ?? ''} was kept (keepPod) and is deleted now: ${why}` });
  return false;
}

/**
 * A pod judged gone on its own (404s and lists, no delete of ours) that a list taken after the
 * verdict shows again was not gone: it is live again in the status (billing, so deleted or, if kept,
 * followed), never left to bill unseen. A pod whose delete this process sent and confirmed is not
 * revived by a list that lags behind the delete.
 */
function reviveIfListedAgain(ctx: Context): void {
  const { obs, status } = ctx;
  const pod = status.pod;
  if (!pod?.id || pod.state !== 'Deleted' || obs.deletions[pod.id]?.sentAt) return;
  const listed = obs.pods?.items.find((p) => p.id === pod.id);
  if (!listed || !obs.pods || obs.pods.listedAt.getTime() <= Date.parse(pod.deletedAt ?? '')) return;
  pod.state = listed.status;
  delete pod.deletedAt;
  ctx.events.push({ type: 'Warning', reason: 'PodLost', note: `pod ${pod.name ?? pod.id} was judged gone but a later list shows it again: it is ${obs.spec.ok && obs.spec.spec.keepPod ? 'kept (keepPod)' : 'deleted'}` });
}

function addStray(status: RunpodRunStatus, podId: string): void {
  if (podId === status.pod?.id) return;
  if (!status.strayPods?.includes(podId)) status.strayPods = [...(status.strayPods ?? []), podId];
}

/** Any pod of the run that is not its current pod bills for nothing. */
function markStrays(ctx: Context): void {
  for (const pod of ctx.obs.pods?.items ?? []) addStray(ctx.status, pod.id);
}

function markCurrentPodForDeletion(ctx: Context): void {
  const pod = ctx.status.pod;
  if (pod?.id && pod.state !== 'Deleted' && pod.state !== 'Deleting') pod.state = 'Deleting';
}

/**
 * Drives every pending deletion one step: send the delete, then confirm with spaced GETs that answer
 * 404 and a pod list, newer than the delete, that no longer shows the pod. Undefined when none is pending.
 */
function continueDeletions(ctx: Context): Step | undefined {
  const { obs, status } = ctx;
  const pending = [...(status.strayPods ?? [])];
  if (status.pod?.id && status.pod.state === 'Deleting') pending.push(status.pod.id);
  for (const podId of pending) {
    const next = deletionStep(obs, podId);
    if (next) return next;
    // Confirmed gone.
    status.strayPods = status.strayPods?.filter((id) => id !== podId);
    if (status.strayPods?.length === 0) delete status.strayPods;
    if (status.pod?.id === podId) {
      status.pod.state = 'Deleted';
      status.pod.deletedAt ??= obs.now.toISOString();
    }
  }
  return undefined;
}

function deletionStep(obs: Observation, podId: string): Step | undefined {
  const deletion: Deletion = obs.deletions[podId] ?? { notFoundLooks: 0 };
  const listedAt = obs.pods?.listedAt;
  const listed = obs.pods?.items.some((pod) => pod.id === podId) ?? false;
  if (!deletion.sentAt) return step({ type: 'deletePod', podId }, lookSpacingMs);
  const listIsNewer = listedAt !== undefined && listedAt > deletion.sentAt;
  if (deletion.notFoundLooks < obs.settings.goneLooks) return step({ type: 'lookForGonePod', podId }, lookSpacingMs);
  if (!listIsNewer) return wait(obs.settings.pollIntervalMs);
  if (listed) {
    // Every GET says gone but a newer list still shows the pod: Runpod's list lags behind deletes. The
    // list's word alone never sends another delete (a GET that finds the pod alive resets the looks,
    // and that resends it); the pod is looked at now and then, and past the tolerance the GETs win.
    if (obs.now.getTime() - deletion.sentAt.getTime() < deletedListLagToleranceMs) {
      return step({ type: 'lookForGonePod', podId }, obs.settings.pollIntervalMs);
    }
  }
  return undefined;
}

// --- provisioning -----------------------------------------------------------------------------

/** A create whose answer was lost may still have made a pod: adopt it by its exact name. */
function adoptAfterAmbiguousCreate(ctx: Context): void {
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
    status.pod = podStatusFrom(found, lost.gpuType, obs);
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
    && obs.pods.listedAt.getTime() >= Date.parse(lost.lostAt) + Math.max(obs.settings.ambiguousLookupMs, newPodListLagToleranceMs);
  if (lookedLongEnough) {
    lost.outcome = 'Failed';
    lost.message = 'the create answer was lost and no pod with its name appeared';
  }
}

function provision(ctx: Context, spec: RunpodRunSpec): Step {
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
  const last = status.attempts?.at(-1);
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
    candidates = obs.catalog;
  } else {
    return step({ type: 'readCatalog' });
  }
  const attempts = status.attempts ?? [];
  const next = nextCandidate(candidates, attempts);
  if (!next && attempts.length > 0 && attempts.every((a) => a.outcome === 'NoCapacity')) return waitForCapacity(ctx, spec);
  if (!next || attempts.length >= maxAttempts) {
    const tried = [...new Set(attempts.map((a) => a.gpuType))].join(', ');
    return fail(ctx, 'NoCapacity', candidates.length === 0
      ? 'no GPU type offered on this cloud matches gpu.auto (minVramGb, maxPricePerHour, gpu.count, dataCenterIds)'
      : `no GPU type could be provisioned (tried: ${tried || 'none'})`);
  }
  const attemptNumber = attempts.length + 1;
  const attemptName = podName(obs.run.name, attemptNumber);
  status.attempts = [...attempts, { name: attemptName, gpuType: next.gpuType, time: obs.now.toISOString(), outcome: 'Pending' }];
  phase(ctx, 'Provisioning', 'Provisioning', `creating pod ${attemptName} on ${next.gpuType}`);
  return step({ type: 'createPod', attemptName, gpuType: next.gpuType, attemptNumber });
}

const capacityWaitReason = (spec: RunpodRunSpec, until: number): string =>
  `waiting for capacity until ${new Date(until).toISOString()} (spec.limits.queueTimeoutSeconds ${spec.limits.queueTimeoutSeconds}s)`;

/**
 * Every type was refused for capacity: nothing exists, so the run waits (Pending/WaitingForCapacity)
 * and each refused attempt is queued to be sent again, in place (same name, same type), at the next round.
 */
function waitForCapacity(ctx: Context, spec: RunpodRunSpec): Step {
  const { obs, status } = ctx;
  const now = obs.now.getTime();
  status.waitingSince ??= obs.now.toISOString();
  const attempts = status.attempts ?? [];
  const types = [...new Set(attempts.map((a) => a.gpuType))].join(', ');
  const until = queueDeadline(status, now, spec.limits.queueTimeoutSeconds);
  if (now >= until) {
    return fail(ctx, 'NoCapacity', `no GPU type had capacity within spec.limits.queueTimeoutSeconds (${spec.limits.queueTimeoutSeconds}s) (tried: ${types})`);
  }
  const round = nextCapacityRound(obs, Date.parse(status.waitingSince));
  for (const attempt of attempts) attempt.retryAfter = round.toISOString();
  phase(ctx, 'Pending', 'WaitingForCapacity', `no capacity on ${types}; ${capacityWaitReason(spec, until)}, trying again at ${round.toISOString()}`);
  return wait(Math.min(round.getTime(), until) - now);
}

/** A round of the capacity wait: the queued attempts are sent again one by one, in order, once due. */
function sendQueuedForCapacity(ctx: Context, spec: RunpodRunSpec): Step | undefined {
  const { obs, status } = ctx;
  const attempts = status.attempts ?? [];
  const queued = attempts.filter((a) => a.outcome === 'NoCapacity' && a.retryAfter !== undefined);
  if (queued.length === 0) return undefined;
  const now = obs.now.getTime();
  const until = queueDeadline(status, now, spec.limits.queueTimeoutSeconds);
  const types = [...new Set(attempts.map((a) => a.gpuType))].join(', ');
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

function podStatusFrom(pod: PodView, gpuType: string, obs: Observation): NonNullable<RunpodRunStatus['pod']> {
  const createdAt = pod.createdAt ?? obs.now.toISOString();
  const maxRuntimeMs = obs.spec.ok ? obs.spec.spec.limits.maxRuntimeSeconds * 1000 : 0;
  return {
    id: pod.id,
    name: pod.name,
    gpuType: pod.gpuType ?? gpuType,
    gpuCount: pod.gpuCount,
    dataCenterId: pod.dataCenterId,
    costPerHour: pod.costPerHour === undefined ? undefined : formatUsd(pod.costPerHour),
    createdAt,
    deadline: new Date(Date.parse(createdAt) + maxRuntimeMs).toISOString(),
    state: pod.status,
  };
}

// --- a pod that exists ------------------------------------------------------------------------

function followPod(ctx: Context, spec: RunpodRunSpec): Step {
  const { obs, status } = ctx;
  const pod = status.pod!;
  const now = obs.now.getTime();
  const listed = obs.pods?.items.find((p) => p.id === pod.id);
  const deadline = Date.parse(pod.deadline ?? '');

  if (now > deadline + obs.settings.deadlineMarginMs) {
    pod.state = 'Deleting';
    return fail(ctx, 'DeadlineExceeded', `the pod outlived spec.limits.maxRuntimeSeconds (${spec.limits.maxRuntimeSeconds}s); deleted by the controller`);
  }
  if (!listed) return podMissing(ctx, deadline);
  pod.state = listed.status;
  pod.listedAt ??= obs.pods!.listedAt.toISOString();
  // The create answer may lack the price (or say 0): the lists' word keeps the cost and the cap honest.
  if (listed.costPerHour !== undefined && listed.costPerHour > 0 && pod.costPerHour !== formatUsd(listed.costPerHour)) {
    pod.costPerHour = formatUsd(listed.costPerHour);
    updateCost(ctx);
  }
  if (listed.status === 'EXITED' || listed.status === 'ERROR') return podStopped(ctx, listed.status, deadline);

  if (!conditionIs(status, 'PodReady')) {
    const age = now - Date.parse(pod.createdAt ?? obs.now.toISOString());
    if (age > spec.limits.readyTimeoutSeconds * 1000) {
      pod.state = 'Deleting';
      const attempt = status.attempts?.find((a) => a.podId === pod.id);
      if (attempt) {
        attempt.outcome = 'NotReady';
        attempt.message = `SSH did not answer with the pinned host key within ${spec.limits.readyTimeoutSeconds}s`;
      }
      phase(ctx, 'Provisioning', 'Provisioning', `pod ${pod.name} was not ready in time; deleting it before trying the next GPU type`);
      return step({ type: 'none' });
    }
    if (!listed.ssh) {
      phase(ctx, 'Provisioning', 'WaitingForSsh', `pod ${pod.name} is ${listed.status}; waiting for its SSH port`);
      return wait(Math.min(obs.settings.pollIntervalMs, 5000));
    }
    pod.sshHost = listed.ssh.host;
    pod.sshPort = listed.ssh.port;
    phase(ctx, 'Provisioning', 'WaitingForSsh', `pod ${pod.name}: waiting for SSH with the pinned host key`);
    return step({ type: 'probeSsh', podId: pod.id!, host: listed.ssh.host, port: listed.ssh.port }, 3000);
  }

  // Ports change when a pod resets: keep the endpoint current.
  if (listed.ssh) {
    pod.sshHost = listed.ssh.host;
    pod.sshPort = listed.ssh.port;
  }
  const graceOver = gracePassed(ctx, spec);
  if (graceOver) {
    pod.state = 'Deleting';
    return fail(ctx, ...graceOver);
  }
  const cap = spec.limits.maxCostUsd;
  if (cap !== undefined && status.estimatedCostUsd !== undefined && Number(status.estimatedCostUsd) >= Number(cap)) {
    pod.state = 'Deleting';
    return fail(ctx, 'CostCapReached', `the estimated spend ${status.estimatedCostUsd} USD reached spec.limits.maxCostUsd (${cap}); deleted by the controller`);
  }
  return followJob(ctx, spec);
}

/** When PodReady became True (the bounds below count from it). */
function readySince(status: RunpodRunStatus): number {
  const ready = status.conditions?.find((c) => c.type === 'PodReady' && c.status === 'True');
  return Date.parse(ready?.lastTransitionTime ?? '');
}

/**
 * The watchdog's graces, enforced by the controller too (+ its margin), whether or not SSH answers: a
 * pod whose watchdog is broken must not bill until the deadline. The boot grace counts from readiness
 * (the watchdog starts just before), the retrieve grace from the job's recorded end; a kept pod is
 * exempt from the retrieve grace (its deadline bounds it), as on the pod.
 */
function gracePassed(ctx: Context, spec: RunpodRunSpec): [Reason, string] | undefined {
  const { obs, status } = ctx;
  const now = obs.now.getTime();
  const margin = obs.settings.deadlineMarginMs;
  const name = status.pod?.name ?? '';
  if (!status.job?.startedAt && now > readySince(status) + spec.limits.bootGraceSeconds * 1000 + margin) {
    return ['BootTimeout', `no job started on pod ${name} within spec.limits.bootGraceSeconds (${spec.limits.bootGraceSeconds}s) of its readiness; deleted by the controller`];
  }
  const ended = Date.parse(status.job?.finishedAt ?? '');
  if (!spec.keepPod && !status.results?.retrievedAt && now > ended + spec.limits.retrieveGraceSeconds * 1000 + margin) {
    return ['ResultsUnverified', `the results of pod ${name} were not verified within spec.limits.retrieveGraceSeconds (${spec.limits.retrieveGraceSeconds}s) of the job's end; deleted by the controller`];
  }
  return undefined;
}

/** A ready pod: verdicts, keepPod, start, follow, cancel and retrieve, read from one SSH exec per poll. */
function followJob(ctx: Context, spec: RunpodRunSpec): Step {
  const { obs, status } = ctx;
  const pod = status.pod!;
  const state = obs.podState;
  if (!state) return wait(Math.min(obs.settings.pollIntervalMs, 5000));
  if (state.deleteFailed) return watchdogCouldNotDelete(ctx, state.deleteFailed);
  const bootFailure = state.runDirMissing ? 'the bootstrap never created the run directory'
    : state.bootstrap.status === 'failed' ? `the bootstrap failed: ${state.bootstrap.reason}`
      : state.watchdog.status === 'failed' ? `its watchdog cannot delete it (${state.watchdog.reason}); the job is not started` : undefined;
  if (bootFailure) {
    pod.state = 'Deleting';
    return fail(ctx, 'BootFailed', `pod ${pod.name}: ${bootFailure}`);
  }
  if (state.job.status === 'none' && (state.bootstrap.status === 'pending' || state.watchdog.status === 'pending')) {
    if (obs.now.getTime() > readySince(status) + verdictBoundMs + obs.settings.deadlineMarginMs) {
      pod.state = 'Deleting';
      const missing = state.bootstrap.status === 'pending' ? 'the bootstrap' : 'its watchdog';
      return fail(ctx, 'BootFailed', `pod ${pod.name}: no verdict from ${missing} within ${verdictBoundMs / 60_000} minutes of readiness (+ --deadline-margin); the job is not started and the pod is deleted`);
    }
    phase(ctx, 'Running', 'PodReady', `pod ${pod.name} is ready; waiting for its watchdog to prove it can delete the pod`);
    return wait(1000);
  }
  if (state.keep !== spec.keepPod) return step({ type: 'setKeep', keep: spec.keepPod });

  const job = (status.job ??= {});
  if (state.job.startedAt !== null) job.startedAt ??= new Date(state.job.startedAt * 1000).toISOString();
  if (job.startedAt) setCondition(status, 'JobStarted', 'True', 'JobStarted', `the job started on pod ${pod.name}`, obs.run.generation, obs.now);

  switch (state.job.status) {
    case 'none':
      if (spec.cancel) { pod.state = 'Deleting'; return step({ type: 'none' }); }
      if (spec.limits.maxCostUsd !== undefined && !(Number(pod.costPerHour ?? 0) > 0)) {
        // A cap nobody can enforce is no cap: the job waits for a price, the boot grace bounds the wait.
        phase(ctx, 'Running', 'PodReady', `pod ${pod.name} is ready, but Runpod has not reported its price: spec.limits.maxCostUsd (${spec.limits.maxCostUsd}) cannot be enforced, so the job is not started; the pod is deleted after spec.limits.bootGraceSeconds unless a price appears`);
        return wait(obs.settings.pollIntervalMs);
      }
      phase(ctx, 'Running', 'PodReady', `pod ${pod.name} is ready; starting the job`);
      return step({ type: 'startJob' });
    case 'starting':
    case 'running':
      if (spec.cancel) return step({ type: 'cancelJob' }, 2000);
      phase(ctx, 'Running', 'JobRunning', `the job is running on pod ${pod.name} (${pod.gpuType})`);
      return wait(obs.settings.pollIntervalMs);
    case 'lost':
      pod.state = 'Deleting';
      return fail(ctx, 'PodLost', `pod ${pod.name} restarted its container: the job's exit code is lost; ${whatIsKnown(status)}; the pod is deleted`);
    case 'exited': {
      job.exitCode = state.job.exitCode ?? undefined;
      if (obs.status.job?.exitCode === undefined && job.exitCode !== 0) {
        // The log is on the pod, which goes once the results are in: its end goes into an event now.
        const tail = state.logTail.trimEnd().split('\n').slice(-10).join('\n');
        ctx.events.push({ type: 'Warning', reason: 'JobFailed', note: `the job exited with code ${job.exitCode ?? 'unknown'}; last lines of its log:\n${tail}` });
      }
      if (state.job.endedAt !== null) job.finishedAt ??= new Date(state.job.endedAt * 1000).toISOString();
      // A transfer in the pool: looked at again after a poll (the pool asks for a reconcile when it ends).
      const transferring = obs.transfer && obs.transfer.state !== 'settled' ? obs.transfer : undefined;
      const slot = transferring?.state === 'queued' ? `; waiting for a transfer slot (${transferring.ahead} ahead, --max-concurrent-transfers)` : '';
      if (obs.retrievalFailures > 0) {
        // The last attempt's findings stay the message: what was missing, different or refused is what the user acts on.
        const found = status.reason === 'ResultsUnverified' ? status.message : undefined;
        phase(ctx, 'Retrieving', 'ResultsUnverified', found ?? `the results could not be verified yet (try ${obs.retrievalFailures}); the pod stays for spec.limits.retrieveGraceSeconds`);
        return step({ type: 'retrieveResults' }, transferring ? obs.settings.pollIntervalMs : Math.min(60_000, 2000 * 2 ** obs.retrievalFailures));
      }
      phase(ctx, 'Retrieving', 'Retrieving', `the job exited with code ${job.exitCode ?? 'unknown'}; retrieving and verifying its results${slot}`);
      return step({ type: 'retrieveResults' }, transferring ? obs.settings.pollIntervalMs : 0);
    }
  }
}

/** The current pod is not in the list: gone on its own (watchdog, host failure) or a listing lag. */
function podMissing(ctx: Context, deadline: number): Step {
  const { obs, status } = ctx;
  const pod = status.pod!;
  const unlisted = !pod.listedAt && !conditionIs(status, 'PodReady') ? neverListedYet(ctx) : undefined;
  if (unlisted) return unlisted;
  const listedAfterCreate = obs.pods !== undefined && obs.pods.listedAt.getTime() > Date.parse(pod.createdAt ?? '') + obs.settings.ambiguousLookupMs;
  if (!listedAfterCreate) return wait(obs.settings.pollIntervalMs);
  const evidence = obs.deletions[pod.id!];
  const sinceLook = evidence?.lookedAt ? obs.now.getTime() - evidence.lookedAt.getTime() : Infinity;
  if ((evidence?.notFoundLooks ?? 0) < obs.settings.goneLooks) {
    // Spaced in time, not by the requeue alone: any event may wake the reconcile sooner.
    if (sinceLook < goneLookSpacingMs) return wait(goneLookSpacingMs - sinceLook);
    return step({ type: 'lookForGonePod', podId: pod.id! }, goneLookSpacingMs);
  }
  // The last word is a list taken after the last 404 (one that shows the pod wipes the 404s).
  if (evidence?.lookedAt && obs.pods!.listedAt <= evidence.lookedAt) return wait(Math.min(obs.settings.pollIntervalMs, 5000));
  pod.state = 'Deleted';
  pod.deletedAt ??= obs.now.toISOString();
  return fail(ctx, ...whyThePodWent(ctx, deadline));
}

/**
 * EXITED or ERROR (openapi-v2.json PodStatus): its container is gone (stopped by someone, stopped by
 * its watchdog whose key may not delete it, or broken), but its disk bills until it is deleted: at once.
 */
function podStopped(ctx: Context, state: 'EXITED' | 'ERROR', deadline: number): Step {
  const { status } = ctx;
  const pod = status.pod!;
  pod.state = 'Deleting';
  if (!conditionIs(status, 'PodReady')) {
    const attempt = status.attempts?.find((a) => a.podId === pod.id);
    if (attempt) {
      attempt.outcome = 'NotReady';
      attempt.message = `the pod went ${state} before SSH answered with the pinned host key`;
    }
    phase(ctx, 'Provisioning', 'Provisioning', `pod ${pod.name} went ${state} before it was ready; deleting it before trying the next GPU type`);
    return step({ type: 'none' });
  }
  const [reason, message] = whyThePodWent(ctx, deadline, state);
  return fail(ctx, reason, `${message}; the controller deletes it`);
}

/** The watchdog wanted the pod gone and could not delete it (.pod/watchdog.delete): the controller does, now. */
function watchdogCouldNotDelete(ctx: Context, failure: DeleteFailure): Step {
  const { status } = ctx;
  const pod = status.pod!;
  pod.state = 'Deleting';
  const reason = reasonOfDeleteRule(failure, status);
  const what = `pod ${pod.name}: its watchdog could not delete it (${failure.rule}: ${failure.detail}); deleted by the controller`;
  if (reason === 'Succeeded') {
    phase(ctx, 'Retrieving', 'Retrieving', what);
    return step({ type: 'none' });
  }
  return fail(ctx, reason, `${what}; ${whatIsKnown(status)}`);
}

/**
 * A created pod no list has shown yet, younger than the tolerance: Runpod lists (and may even GET) a
 * new pod only after a while, so its absence proves nothing yet; it is neither judged gone nor created
 * again. Past the tolerance the usual evidence decides (a pod that never existed, or one its watchdog
 * deleted while the controller was away).
 */
function neverListedYet(ctx: Context): Step | undefined {
  const { obs, status } = ctx;
  const pod = status.pod!;
  const age = obs.now.getTime() - Date.parse(pod.createdAt ?? obs.now.toISOString());
  if (age > newPodListLagToleranceMs) return undefined;
  phase(ctx, 'Provisioning', 'WaitingForSsh', `pod ${pod.name} (${pod.id}) was created; waiting for Runpod to list it`);
  return wait(Math.min(obs.settings.pollIntervalMs, 5000));
}

/**
 * The watchdog's reasons, judged from what the status knows: deadline, cost cap, boot grace, retrieve
 * grace; else PodLost with what is known. `how`: the pod disappeared, or went EXITED / ERROR.
 */
function whyThePodWent(ctx: Context, deadline: number, how: 'disappeared' | 'EXITED' | 'ERROR' = 'disappeared'): [Reason, string] {
  const { obs, status } = ctx;
  const limits = obs.spec.ok ? obs.spec.spec.limits : undefined;
  const now = obs.now.getTime();
  const name = status.pod?.name ?? '';
  // A watchdog whose key may not delete stops the pod instead: EXITED.
  const by = how === 'disappeared' ? 'was deleted by its watchdog'
    : how === 'EXITED' ? 'went EXITED (a watchdog whose key may not delete stops its pod)' : 'went ERROR';
  // The watchdog's deadline was counted from the create request (attempt.time), a moment before Runpod's createdAt.
  const attempt = status.attempts?.find((a) => a.podId === status.pod?.id);
  const watchdogDeadline = attempt && limits ? Math.floor(Date.parse(attempt.time) / 1000) * 1000 + limits.maxRuntimeSeconds * 1000 : deadline;
  if (now >= Math.min(deadline, watchdogDeadline)) return ['DeadlineExceeded', `pod ${name} reached its deadline (spec.limits.maxRuntimeSeconds) and ${by}`];
  if (limits?.maxCostUsd !== undefined && Number(status.estimatedCostUsd ?? 0) >= Number(limits.maxCostUsd) * 0.9) {
    return ['CostCapReached', `pod ${name} reached spec.limits.maxCostUsd (${limits.maxCostUsd}) and ${by}`];
  }
  if (limits && !status.job?.startedAt && now >= Date.parse(status.pod?.createdAt ?? '') + limits.bootGraceSeconds * 1000) {
    return ['BootTimeout', `no job started on pod ${name} within spec.limits.bootGraceSeconds and it ${by}`];
  }
  if (limits && status.job?.finishedAt && !status.results?.retrievedAt) {
    return ['ResultsUnverified', `the results of pod ${name} were not retrieved within spec.limits.retrieveGraceSeconds and it ${by}`];
  }
  const lost = how === 'disappeared' ? 'disappeared from Runpod' : `went ${how}`;
  return ['PodLost', `pod ${name} ${lost} before the run ended; ${whatIsKnown(status)}`];
}

// --- outcomes of actions (pure, applied by act to the status it wrote) ------------------------

export type CreateOutcome =
  | { kind: 'created'; pod: PodView }
  | { kind: 'capacity'; message: string }
  /** lostAt: when the call ended without a usable answer (after the POST, not before it). */
  | { kind: 'ambiguous'; message: string; lostAt: Date }
  | { kind: 'failed'; reason: 'InsufficientBalance' | 'InvalidSpec' | 'CredentialsRejected' | 'CredentialsInsufficient'; message: string }
  /** A 429: nothing was created; sent again after Retry-After. */
  | { kind: 'rate-limited'; message: string; retryAfterMs?: number | undefined }
  /** The account spend limit: nothing was created; the run waits for room (figures as far as known). */
  | { kind: 'spend-limit'; message: string; spend?: SpendFacts | undefined };

export function applyCreateOutcome(obs: Observation, status: RunpodRunStatus, attemptName: string, outcome: CreateOutcome): void {
  const attempt = status.attempts?.find((a) => a.name === attemptName);
  if (!attempt) return;
  const ctx: Context = { obs, status, events: [] };
  switch (outcome.kind) {
    case 'created':
      attempt.outcome = 'Created';
      attempt.podId = outcome.pod.id;
      delete attempt.message;
      delete status.waitingSince;
      retireCurrentPod(status);
      // The capacity wait is over: nothing stays queued to be sent again.
      for (const other of status.attempts ?? []) delete other.retryAfter;
      status.pod = podStatusFrom(outcome.pod, attempt.gpuType, obs);
      phase(ctx, 'Provisioning', 'WaitingForSsh', `pod ${outcome.pod.name} (${outcome.pod.id}) created on ${attempt.gpuType}`);
      return;
    case 'capacity':
      attempt.outcome = 'NoCapacity';
      attempt.message = outcome.message;
      return;
    case 'ambiguous':
      attempt.outcome = 'Ambiguous';
      attempt.message = outcome.message;
      attempt.lostAt = outcome.lostAt.toISOString();
      return;
    case 'rate-limited':
      attempt.outcome = 'RateLimited';
      attempt.message = outcome.message;
      attempt.retryAfter = retryAfterRefusal(obs, 'rate-limited', outcome.retryAfterMs, undefined).toISOString();
      phase(ctx, 'Pending', 'RateLimited', `Runpod's rate limit refused the create of pod ${attempt.name}; sending it again at ${attempt.retryAfter} (Retry-After)`);
      return;
    case 'spend-limit': {
      const spend = { ...obs.spend, ...outcome.spend };
      attempt.outcome = 'SpendLimited';
      attempt.message = outcome.message;
      attempt.retryAfter = retryAfterRefusal(obs, 'spend-limit', undefined, spend).toISOString();
      status.waitingSince ??= obs.now.toISOString();
      phase(ctx, 'Pending', 'SpendLimitReached', `Runpod refused pod ${attempt.name} under the account spend limit (${headroom(spend)}); waiting for running pods to free room`);
      return;
    }
    case 'failed':
      attempt.outcome = 'Failed';
      attempt.message = outcome.message;
      fail(ctx, outcome.reason, outcome.message);
  }
}

export type ProbeOutcome = { kind: 'ready' } | { kind: 'untrusted'; message: string } | { kind: 'notYet'; message: string };

export function applyProbeOutcome(obs: Observation, status: RunpodRunStatus, outcome: ProbeOutcome): void {
  const ctx: Context = { obs, status, events: [] };
  const pod = status.pod;
  if (!pod) return;
  if (outcome.kind === 'ready') {
    setCondition(status, 'PodReady', 'True', 'PodReady', `SSH answered with the pinned host key on ${pod.sshHost}:${pod.sshPort}`, obs.run.generation, obs.now);
    phase(ctx, 'Running', 'PodReady', `pod ${pod.name} is ready (${pod.gpuType})`);
  } else if (outcome.kind === 'untrusted') {
    // Images often start an sshd of their own (own host keys) that answers until the bootstrap's
    // takes port 22 over: nothing is sent to it, and the pinned key is waited for until
    // readyTimeoutSeconds, after which followPod deletes the pod and tries the next GPU type.
    phase(ctx, 'Provisioning', 'WaitingForSsh', `pod ${pod.name}: SSH answers with a host key that is not the pinned one (trusted with nothing; waiting for the pinned key): ${outcome.message}`);
  }
}

export type RetrievalOutcome =
  | { kind: 'verified'; files: number; bytes: number; location: string; verifiedAt: Date }
  | { kind: 'unverified'; message: string }
  | { kind: 'tooLarge'; message: string };

export function applyRetrievalOutcome(obs: Observation, status: RunpodRunStatus, outcome: RetrievalOutcome): void {
  const ctx: Context = { obs, status, events: [] };
  if (outcome.kind === 'unverified') {
    phase(ctx, 'Retrieving', 'ResultsUnverified', `results not verified (try ${obs.retrievalFailures + 1}): ${outcome.message}; retrying, the pod stays for spec.limits.retrieveGraceSeconds`);
    return;
  }
  if (outcome.kind === 'tooLarge') {
    fail(ctx, 'ResultsTooLarge', `${outcome.message}; nothing was retrieved and the pod is deleted`);
    return;
  }
  // Stamped when verified: a large retrieval ends long after the reconcile began.
  status.results = { files: outcome.files, bytes: outcome.bytes, location: outcome.location, retrievedAt: outcome.verifiedAt.toISOString() };
  setCondition(status, 'ResultsRetrieved', 'True', 'ResultsRetrieved', `${outcome.files} files (${outcome.bytes} bytes) verified in ${outcome.location}`, obs.run.generation, outcome.verifiedAt);
  const keep = obs.spec.ok && obs.spec.spec.keepPod;
  if (!keep && status.pod) status.pod.state = 'Deleting';
  phase(ctx, 'Retrieving', 'Retrieving', keep ? 'results verified; the pod is kept (keepPod)' : 'results verified; deleting the pod');
}

// --- helpers ----------------------------------------------------------------------------------

function phase(ctx: Context, value: Phase, reason: Reason, message: string): void {
  setPhase(ctx.status, value, reason, message, ctx.obs.run.generation, ctx.obs.now);
}

function fail(ctx: Context, reason: Reason, message: string): Step {
  phase(ctx, 'Failed', reason, message);
  if (ctx.status.pod?.id && ctx.status.pod.state !== 'Deleted') markCurrentPodForDeletion(ctx);
  return step({ type: 'none' });
}

/** Every pod of the run counts: the earlier attempts' recorded spend plus the current pod's so far. */
function updateCost(ctx: Context): void {
  const { status } = ctx;
  const earlier = (status.attempts ?? []).filter((a) => a.costUsd !== undefined && a.podId !== status.pod?.id);
  const current = podCost(status.pod, ctx.obs.now);
  if (current === undefined && earlier.length === 0) return;
  status.estimatedCostUsd = formatUsd(earlier.reduce((sum, a) => sum + Number(a.costUsd), current ?? 0));
}

function podCost(pod: RunpodRunStatus['pod'], now: Date): number | undefined {
  if (!pod?.createdAt || pod.costPerHour === undefined) return undefined;
  const end = pod.deletedAt ? Date.parse(pod.deletedAt) : now.getTime();
  return Number(pod.costPerHour) * Math.max(0, end - Date.parse(pod.createdAt)) / 3_600_000;
}

/** Before a new pod replaces the current one, its final spend goes into its attempt (exact, not rounded). */
function retireCurrentPod(status: RunpodRunStatus): void {
  const pod = status.pod;
  const attempt = pod?.id ? status.attempts?.find((a) => a.podId === pod.id) : undefined;
  const cost = podCost(pod, new Date(pod?.deletedAt ?? pod?.createdAt ?? 0));
  if (attempt && cost !== undefined) attempt.costUsd = cost.toFixed(6);
}

/** Cents: finer would rewrite the status on every poll for no reader's benefit. */
function formatUsd(value: number): string {
  return value.toFixed(2);
}
