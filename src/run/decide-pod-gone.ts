// A current pod that is no longer there or no longer runs: missing from the list, EXITED or ERROR,
// or left by a watchdog that could not delete it; and which of the watchdog's reasons ended it.
import { conditionIs } from './conditions.ts';
import type { Reason } from '../api/status.ts';
import type { DeleteFailure } from '../pod/index.ts';
import { reasonOfDeleteRule, whatIsKnown } from './pod-ended.ts';
import { fail, newPodListLagToleranceMs, phase, step, wait, type Context, type Step } from './decide-step.ts';

/**
 * Spacing between the looks that judge a pod gone on its own (nobody here deleted it): Runpod's GET
 * can answer 404 for a live pod for a few seconds, so three 404s must span 20 s (as the reference does).
 */
const goneLookSpacingMs = 10_000;

/** The current pod is not in the list: gone on its own (watchdog, host failure) or a listing lag. */
export function podMissing(ctx: Context, deadline: number): Step {
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
export function podStopped(ctx: Context, state: 'EXITED' | 'ERROR', deadline: number): Step {
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
export function watchdogCouldNotDelete(ctx: Context, failure: DeleteFailure): Step {
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
