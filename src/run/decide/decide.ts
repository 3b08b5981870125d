// The pure heart of the reconciler: from what was observed, the status to write and the one next
// step. No I/O, no clock but obs.now: every rule here is unit-tested state by state.
//
// Invariants it keeps:
// - an attempt is in the status before its create is sent (the act writes status first);
// - no create while an earlier pod of the run may still bill (strays and a deleting pod come first);
// - a pod is forgotten only after its deletion is confirmed (404s and absence from a newer list);
// - absence is evidence, never a reason to delete by itself.
//
// This file is the ordered chain of checks; the rules themselves live by concern in decide-*.ts
// (provisioning, following, pod-gone, deletion, outcomes; step and cost are what they share).
import { setCondition, conditionIs, isTerminal, observeGeneration } from './conditions.ts';
import type { Decision, Observation, RunEvent } from './model.ts';
import type { Reason, RunpodRunStatus } from '../../api/status.ts';
import type { RunpodRunSpec } from '../../api/spec.ts';
import { continueDeletions, afterTheEnd, cleanUpForDeletion, markStrays } from './deletion.ts';
import { adoptAfterAmbiguousCreate, provision } from './provisioning.ts';
import { followJobOverSsh, followPod } from './following.ts';
import { applyRetrievalOutcome } from './learn.ts';
import { updateCost } from './cost.ts';
import { activeDeadlineMs } from './retry.ts';
import { done, everCreated, fail, isLive, markCurrentPodForDeletion, phase, step, wait, type Context, type Step } from './step.ts';

export { applyCreateOutcome, applyProbeOutcome, applyRetrievalOutcome, learn } from './learn.ts';
export type { CreateOutcome, Outcome, ProbeOutcome, RetrievalOutcome } from './outcome.ts';
export { nextCandidate, podName } from './provisioning.ts';
export { placement } from './network-volume.ts';
export { activeDeadlineMs } from './retry.ts';
export { pendingDeletions } from './deletion.ts';

export function decide(obs: Observation): Decision {
  const status = structuredClone(obs.status);
  observeGeneration(status, obs.run.generation);
  const ctx: Context = { obs, status, events: [] };
  updateCost(ctx);
  const decision = decideStep(ctx);
  // Again: the step may have ended the pod's life (deletedAt), which fixes the final cost.
  updateCost(ctx);
  const transition = transitionEvent(obs.status, status);
  const applied = ctx.appliedRetrieval ? { appliedRetrieval: ctx.appliedRetrieval } : {};
  return { ...decision, status, events: transition ? [...ctx.events, transition] : ctx.events, ...applied };
}

/** The event a change of reason deserves (a Warning when the run failed). */
export function transitionEvent(before: RunpodRunStatus, after: RunpodRunStatus): RunEvent | undefined {
  if (after.reason === before.reason || !after.reason || !after.message) return undefined;
  const warning = after.phase === 'Failed' || after.reason === 'CleanupBlocked';
  return { type: warning ? 'Warning' : 'Normal', reason: after.reason, note: after.message };
}

