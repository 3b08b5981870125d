// spec.retry: a try that failed for the platform (its pod vanished, stopped or never booted), or whose
// job exited with a code the spec names, ends with its pod's deletion, and a new try follows: a new pod,
// the GPU walk from its start, after a backoff. Every try stays inside the run's limits (each pod's
// deadline, the cost cap over all pods, limits.activeDeadlineSeconds over the run), and the next pod is
// created only once the last is confirmed deleted (decide deletes before it provisions), so a run never
// has two pods billing. The decision is one status write: the count, the pod marked for deletion and
// the backoff go together, so a crash between "try failed" and "next pod" neither skips the limit nor
// creates twice.
import { exponentialDelay } from '../../kube/backoff.ts';
import type { Reason, RunpodRunStatus } from '../../api/status.ts';
import type { RunpodRunSpec } from '../../api/spec.ts';
import { setCondition } from './conditions.ts';
import { fail, markCurrentPodForDeletion, phase, step, wait, type Context, type Step } from './step.ts';

/** What ended a try: the platform (counts whenever retry.limit allows), or the job with an exit code. */
export type TryFailure = { by: 'platform' } | { by: 'job'; exitCode: number | undefined };

const backoffBaseMs = 10_000;
const backoffMaxMs = 300_000;

/** The try the run is on: 1, then one more per retry. */
export const currentTry = (status: RunpodRunStatus): number => (status.retries ?? 0) + 1;

/** The attempts (creates) of the current try: the GPU walk and the capacity wait start again with each try. */
export function attemptsOfThisTry(status: RunpodRunStatus): NonNullable<RunpodRunStatus['attempts']> {
  const now = currentTry(status);
  return (status.attempts ?? []).filter((attempt) => (attempt.try ?? 1) === now);
}

/** Whether `failure` earns the run another try: it counts, the limit is not reached, no cancel. */
export function retryAllowed({ obs, status }: Context, failure: TryFailure): boolean {
  const spec = obs.spec.ok ? obs.spec.spec : undefined;
  if (!spec || spec.cancel || (status.retries ?? 0) >= spec.retry.limit) return false;
  return failure.by === 'platform' || (failure.exitCode !== undefined && (spec.retry.onExitCodes ?? []).includes(failure.exitCode));
}

/**
 * Ends the try with `reason`: another try when spec.retry allows it (the limit not reached, no cancel),
 * else the run fails as it would without retries.
 */
export function failOrRetry(ctx: Context, failure: TryFailure, reason: Reason, message: string): Step {
  const { obs, status } = ctx;
  if (!obs.spec.ok || !retryAllowed(ctx, failure)) return fail(ctx, reason, message);
  const { spec } = obs.spec;
  const retries = status.retries ?? 0;
  const attempt = status.pod?.id ? status.attempts?.find((a) => a.podId === status.pod?.id) : status.attempts?.at(-1);
  if (attempt) {
    attempt.reason = reason;
    attempt.message = message.slice(0, 4096);
  }
  markCurrentPodForDeletion(ctx);
  status.retries = retries + 1;
  const after = new Date(obs.now.getTime() + exponentialDelay(backoffBaseMs, backoffMaxMs, retries));
  status.nextTryAfter = after.toISOString();
  // What the last try learned is not the next one's: its job, its results, its readiness.
  delete status.job;
  delete status.results;
  delete status.waitingSince;
  for (const type of ['PodReady', 'JobStarted', 'ResultsRetrieved']) {
    if (status.conditions?.some((c) => c.type === type)) setCondition(status, type, 'False', 'Retrying', `try ${retries + 2} has not got there yet`, obs.run.generation, obs.now);
  }
  phase(ctx, 'Pending', 'Retrying', `try ${retries + 1} ended ${reason}: ${message}; try ${retries + 2} of ${spec.retry.limit + 1} creates a pod once this one is deleted, not before ${status.nextTryAfter}`);
  return step({ type: 'none' });
}

/** The reasons of a try the platform ended (or a watchdog for it: no boot within the grace). */
const platformReasons: ReadonlySet<Reason> = new Set(['PodLost', 'BootFailed', 'BootTimeout']);

/** A try whose end is judged by its reason alone (the pod went, or never booted): the platform's are retried. */
export function endTry(ctx: Context, reason: Reason, message: string): Step {
  return platformReasons.has(reason) ? failOrRetry(ctx, { by: 'platform' }, reason, message) : fail(ctx, reason, message);
}

/** Before a retry's first create: its backoff. Undefined when the run may create now. */
export function waitForNextTry(ctx: Context): Step | undefined {
  const { obs, status } = ctx;
  const after = Date.parse(status.nextTryAfter ?? '');
  if (!(after > obs.now.getTime()) || attemptsOfThisTry(status).length > 0) return undefined;
  const what = status.message?.startsWith(`try ${currentTry(status) - 1} ended`) ? status.message : `try ${currentTry(status)} creates a pod at ${status.nextTryAfter}`;
  phase(ctx, 'Pending', 'Retrying', what);
  return wait(after - obs.now.getTime());
}

/**
 * When limits.activeDeadlineSeconds ends the run: that long after its first create (epoch ms), if set;
 * `firstCreate` stands for a first create about to be sent.
 */
export function activeDeadlineMs(spec: RunpodRunSpec, status: RunpodRunStatus, firstCreate?: Date): number | undefined {
  const first = status.attempts?.[0]?.time ?? firstCreate?.toISOString();
  const seconds = spec.limits.activeDeadlineSeconds;
  if (seconds === undefined || !first) return undefined;
  return Date.parse(first) + seconds * 1000;
}
