// How much of a run's chance the controller had: the leader time between its job's end and the moment
// the world took its results away (the pod vanished or broke, or was deleted). A result the provider
// destroyed before any leader could act is not a broken promise; one lost with leader time to spare is.
import { readFileSync } from 'node:fs';
import type { SimPod } from '../runpod-sim/client.ts';
import type { RunEntry } from './runbook.ts';
import type { FaultRecord } from './session.ts';

export interface Term { from: number; to: number }

/** Below this much leader time between a job's end and its pod's destruction, the controller had no real chance. */
export const noChanceMs = 10_000;

/** The leader terms in the controller's log (epoch ms): each from a 'became leader' line to the next kill, or `end`. */
export function leaderTerms(logText: string, killsAt: readonly number[], end: number): Term[] {
  const starts = logText.split('\n').flatMap((line) => {
    if (!line.includes('"became leader"')) return [];
    // A SIGKILL may cut the last line short: it is not a term.
    const time = /"time":"([^"]+)"/.exec(line)?.[1];
    return time && line.trimEnd().endsWith('}') ? [Date.parse(time)] : [];
  });
  return starts.map((from) => ({ from, to: Math.min(end, ...killsAt.filter((at) => at > from)) }));
}

export const readLeaderTerms = (logFile: string, killsAt: readonly number[], end: number): Term[] =>
  leaderTerms(readFileSync(logFile, 'utf8'), killsAt, end);

/** Leader time within [from, to]. */
export function leaderMsBetween(terms: readonly Term[], from: number, to: number): number {
  return terms.reduce((sum, term) => sum + Math.max(0, Math.min(term.to, to) - Math.max(term.from, from)), 0);
}

/**
 * When the world destroyed a run's results (its pod vanished, or broke: ERROR), the leader time the
 * controller had before, and what it needed: noChanceMs, plus the results' bytes at the rate of a slow
 * link to the pod (no leader moves bytes faster than the link; a cut-short retrieval resumes, so it is
 * the sum over terms that counts).
 */
export interface Destruction { at: number; how: string; leaderMs: number; neededMs: number }

/** For a run whose job ended: the first destruction of one of its pods after that end, if any. */
export function destructionOf(entry: RunEntry, pods: readonly SimPod[], faults: readonly FaultRecord[], terms: readonly Term[], started: number): Destruction | undefined {
  const endedAt = Date.parse(entry.latest?.status?.job?.finishedAt ?? '');
  if (!Number.isFinite(endedAt)) return undefined;
  const own = pods.filter((pod) => pod.env.RUNPOD_OPERATOR_RUN === entry.uid);
  const ids = new Set(own.map((pod) => pod.id));
  // The run's own deadline takes the pod as surely (its watchdog deletes it then, kept or not): a result
  // the leader had no time to fetch before it is no broken promise either.
  const deadlineOf = (pod: SimPod) => Date.parse(pod.createdAt) + entry.planned.maxRuntimeSeconds * 1000;
  const events = [
    ...own.filter((pod) => pod.deletedBy === 'vanished' && pod.deletedAt).map((pod) => ({ at: Date.parse(pod.deletedAt ?? ''), how: 'vanished' })),
    ...(entry.latest?.status?.reason === 'DeadlineExceeded' ? own.map((pod) => ({ at: deadlineOf(pod), how: 'reached its deadline' })) : []),
    ...containerStops(faults, started).filter((stop) => ids.has(stop.podId) && stop.status === 'ERROR').map((stop) => ({ at: stop.at, how: 'went ERROR' })),
  ].filter((event) => event.at >= endedAt - 1000).sort((a, b) => a.at - b.at);
  const first = events[0];
  if (!first) return undefined;
  const rate = Math.min(...slowLinks(faults, started).filter((link) => ids.has(link.podId) && link.at < first.at).map((link) => link.bytesPerSecond));
  const transferMs = Number.isFinite(rate) ? (entry.planned.resultBytes / rate) * 1000 : 0;
  return { ...first, leaderMs: leaderMsBetween(terms, endedAt, first.at), neededMs: noChanceMs + Math.round(transferMs) };
}

/** Each slow link the world put between the controller and a pod: from then on, the pod sends at most bytesPerSecond. */
function slowLinks(faults: readonly FaultRecord[], started: number): { podId: string; bytesPerSecond: number; at: number }[] {
  return faults.flatMap((fault) => {
    const rate = Number(fault.planned.params.bytesPerSecond);
    if (!fault.fired || fault.podId === undefined || fault.planned.name !== 'slow-link' || !(rate > 0)) return [];
    return [{ podId: fault.podId, bytesPerSecond: rate, at: started + fault.atMs }];
  });
}

/** Each container the world stopped for good (container-exit to EXITED or ERROR): its watchdog stopped with it. */
export function containerStops(faults: readonly FaultRecord[], started: number): { podId: string; status: string; at: number }[] {
  return faults.flatMap((fault) => {
    const status = String(fault.planned.params.status ?? '');
    if (!fault.fired || fault.podId === undefined || fault.planned.name !== 'container-exit' || (status !== 'ERROR' && status !== 'EXITED')) return [];
    return [{ podId: fault.podId, status, at: started + fault.atMs + Number(fault.planned.params.afterMs ?? 0) }];
  });
}
