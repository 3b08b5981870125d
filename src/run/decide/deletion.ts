// Deleting pods: the run's own deletion (finalizer), what may bill after the end, strays, and the
// confirmation that a deleted pod is gone (spaced looks after the delete: 404s or lists without it).
import type { Deletion, Observation } from './model.ts';
import type { Reason, RunpodRunStatus } from '../../api/status.ts';
import { skipCleanupAnnotation } from '../../api/runpodrun.ts';
import type { RunpodRunSpec } from '../../api/spec.ts';
import { done, everCreated, markCurrentPodForDeletion, step, wait, type Context, type Step } from './step.ts';
import { adoptAfterAmbiguousCreate } from './provisioning.ts';

export function cleanUpForDeletion(ctx: Context): Step {
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
  // A create whose answer is lost may have made a pod no list has shown yet: adopted when it shows,
  // given up only by the rule that gives up a lost create; until then the finalizer stays.
  adoptAfterAmbiguousCreate(ctx);
  reviveIfListedAgain(ctx);
  markCurrentPodForDeletion(ctx);
  for (const pod of obs.pods.items) addStray(status, pod.id);
  if (status.reason === 'CleanupBlocked') status.reason = 'Deleting';
  status.message = 'the run is being deleted: deleting its pods';
  const deleting = continueDeletions(ctx);
  if (deleting) return deleting;
  const lost = status.attempts?.find((attempt) => attempt.outcome === 'Pending' || attempt.outcome === 'Ambiguous');
  if (lost) {
    status.message = `the run is being deleted: waiting to learn whether pod ${lost.name} exists (its create answer was lost); it is deleted if a pod list shows it`;
    return wait(obs.settings.pollIntervalMs);
  }
  return step({ type: 'removeFinalizer' });
}

/** What keeps a deleted run from deleting its pods (no usable key), or undefined. */
function cleanupBlocker(obs: Observation): string | undefined {
  if (!obs.credentials.found) {
    return `${obs.credentials.message}, and this controller holds no earlier key of this run (it was restarted since, or never read one)`;
  }
  if (obs.credentials.rejected) return 'Runpod rejects the run\'s API key (401 when listing pods: revoked or wrong)';
  return obs.credentials.insufficient;
}

/** After Succeeded/Failed nothing of ours may keep billing, except a kept pod. */
export function afterTheEnd(ctx: Context): Step {
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
 * (+ margin) or cost cap passes: both are absolute, as on the pod (DESIGN.md §1). Not once it stopped:
 * nobody can use a stopped pod, its disk still bills, and its watchdog went with its container, so
 * nothing on the pod would guard its deadline any more. Says why when not.
 */
function stillKept(ctx: Context, spec: RunpodRunSpec): boolean {
  const { obs, status } = ctx;
  const pod = status.pod;
  if (!pod?.id || pod.state === 'Deleted' || pod.state === 'Deleting') return true;
  const cap = spec.limits.maxCostUsd;
  const listed = obs.pods?.items.find((item) => item.id === pod.id)?.status;
  const [reason, why]: [Reason, string] | [] = spec.cancel ? ['Cancelled', 'spec.cancel is set']
    : listed === 'EXITED' || listed === 'ERROR' ? ['PodLost', `it went ${listed} (a stopped pod cannot be used, its disk bills, and nothing on it guards its deadline)`]
      : obs.now.getTime() > Date.parse(pod.deadline ?? '') + obs.settings.deadlineMarginMs ? ['DeadlineExceeded', 'its deadline (spec.limits.maxRuntimeSeconds) passed']
        : cap !== undefined && Number(status.estimatedCostUsd ?? 0) >= Number(cap) ? ['CostCapReached', `the estimated spend reached spec.limits.maxCostUsd (${cap})`]
          : [];
  if (!reason) return true;
  ctx.events.push({ type: reason === 'PodLost' ? 'Warning' : 'Normal', reason, note: `pod ${pod.name ?? ''} was kept (keepPod) and is deleted now: ${why}` });
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
export function markStrays(ctx: Context): void {
  for (const pod of ctx.obs.pods?.items ?? []) addStray(ctx.status, pod.id);
}

/**
 * Drives every pending deletion one step: send the delete, then confirm with spaced looks after it
 * (GETs or the delete answering 404, pod lists begun after it that do not show the pod), the last a
 * list newer than the delete that no longer shows the pod. Undefined when none is pending.
 */
export function continueDeletions(ctx: Context): Step | undefined {
  const { obs, status } = ctx;
  for (const podId of pendingDeletions(status)) {
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

/** The pods of a run whose deletion is under way: its strays, and its current pod once Deleting. */
export function pendingDeletions(status: RunpodRunStatus): string[] {
  return [...(status.strayPods ?? []), ...(status.pod?.id && status.pod.state === 'Deleting' ? [status.pod.id] : [])];
}

function deletionStep(obs: Observation, podId: string): Step | undefined {
  const deletion: Deletion = obs.deletions[podId] ?? { notFoundLooks: 0 };
  const listedAt = obs.pods?.listedAt;
  const listed = obs.pods?.items.some((pod) => pod.id === podId) ?? false;
  // A pod a look found alive well after its delete was sent: that delete did not take, it goes again.
  const notTaken = deletion.sentAt && deletion.foundAt && deletion.foundAt.getTime() - deletion.sentAt.getTime() > obs.settings.timings.resendUnconfirmedDeleteMs;
  if (!deletion.sentAt || notTaken) return step({ type: 'deletePod', podId }, obs.settings.timings.lookSpacingMs);
  const listIsNewer = listedAt !== undefined && listedAt > deletion.sentAt;
  if (deletion.notFoundLooks + (deletion.listLooks ?? 0) < obs.settings.goneLooks) {
    // The lists polled for every run are the looks, at no call of this pod's own. A pod still listed
    // after its delete is looked at: a GET tells a list lagging behind the delete from a delete that did not take.
    if (!listIsNewer || !listed) return wait(obs.settings.pollIntervalMs);
    return step({ type: 'lookForGonePod', podId }, obs.settings.timings.lookSpacingMs);
  }
  if (!listIsNewer) return wait(obs.settings.pollIntervalMs);
  if (listed) {
    // Every GET says gone but a newer list still shows the pod: Runpod's list lags behind deletes. The
    // list's word alone never sends another delete (a GET that finds the pod alive resets the looks,
    // and that resends it); the pod is looked at now and then, and past the tolerance the GETs win.
    if (obs.now.getTime() - deletion.sentAt.getTime() < obs.settings.timings.deletedListLagToleranceMs) {
      return step({ type: 'lookForGonePod', podId }, obs.settings.pollIntervalMs);
    }
  }
  return undefined;
}
