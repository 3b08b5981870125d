// A current pod that is no longer there or no longer runs: missing from the list, EXITED or ERROR
// (started again when it stopped holding results not yet fetched), or left by a watchdog that could
// not delete it; and which of the watchdog's reasons ended it.
import { conditionIs } from './conditions.ts';
import type { Reason } from '../../api/status.ts';
import type { DeleteFailure } from '../../pod/index.ts';
import { reasonOfDeleteRule, whatIsKnown } from './pod-ended.ts';
import { phase, step, wait, type Context, type LivePodContext, type PodContext, type Step } from './step.ts';
import { retrieveGraceEnd } from './grace.ts';
import { endTry } from './retry.ts';

/** The current pod is not in the list: gone on its own (watchdog, host failure) or a listing lag. */
export function podMissing(ctx: PodContext, deadline: number): Step {
  const { obs, status, pod, list } = ctx;
  const unlisted = !pod.listedAt && !conditionIs(status, 'PodReady') ? neverListedYet(ctx) : undefined;
  if (unlisted) return unlisted;
  const listedAfterCreate = list.listedAt.getTime() > Date.parse(pod.createdAt ?? '') + obs.settings.ambiguousLookupMs;
  if (!listedAfterCreate) return wait(obs.settings.pollIntervalMs);
  // In status, not in memory: a controller restarted before its looks are done still knows when.
  const missingSince = pod.missingSince ??= list.listedAt.toISOString();
  const evidence = obs.deletions[pod.id];
  const sinceLook = evidence?.lookedAt ? obs.now.getTime() - evidence.lookedAt.getTime() : Infinity;
  if ((evidence?.notFoundLooks ?? 0) < obs.settings.goneLooks) {
    // Spaced in time, not by the requeue alone: any event may wake the reconcile sooner.
    const { goneLookSpacingMs } = obs.settings.timings;
    if (sinceLook < goneLookSpacingMs) return wait(goneLookSpacingMs - sinceLook);
    return step({ type: 'lookForGonePod', podId: pod.id }, goneLookSpacingMs);
  }
  // The last word is a list taken after the last 404 (one that shows the pod wipes the 404s).
  if (evidence?.lookedAt && list.listedAt <= evidence.lookedAt) return wait(Math.min(obs.settings.pollIntervalMs, 5000));
  pod.state = 'Deleted';
  pod.deletedAt ??= obs.now.toISOString();
  return endTry(ctx, ...whyItWentMissing(ctx, deadline, missingSince));
}

/**
 * Past the deadline, a pod no list has shown since `missingSince`: the looks that would have judged it
 * gone were cut short (restarts keep them in memory only). It is deleted to be safe, and the run is
 * judged by when it went missing: the deadline is blamed only if it had passed by then.
 */
export function missingAtDeadline(ctx: Context, deadline: number, missingSince: string): Step {
  const [reason, message] = whyItWentMissing(ctx, deadline, missingSince);
  return endTry(ctx, reason, `${message}; not listed since ${missingSince}; the controller deletes it to be safe`);
}

/** The watchdog's reasons judged when the pod went missing (the first list without it), not now. */
const whyItWentMissing = (ctx: Context, deadline: number, missingSince: string): [Reason, string] =>
  whyThePodWent(ctx, deadline, 'disappeared', Date.parse(missingSince));

/**
 * EXITED or ERROR (openapi-v2.json PodStatus): its container is gone (stopped by someone, stopped by
 * its watchdog whose key may not delete it, or broken), but its disk bills until it is deleted: at once.
 */
export function podStopped(ctx: PodContext, state: 'EXITED' | 'ERROR', deadline: number): Step {
  const again = state === 'EXITED' ? startAgain(ctx, deadline) : undefined;
  if (again) return again;
  const { status, pod } = ctx;
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
  return endTry(ctx, reason, `${message}; the controller deletes it`);
}

/**
 * A pod that stopped after its job's exit was recorded and before its results were in: its volume
 * still holds them (Runpod keeps it while a pod is stopped), so it is started once more, unless it
 * must go anyway (deadline, retrieve grace, cost cap, cancel). Not on ERROR: that volume is not to be
 * trusted. Undefined: delete it as any stopped pod.
 */
function startAgain(ctx: PodContext, deadline: number): Step | undefined {
  const { obs, status, pod } = ctx;
  const { job } = status;
  const spec = obs.spec.ok ? obs.spec.spec : undefined;
  if (!spec || spec.cancel || !conditionIs(status, 'PodReady') || !job?.finishedAt || job.exitCode === undefined || status.results?.retrievedAt) return undefined;
  const now = obs.now.getTime();
  const graceEnd = spec.keepPod ? Infinity : retrieveGraceEnd(status, spec);
  if (now >= Math.min(watchdogDeadline(ctx, deadline), graceEnd) || nearCostCap(ctx)) return undefined;
  if (!pod.startedAgainAt) {
    pod.startedAgainAt = obs.now.toISOString();
    phase(ctx, 'Retrieving', 'Retrieving', `pod ${pod.name} went EXITED after the job exited with code ${job.exitCode}, before its results were retrieved; starting it again to fetch them from its volume`);
    return step({ type: 'startPod', podId: pod.id }, 5000);
  }
  if (now >= Date.parse(pod.startedAgainAt) + obs.settings.timings.startAgainBoundMs) return undefined;
  phase(ctx, 'Retrieving', 'Retrieving', `pod ${pod.name} was started again at ${pod.startedAgainAt} to fetch its results; waiting for it to run`);
  return wait(5000);
}

