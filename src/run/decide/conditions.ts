// Conditions as kubectl wait, kstatus (Flux, kpt, cli-utils) and Argo CD read them: Job-style
// Complete/Failed at the end, Ready only on success, Reconciling while in progress, Stalled on a
// terminal failure, plus the progress conditions PodReady, JobStarted, ResultsRetrieved.
import type { Condition, Phase, Reason, RunpodRunStatus } from '../../api/status.ts';

const terminalPhases: readonly Phase[] = ['Succeeded', 'Failed'];
export const isTerminal = (phase: Phase | undefined): boolean => phase !== undefined && terminalPhases.includes(phase);

type ConditionStatus = Condition['status'];

/** Sets one condition; lastTransitionTime moves only when its status flips (API conventions). */
export function setCondition(
  status: RunpodRunStatus, type: string, value: ConditionStatus, reason: string, message: string, generation: number, now: Date,
): void {
  const conditions = status.conditions ?? [];
  const existing = conditions.find((c) => c.type === type);
  const lastTransitionTime = existing && existing.status === value ? existing.lastTransitionTime : now.toISOString();
  const next: Condition = { type, status: value, observedGeneration: generation, lastTransitionTime, reason, message };
  status.conditions = existing ? conditions.map((c) => (c.type === type ? next : c)) : [...conditions, next];
}

/**
 * The status as judged at `generation`: status.observedGeneration and every condition's, since each
 * reconcile re-derives them all. kubectl wait skips a condition whose observedGeneration is behind the
 * run's generation, so a spec change after the end (keepPod) must not leave them behind.
 */
export function observeGeneration(status: RunpodRunStatus, generation: number): void {
  status.observedGeneration = generation;
  if (status.conditions) status.conditions = status.conditions.map((c) => (c.observedGeneration === generation ? c : { ...c, observedGeneration: generation }));
}

export function conditionIs(status: RunpodRunStatus, type: string, value: ConditionStatus = 'True'): boolean {
  return status.conditions?.some((c) => c.type === type && c.status === value) ?? false;
}

/** Sets phase, reason and message, and the summary conditions that follow from them. */
export function setPhase(
  status: RunpodRunStatus, phase: Phase, reason: Reason, message: string, generation: number, now: Date,
): void {
  status.phase = phase;
  status.reason = reason;
  status.message = message;
  const done = isTerminal(phase);
  const succeeded = phase === 'Succeeded';
  setCondition(status, 'Ready', succeeded ? 'True' : 'False', reason, message, generation, now);
  setCondition(status, 'Reconciling', done ? 'False' : 'True', reason, message, generation, now);
  setCondition(status, 'Stalled', phase === 'Failed' ? 'True' : 'False', reason, message, generation, now);
  if (done) {
    setCondition(status, 'Complete', succeeded ? 'True' : 'False', reason, message, generation, now);
    setCondition(status, 'Failed', succeeded ? 'False' : 'True', reason, message, generation, now);
    status.completionTime ??= now.toISOString();
  }
}
