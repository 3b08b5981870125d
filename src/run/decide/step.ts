// What every part of decide shares: the context a decision is made in, the step it returns, and the
// status edits every rule may end with (a phase, a failure that deletes the pod).
import { setPhase } from './conditions.ts';
import type { Action, Decision, Observation, RetrievalOutcome, RunEvent } from './model.ts';
import type { Phase, Reason, RunpodRunStatus } from '../../api/status.ts';

export interface Context {
  /** What the pass knows: once it applied a settled retrieval that failed, that try counts (decide.ts). */
  obs: Observation;
  status: RunpodRunStatus;
  events: RunEvent[];
  /** obs.retrieval, once this pass applied it. */
  appliedRetrieval?: RetrievalOutcome;
}

/** The run's current pod, known by its id and not yet deleted (the very object of status.pod). */
export type LivePod = NonNullable<RunpodRunStatus['pod']> & { id: string };

export const isLive = (pod: RunpodRunStatus['pod']): pod is LivePod => pod?.id !== undefined && pod.state !== 'Deleted';

/** While the run follows its live pod. */
export interface LivePodContext extends Context { pod: LivePod }

/** ... and the account's pod list this reconcile saw. */
export interface PodContext extends LivePodContext { list: NonNullable<Observation['pods']> }

export type Step = Omit<Decision, 'status' | 'events' | 'appliedRetrieval'>;
export const step = (action: Action, afterMs = 0): Step => ({ action, requeue: { afterMs } });
export const wait = (afterMs: number): Step => ({ action: { type: 'none' }, requeue: { afterMs } });
export const done: Step = { action: { type: 'none' }, requeue: 'none' };

export function phase(ctx: Context, value: Phase, reason: Reason, message: string): void {
  setPhase(ctx.status, value, reason, message, ctx.obs.run.generation, ctx.obs.now);
}

export function fail(ctx: Context, reason: Reason, message: string): Step {
  phase(ctx, 'Failed', reason, message);
  if (ctx.status.pod?.id && ctx.status.pod.state !== 'Deleted') markCurrentPodForDeletion(ctx);
  return step({ type: 'none' });
}

export function markCurrentPodForDeletion(ctx: Context): void {
  const pod = ctx.status.pod;
  if (pod?.id && pod.state !== 'Deleted' && pod.state !== 'Deleting') pod.state = 'Deleting';
}

export const everCreated = (status: RunpodRunStatus): boolean => (status.attempts?.length ?? 0) > 0;