/** The watchdog wanted the pod gone and could not delete it (.pod/watchdog.delete): the controller does, now. */
export function watchdogCouldNotDelete(ctx: LivePodContext, failure: DeleteFailure): Step {
  const { status, pod } = ctx;
  pod.state = 'Deleting';
  const reason = reasonOfDeleteRule(failure, status);
  const what = `pod ${pod.name}: its watchdog could not delete it (${failure.rule}: ${failure.detail}); deleted by the controller`;
  if (reason === 'Succeeded') {
    phase(ctx, 'Retrieving', 'Retrieving', what);
    return step({ type: 'none' });
  }
  return endTry(ctx, reason, `${what}; ${whatIsKnown(status)}`);
}

/**
 * A created pod no list has shown yet, younger than the tolerance: Runpod lists (and may even GET) a
 * new pod only after a while, so its absence proves nothing yet; it is neither judged gone nor created
 * again. Past the tolerance the usual evidence decides (a pod that never existed, or one its watchdog
 * deleted while the controller was away).
 */
function neverListedYet(ctx: PodContext): Step | undefined {
  const { obs, pod } = ctx;
  const age = obs.now.getTime() - Date.parse(pod.createdAt ?? obs.now.toISOString());
  if (age > obs.settings.timings.newPodListLagToleranceMs) return undefined;
  phase(ctx, 'Provisioning', 'WaitingForSsh', `pod ${pod.name} (${pod.id}) was created; waiting for Runpod to list it`);
  return wait(Math.min(obs.settings.pollIntervalMs, 5000));
}

/** The pod's deadline as its watchdog counts it: from the create request (attempt.time), a moment before Runpod's createdAt. */
function watchdogDeadline(ctx: Context, deadline: number): number {
  const { obs, status } = ctx;
  const limits = obs.spec.ok ? obs.spec.spec.limits : undefined;
  const attempt = status.attempts?.find((a) => a.podId === status.pod?.id);
  return attempt && limits ? Math.min(deadline, Math.floor(Date.parse(attempt.time) / 1000) * 1000 + limits.maxRuntimeSeconds * 1000) : deadline;
}

/** The spend is within 10% of spec.limits.maxCostUsd: the watchdog, which estimates it on its own, may have acted on the cap. */
function nearCostCap({ obs, status }: Context): boolean {
  const cap = obs.spec.ok ? obs.spec.spec.limits.maxCostUsd : undefined;
  return cap !== undefined && Number(status.estimatedCostUsd ?? 0) >= Number(cap) * 0.9;
}

/**
 * The watchdog's reasons, judged from what the status knows at `now`: deadline, cost cap, boot grace,
 * retrieve grace; else PodLost with what is known. `how`: the pod disappeared, or went EXITED / ERROR.
 */
function whyThePodWent(ctx: Context, deadline: number, how: 'disappeared' | 'EXITED' | 'ERROR' = 'disappeared', now = ctx.obs.now.getTime()): [Reason, string] {
  const { obs, status } = ctx;
  const limits = obs.spec.ok ? obs.spec.spec.limits : undefined;
  const name = status.pod?.name ?? '';
  // A watchdog whose key may not delete stops the pod instead: EXITED.
  const by = how === 'disappeared' ? 'was deleted by its watchdog'
    : how === 'EXITED' ? 'went EXITED (a watchdog whose key may not delete stops its pod)' : 'went ERROR';
  if (now >= watchdogDeadline(ctx, deadline)) return ['DeadlineExceeded', `pod ${name} reached its deadline (spec.limits.maxRuntimeSeconds) and ${by}`];
  if (limits?.maxCostUsd !== undefined && nearCostCap(ctx)) {
    return ['CostCapReached', `pod ${name} reached spec.limits.maxCostUsd (${limits.maxCostUsd}) and ${by}`];
  }
  if (limits && !status.job?.startedAt && now >= Date.parse(status.pod?.createdAt ?? '') + limits.bootGraceSeconds * 1000) {
    return ['BootTimeout', `no job started on pod ${name} within spec.limits.bootGraceSeconds and it ${by}`];
  }
  // The watchdog counts the retrieve grace from the job's end as it first saw it (finishedAt: that end on the controller's clock), extended by renewals.
  if (obs.spec.ok && status.job?.finishedAt && !status.results?.retrievedAt && now >= retrieveGraceEnd(status, obs.spec.spec)) {
    return ['ResultsUnverified', `the results of pod ${name} were not retrieved within spec.limits.retrieveGraceSeconds and it ${by}`];
  }
  const lost = how === 'disappeared' ? 'disappeared from Runpod' : `went ${how}`;
  return ['PodLost', `pod ${name} ${lost} before the run ended; ${whatIsKnown(status)}`];
}
