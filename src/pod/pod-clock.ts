// The pod's clock, measured from the controller's. A community host may be hours off; the pod's times
// (the job's start and end, the watchdog's failed delete) are written with its `date`, while the status
// and every rule that compares them (the retrieve grace, the gone verdicts, the transfer pool's order)
// run on the controller's clock. Each state read carries the pod's `now`, read between the moment the
// command was sent and the moment its answer came: that bounds the offset, and every pod time is moved
// by it before anything compares or records it.
import type { PodState } from './state.ts';

/** One read of the pod's `date +%s` (whole seconds, null when unreadable) and the controller's ms around it. */
export interface ClockReading { podNow: number | null; sentAtMs: number; answeredAtMs: number }

/**
 * The pod's clock minus the controller's, in whole seconds. The pod read its clock (truncated to the
 * second) at some moment between the command's send and its answer, so the offset lies within
 * (podNow - answered, podNow + 1 - sent): 0 when that span holds 0 (the clocks agree as far as this read
 * can tell: a synced pod's times are taken as they are), else its middle, off by at most half the round
 * trip and half a second.
 */
export function clockOffsetSeconds({ podNow, sentAtMs, answeredAtMs }: ClockReading): number {
  if (podNow === null || podNow <= 0 || answeredAtMs < sentAtMs) return 0;
  const low = podNow - answeredAtMs / 1000;
  const high = podNow + 1 - sentAtMs / 1000;
  if (low < 0 && high > 0) return 0;
  return Math.round((low + high) / 2);
}

/** The state with every pod time moved onto the controller's clock (`now` stays the pod's own reading). */
export function onControllerClock(state: PodState, offsetSeconds: number): PodState {
  if (offsetSeconds === 0) return state;
  const move = (time: number | null): number | null => (time === null ? null : time - offsetSeconds);
  return {
    ...state,
    clockOffsetSeconds: offsetSeconds,
    job: { ...state.job, startedAt: move(state.job.startedAt), endedAt: move(state.job.endedAt) },
    deleteFailed: state.deleteFailed && { ...state.deleteFailed, at: move(state.deleteFailed.at) },
  };
}