function decideStep(ctx: Context): Step {
  const { obs, status } = ctx;
  if (obs.run.deleting) return cleanUpForDeletion(ctx);
  // The first status written already says Reconciling: kstatus (Flux, kpt) reads a status without
  // conditions as Current, i.e. done, before anything happened.
  if (status.phase === undefined) phase(ctx, 'Pending', 'Created', 'the controller picked up the run; nothing is rented yet');
  // kubectl prints an absent column as <none>: RETRIES says 0 from the start.
  status.retries ??= 0;
  // The finalizer guards a pod: a run that never sent a create is judged on its inputs first, so a bad
  // spec or key is the first status its user sees, however long the queue before its next pass.
  if (!obs.run.hasFinalizer && everCreated(status)) return step({ type: 'addFinalizer' });
  if (isTerminal(status.phase)) return afterTheEnd(ctx);
  if (!obs.spec.ok) return fail(ctx, 'InvalidSpec', obs.spec.message);
  const spec = obs.spec.spec;
  status.startTime ??= obs.now.toISOString();
  if (!obs.credentials.found) {
    const reason = obs.credentials.invalid ? 'CredentialsInvalid' : 'CredentialsMissing';
    if (everCreated(status)) return guardWithoutCredentials(ctx, spec, { reason, cause: obs.credentials.message, until: 'until the key is back' });
    phase(ctx, 'Pending', reason, obs.credentials.message);
    return { action: { type: 'none' }, requeue: 'backoff' };
  }
  if (!obs.jobInputs.ok && !everCreated(status)) {
    if (obs.jobInputs.invalid) return fail(ctx, 'InvalidSpec', obs.jobInputs.message);
    // Nothing is rented until everything the job needs exists.
    phase(ctx, 'Pending', 'CredentialsMissing', obs.jobInputs.message);
    return { action: { type: 'none' }, requeue: 'backoff' };
  }
  if (!obs.run.hasFinalizer) return step({ type: 'addFinalizer' });
  if (obs.sshSecretConflict) {
    phase(ctx, status.phase ?? 'Pending', 'SshSecretConflict', obs.sshSecretConflict);
    return { action: { type: 'none' }, requeue: 'backoff' };
  }
  if (!obs.sshKeysReady) return step({ type: 'ensureSshKeys' });
  const refusal = listRefusal(obs.credentials);
  // The account's last list was refused. A fresh observer has no list at all; one that had accepted lists
  // keeps the last, which no longer ages: a run with a pod is judged the same way in both cases.
  if (!obs.pods || (refusal && everCreated(status))) {
    if (!refusal) return wait(1000);
    // Only a run that never created a pod ends on the first refusal: one with a pod keeps it (and its
    // guards) until the refusal is confirmed, as a fresh observer's first 401 may be a blip.
    const refused = obs.credentials.refused;
    if (!everCreated(status) || refused?.confirmed !== false) return fail(ctx, refusal.reason, refusal.message);
    const seen = `${refused.lists} refused pod list${refused.lists === 1 ? '' : 's'} since ${refused.since.toISOString()}`;
    return guardWithoutCredentials(ctx, spec, {
      reason: refusal.reason, cause: `${refusal.message} (${seen})`,
      until: 'until Runpod accepts the key again or the refusal is confirmed (refused lists over at least a minute)',
    }, wait(obs.settings.pollIntervalMs));
  }

  adoptAfterAmbiguousCreate(ctx);
  adoptStoredResults(ctx);
  applySettledRetrieval(ctx);
  markStrays(ctx);
  // When the cancel was first seen (durable: its bound survives a restart).
  if (spec.cancel) setCondition(status, 'CancelRequested', 'True', 'Cancelled', 'spec.cancel is set', obs.run.generation, obs.now);
  if (spec.cancel && !cancelNeedsThePod(ctx, spec)) markCurrentPodForDeletion(ctx);
  const deleting = continueDeletions(ctx);
  if (deleting) return deleting;

  const pod = status.pod;
  const podAlive = isLive(pod);
  if (status.results?.retrievedAt && (!podAlive || spec.keepPod)) return finish(ctx);
  if (spec.cancel && !podAlive) {
    return fail(ctx, 'Cancelled', status.results?.retrievedAt
      ? 'cancelled by spec.cancel; the results that existed were retrieved and the pod deleted'
      : 'cancelled by spec.cancel; the pod was deleted');
  }
  const runEnd = activeDeadlineMs(spec, status);
  // A live pod's deadline is never later (its watchdog has it): the controller's margin applies as there.
  if (runEnd !== undefined && obs.now.getTime() > runEnd + (podAlive ? obs.settings.deadlineMarginMs : 0)) {
    const pending = podAlive ? '; deleted by the controller' : '';
    return fail(ctx, 'DeadlineExceeded', `the run outlived spec.limits.activeDeadlineSeconds (${spec.limits.activeDeadlineSeconds ?? ''}s after its first create, ${status.attempts?.[0]?.time ?? ''})${pending}`);
  }
  if (!isLive(pod)) return provision(ctx, spec);
  return followPod({ ...ctx, pod, list: obs.pods }, spec);
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
 * A retrieval that ended in the transfer pool is applied before anything looks at the pod: the watchdog
 * deletes a pod once its results are marked retrieved, so the pod may be gone, and what was verified
 * must count. The rest of the pass goes on from there (verified: the pod's delete; failed: the next
 * try's backoff), seeing the failed try counted as the next reconcile would.
 */
function applySettledRetrieval(ctx: Context): void {
  const { obs, status } = ctx;
  const outcome = obs.retrieval;
  if (!outcome || ctx.appliedRetrieval || status.results?.retrievedAt) return;
  applyRetrievalOutcome(obs, status, outcome);
  ctx.appliedRetrieval = outcome;
  if (outcome.kind !== 'verified') ctx.obs = { ...obs, retrievalFailures: obs.retrievalFailures + 1, lastRetrievalFailureAt: obs.now };
}

/** Runpod refused the account's pod list: 401 (the key is wrong or revoked) or 403 (it lacks a scope). */
function listRefusal(credentials: Observation['credentials']): { reason: 'CredentialsRejected' | 'CredentialsInsufficient'; message: string } | undefined {
  if (!credentials.found) return undefined;
  if (credentials.rejected) return { reason: 'CredentialsRejected', message: 'Runpod rejected the API key (401) when listing pods' };
  if (credentials.insufficient) return { reason: 'CredentialsInsufficient', message: credentials.insufficient };
  return undefined;
}

/**
 * The key cannot be used (gone, malformed, or refused and not confirmed yet) while the run may have
 * a pod (a create was sent): the run keeps its phase, and the deadline (+ margin) and the cost cap
 * still end it and delete the pod (with the last usable key, when the act has one). What needs SSH
 * only goes on (followJobOverSsh: a job's end and its retrieval); nothing else happens until the key
 * is usable (`idle`: when to look again).
 */
function guardWithoutCredentials(ctx: Context, spec: RunpodRunSpec, unusable: { reason: Reason; cause: string; until: string }, idle: Step = { action: { type: 'none' }, requeue: 'backoff' }): Step {
  const { obs, status } = ctx;
  const pod = status.pod;
  const { reason, cause, until } = unusable;
  const message = `${cause}; the run keeps its pod and its limits ${until}`;
  phase(ctx, status.phase ?? 'Provisioning', reason, message);
  if (!isLive(pod) || pod.state === 'Deleting') return continueDeletions(ctx) ?? idle;
  const cap = spec.limits.maxCostUsd;
  // The limit is the cause; the key is a fact of the moment (it may have failed only just now).
  const meanwhile = `; deleted by the controller (when this was checked, the key could not be used: ${cause})`;
  const limit: [Reason, string] | undefined = obs.now.getTime() > Date.parse(pod.deadline ?? '') + obs.settings.deadlineMarginMs
    ? ['DeadlineExceeded', `the pod outlived spec.limits.maxRuntimeSeconds (${spec.limits.maxRuntimeSeconds}s)${meanwhile}`]
    : cap !== undefined && Number(status.estimatedCostUsd ?? 0) >= Number(cap)
      ? ['CostCapReached', `the estimated spend ${status.estimatedCostUsd ?? '0'} USD reached spec.limits.maxCostUsd (${cap})${meanwhile}`]
      : undefined;
  if (limit) {
    fail(ctx, ...limit);
    return continueDeletions(ctx) ?? idle;
  }
  // What the store holds verified counts here too: a retrieval started over it would share its
  // staging directory and replace it when it commits.
  adoptStoredResults(ctx);
  applySettledRetrieval(ctx);
  if (status.results?.retrievedAt && spec.keepPod) return finish(ctx);
  const following = followJobOverSsh({ ...ctx, pod }, spec);
  if (!following) return idle;
  // The key is what the user must act on: it stays the reason; what SSH does meanwhile is said after it.
  if (!isTerminal(status.phase) && status.reason !== reason) phase(ctx, status.phase ?? 'Running', reason, `${message}; meanwhile over SSH: ${status.message ?? ''}`);
  return following;
}

/**
 * A cancelled run whose job started keeps its pod until what results exist are retrieved: a few tries,
 * and never longer than retrieveGraceSeconds or 10 minutes (the shorter) after the cancel was seen,
 * whatever happens meanwhile (SSH down, retrieval throwing): a cancel stops the billing.
 */
function cancelNeedsThePod(ctx: Context, spec: RunpodRunSpec): boolean {
  const { status, obs } = ctx;
  const since = Date.parse(status.conditions?.find((c) => c.type === 'CancelRequested')?.lastTransitionTime ?? obs.now.toISOString());
  const bound = Math.min(spec.limits.retrieveGraceSeconds * 1000, obs.settings.timings.cancelRetrieveBoundMs);
  return conditionIs(status, 'PodReady') && status.job?.startedAt !== undefined
    && !status.results?.retrievedAt && obs.retrievalFailures < 3 && obs.now.getTime() <= since + bound;
}

/** Results verified and the pod gone (or kept): Succeeded on exit 0, JobFailed otherwise. */
function finish(ctx: Context): Step {
  const { status } = ctx;
  const code = status.job?.exitCode;
  const where = status.results?.location ?? '';
  const kept = status.pod?.state !== 'Deleted' ? ` (pod ${status.pod?.name ?? ''} kept while spec.keepPod is set)` : '';
  if (ctx.obs.spec.ok && ctx.obs.spec.spec.cancel) return fail(ctx, 'Cancelled', `cancelled by spec.cancel; results retrieved to ${where}`);
  if (code === 0) {
    phase(ctx, 'Succeeded', 'Succeeded', `the job exited 0; ${status.results?.files ?? 0} verified result files in ${where}${kept}`);
    return done;
  }
  return fail(ctx, 'JobFailed', `the job exited with code ${code ?? 'unknown'}; results retrieved to ${where}${kept}`);
}
