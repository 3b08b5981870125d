// The retrieve grace while a run's results wait for a transfer slot or move. The controller renews an
// extension on the pod (retrieve.until, which its watchdog honours) and records it in
// status.pod.retrieveGraceUntil, which its own guard honours too, after a restart as well: the grace
// bounds a controller that is gone (the renewals stop, the grace ends within one renewal), not one
// that is busy. Pure; used by decide-following.
import type { RunpodRunSpec } from '../../api/spec.ts';
import type { RunpodRunStatus } from '../../api/status.ts';
import type { Context } from './step.ts';
import { graceRenewalMs } from './timings.ts';

/** When the current pod's retrieve grace ends (NaN before the job's end is known): its end + the grace, or later as renewed. */
export function retrieveGraceEnd(status: RunpodRunStatus, spec: RunpodRunSpec): number {
  const graceEnd = Date.parse(status.job?.finishedAt ?? '') + spec.limits.retrieveGraceSeconds * 1000;
  const renewed = Date.parse(status.pod?.retrieveGraceUntil ?? '');
  return Number.isFinite(renewed) && renewed > graceEnd ? renewed : graceEnd;
}

/**
 * While the transfer is queued or running and the grace nears its end: the seconds the pod is asked
 * to extend it by (on its own clock), recorded in the status first (intent before the step). Never
 * past the pod's deadline; a kept pod has no retrieve grace to extend.
 */
export function graceRenewal(ctx: Context, spec: RunpodRunSpec): number | undefined {
  const { obs, status } = ctx;
  if (spec.keepPod || !status.pod || !status.job?.finishedAt || !obs.transfer) return undefined;
  const now = obs.now.getTime();
  const renewal = graceRenewalMs(obs.settings.timings, obs.settings.pollIntervalMs);
  if (retrieveGraceEnd(status, spec) - now > renewal / 2) return undefined;
  const deadline = Date.parse(status.pod.deadline ?? '');
  const until = Number.isFinite(deadline) ? Math.min(now + renewal, deadline) : now + renewal;
  const seconds = Math.floor((until - now) / 1000);
  if (seconds < 1) return undefined;
  status.pod.retrieveGraceUntil = new Date(now + seconds * 1000).toISOString();
  return seconds;
}
