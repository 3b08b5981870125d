// The first promise, measured from outside: what the simulator billed (every pod ever created, with
// its created/deleted times), what the API server shows, and what the result store holds.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { SimPod, SimPodWithProcesses } from '../runpod-sim/client.ts';
import { isTerminalPhase, type RunBook, type RunEntry } from './runbook.ts';
import { noChanceMs, type Destruction } from './leader-time.ts';
import { exitsZero } from './workload.ts';

export interface Figure {
  name: string;
  value: number;
  /** A figure above 0 breaks the promise. */
  broken: boolean;
  unit?: string;
  /** One line per offender, enough to find it in the logs. */
  details: string[];
}

/** What the figures read of the run book. */
type Runs = Pick<RunBook, 'entries' | 'byUid'>;

const seconds = (ms: number): number => Math.round(ms / 100) / 10;
const end = (pod: SimPod, now: number): number => (pod.deletedAt ? Date.parse(pod.deletedAt) : now);

/** Runs that should have ended on their own (not deleted by the user) and had not. */
export function runsNotTerminal(runs: Runs): Figure {
  const stuck = [...runs.entries.values()].filter((entry) => entry.uid && !entry.gone && !entry.deleteRequested && !isTerminalPhase(entry.latest));
  return figure('runs not terminal', stuck.length, stuck.map((entry) =>
    `${entry.planned.name} (${entry.planned.kind}): ${entry.latest?.status?.phase ?? 'no phase'}/${entry.latest?.status?.reason ?? ''} ${entry.latest?.status?.message ?? ''}`));
}

/** Pods alive after every run was deleted, and processes of deleted pods still on the machine. */
export function podsLeaked(pods: SimPodWithProcesses[]): Figure {
  const alive = pods.filter((pod) => pod.deletedAt === null);
  const lingering = pods.filter((pod) => pod.deletedAt !== null && pod.processes.length > 0);
  return figure('pods leaked', alive.length + lingering.length, [
    ...alive.map((pod) => `${pod.id} (${pod.name}) still ${pod.status}`),
    ...lingering.map((pod) => `${pod.id} (${pod.name}) deleted but ${pod.processes.length} processes left`),
  ]);
}

/** What the billing figure needs to know of the world: when a pod's watchdog stopped, and the leader time in a span. */
export interface Guards {
  /** When the world stopped the pod's container for good (its watchdog with it), if it did. */
  watchdogStoppedAt: (pod: SimPod) => number | undefined;
  leaderMs: (from: number, to: number) => number;
}

/**
 * Per pod: seconds it billed past createdAt + the run's maxRuntimeSeconds + the margin. A pod whose
 * watchdog the world had stopped can be deleted by a leader only: its overrun is listed apart
 * (`noChance`) when the controller led under noChanceMs of it, as nobody could have deleted it.
 */
export function billedPastDeadline(pods: SimPod[], runs: Runs, marginMs: number, now: number, guards: Guards): { billed: Figure; noChance: string[] } {
  let totalMs = 0;
  const details: string[] = [];
  const noChance: string[] = [];
  for (const pod of pods) {
    const entry = runOf(pod, runs);
    if (!entry) continue;
    const limit = Date.parse(pod.createdAt) + entry.planned.maxRuntimeSeconds * 1000 + marginMs;
    const over = end(pod, now) - limit;
    if (over <= 0) continue;
    const line = `${pod.id} (${pod.name}, ${entry.planned.kind}, maxRuntimeSeconds ${entry.planned.maxRuntimeSeconds}): ${seconds(over)} s past deadline + margin (deleted by ${pod.deletedBy ?? 'nobody yet'})`;
    const stoppedAt = guards.watchdogStoppedAt(pod);
    const ledMs = guards.leaderMs(limit, end(pod, now));
    if (stoppedAt !== undefined && stoppedAt <= limit && ledMs < noChanceMs) {
      noChance.push(`${line} [its container was stopped ${seconds(limit - stoppedAt)} s before, its watchdog with it; the controller led ${seconds(ledMs)} s of the overrun]`);
      continue;
    }
    totalMs += over;
    details.push(stoppedAt === undefined ? line : `${line} [watchdog stopped; the controller led ${seconds(ledMs)} s of the overrun]`);
  }
  return { billed: { ...figure(`pod-seconds billed past deadline + ${marginMs / 1000}s`, seconds(totalMs), details), unit: 's' }, noChance };
}

/** Runs that had two pods billing at the same time, with the overlap in seconds. */
export function doubleBilling(pods: SimPod[], runs: Runs, now: number): Figure {
  const byRun = new Map<string, SimPod[]>();
  for (const pod of pods) {
    const uid = pod.env.RUNPOD_OPERATOR_RUN ?? '';
    byRun.set(uid, [...(byRun.get(uid) ?? []), pod]);
  }
  let totalMs = 0;
  const details: string[] = [];
  for (const [uid, list] of byRun) {
    let overlapMs = 0;
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        const [a, b] = [list[i]!, list[j]!];
        overlapMs += Math.max(0, Math.min(end(a, now), end(b, now)) - Math.max(Date.parse(a.createdAt), Date.parse(b.createdAt)));
      }
    }
    if (overlapMs > 0) {
      totalMs += overlapMs;
      details.push(`${runs.byUid(uid)?.planned.name ?? uid}: ${list.map((p) => p.id).join(', ')} billed together for ${seconds(overlapMs)} s`);
    }
  }
  return { ...figure('runs with two pods billing at once', details.length, details), details: details.length ? [`${seconds(totalMs)} s in all`, ...details] : [] };
}

/**
 * Runs with spec.retry (kind `retry`) that went past retry.limit or counted a try that never began,
 * read from their last status and the simulator's pods (two pods billing at once is doubleBilling's,
 * for every run): tries begun (the distinct `try` of status.attempts, absent for the first) or
 * status.retries past the limit; a pod of a try past limit + 1, or of no recorded attempt; a try counted
 * failed (1..status.retries), or a job's end taken as the current try's, without an attempt of that try,
 * as a failure counted twice across a crash would leave; and a Succeeded run whose results' try.txt (the job's RUNPOD_OPERATOR_ATTEMPT) is not the
 * status's last try or not limit + 1, the only try its job exits 0 on.
 */
export function retriesPastLimit(pods: SimPod[], runs: Runs): Figure {
  const details: string[] = [];
  for (const entry of runs.entries.values()) {
    const limit = entry.planned.retryLimit;
    const status = entry.latest?.status;
    if (limit === undefined || !entry.uid || !status) continue;
    const attempts = status.attempts ?? [];
    const tryOf = (attempt: (typeof attempts)[number]): number => attempt.try ?? 1;
    const begun = new Set(attempts.map(tryOf));
    const retries = status.retries ?? 0;
    const own = pods.filter((pod) => pod.env.RUNPOD_OPERATOR_RUN === entry.uid);
    const problems: string[] = [];
    if (retries > limit) problems.push(`status.retries ${retries}`);
    const beyond = [...begun].filter((n) => n > limit + 1);
    if (beyond.length > 0) problems.push(`attempts of try ${beyond.join(', ')}`);
    for (const pod of own) {
      const attempt = attempts.find((a) => a.name === pod.name);
      if (!attempt) problems.push(`pod ${pod.id} (${pod.name}) of no recorded attempt`);
      else if (tryOf(attempt) > limit + 1) problems.push(`pod ${pod.id} (${pod.name}) of try ${tryOf(attempt)}`);
    }
    const skipped = Array.from({ length: retries }, (_, i) => i + 1).filter((n) => !begun.has(n));
    if (skipped.length > 0) problems.push(`try ${skipped.join(', ')} counted failed (status.retries ${retries}) without an attempt of its own`);
    // status.job goes with each counted try: a job's end on the current try needs that try to have begun.
    if (status.job && !begun.has(retries + 1)) problems.push(`a job's end (exit ${status.job.exitCode ?? 'none yet'}) taken as try ${retries + 1}'s, which has no attempt: an earlier try's end counted twice`);
    if (status.phase === 'Succeeded' && status.results?.location) {
      const file = join(status.results.location, 'results', 'try.txt');
      const told = existsSync(file) ? readFileSync(file, 'utf8') : 'nothing';
      if (told !== String(retries + 1) || told !== String(limit + 1)) problems.push(`Succeeded with results of try ${told} (${file}) where its status is on try ${retries + 1} and only try ${limit + 1} exits 0`);
    }
    if (problems.length > 0) {
      details.push(`${entry.planned.name} (retry.limit ${limit}: at most ${limit + 1} tries; ${own.length} pods, tries begun ${[...begun].sort((a, b) => a - b).join(', ') || 'none'}): ${problems.join('; ')}; ${status.phase ?? 'no phase'}/${status.reason ?? ''} ${status.message ?? ''}`);
    }
  }
  return figure('retry runs past retry.limit or counting a try twice', details.length, details);
}

/**
 * Succeeded runs whose result directory does not match status.results (or the job's own output), and
 * runs whose job exited 0 that did not end Succeeded, unless the world destroyed their pod before the
 * controller had a chance (less leader time after the job's end than noChanceMs plus the results'
 * transfer over a slow link to the pod): those are listed apart, with the leader time each had.
 */
export function resultsLostOrUnverified(runs: Runs, destroyed: (entry: RunEntry) => Destruction | undefined): { lost: Figure; noChance: string[] } {
  const details: string[] = [];
  const noChance: string[] = [];
  for (const entry of runs.entries.values()) {
    const status = entry.latest?.status;
    if (!entry.uid || !status) continue;
    if (status.phase === 'Succeeded') {
      const problem = checkResults(entry);
      if (problem) details.push(`${entry.planned.name}: Succeeded but ${problem}`);
      continue;
    }
    if (!(exitsZero(entry.planned.kind) && status.job?.exitCode === 0 && isTerminalPhase(entry.latest))) continue;
    const destruction = destroyed(entry);
    const line = `${entry.planned.name}: the job exited 0 but the run ended ${status.phase}/${status.reason}: ${status.message ?? ''}`;
    const needed = destruction && destruction.neededMs > noChanceMs ? `, its results needed ${seconds(destruction.neededMs)} s` : '';
    const chance = destruction ? ` [its pod ${destruction.how} ${seconds(destruction.at - Date.parse(status.job.finishedAt ?? ''))} s after the job's end; the controller led ${seconds(destruction.leaderMs)} s of that${needed}]` : '';
    if (destruction && destruction.leaderMs < destruction.neededMs) noChance.push(line + chance);
    else details.push(line + chance);
  }
  return { lost: figure('results lost or unverified (runs whose job exited 0)', details.length, details), noChance };
}

function checkResults(entry: RunEntry): string | undefined {
  const results = entry.latest?.status?.results;
  if (!results?.location || !results.retrievedAt) return 'status.results has no location';
  const dir = join(results.location, 'results');
  if (!existsSync(dir)) return `${dir} does not exist`;
  const files = walk(dir);
  const bytes = files.reduce((sum, file) => sum + statSync(file).size, 0);
  if (files.length !== results.files || bytes !== results.bytes) {
    return `${dir} holds ${files.length} files / ${bytes} bytes, status.results says ${results.files} / ${results.bytes}`;
  }
  const name = join(dir, 'name.txt');
  if (!existsSync(name) || readFileSync(name, 'utf8') !== entry.planned.name) return `${name} is not this run's`;
  const data = join(dir, 'data.bin');
  if (!existsSync(data) || statSync(data).size !== entry.planned.resultBytes) return `${data} is not the ${entry.planned.resultBytes} bytes the job wrote`;
  return undefined;
}

export function finalizersLeft(leftover: { name: string; finalizers: string[]; message: string }[]): Figure {
  return figure('finalizers left on deleted runs', leftover.length, leftover.map((run) => `${run.name}: ${run.finalizers.join(', ')} (${run.message})`));
}

/** Runs whose Secret holds a malformed key that were not seen waiting Pending/CredentialsInvalid (their own status, never a stall). */
/**
 * Bad-key runs never seen Pending/CredentialsInvalid while they existed (from their apply to the
 * workload's delete); one whose whole life fell where the controller led under noChanceMs is listed apart.
 */
export function malformedKeyRunsNotHeld(runs: Runs, leaderMs: (from: number, to: number) => number, started: number): { notHeld: Figure; noChance: string[] } {
  const details: string[] = [];
  const noChance: string[] = [];
  for (const entry of runs.entries.values()) {
    if (entry.planned.kind !== 'bad-key' || !entry.uid || entry.heldInvalid) continue;
    const from = started + entry.planned.applyAtMs;
    const lifeMs = entry.planned.actionAfterMs ?? 0;
    const ledMs = leaderMs(from, from + lifeMs);
    const line = `${entry.planned.name}: last seen ${entry.latest?.status?.phase ?? 'no phase'}/${entry.latest?.status?.reason ?? ''} ${entry.latest?.status?.message ?? ''} [the controller led ${seconds(ledMs)} s of its ${seconds(lifeMs)} s]`;
    (ledMs < noChanceMs ? noChance : details).push(line);
  }
  return { notHeld: figure('malformed-key runs not held Pending/CredentialsInvalid', details.length, details), noChance };
}

/** Occurrences of a Runpod key (or a piece of the malformed one) in the controller's log. */
export function keysInLog(log: string, secrets: string[]): Figure {
  const found = secrets.map((secret) => [secret, log.split(secret).length - 1] as const).filter(([, n]) => n > 0);
  return figure('Runpod keys (or pieces) in the controller log', found.reduce((sum, [, n]) => sum + n, 0), found.map(([secret, n]) => `${secret.slice(0, 6)}…: ${n} times`));
}

function runOf(pod: SimPod, runs: Runs): RunEntry | undefined {
  const uid = pod.env.RUNPOD_OPERATOR_RUN;
  return uid ? runs.byUid(uid) : undefined;
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((item) =>
    item.isDirectory() ? walk(join(dir, item.name)) : [join(dir, item.name)]);
}

function figure(name: string, value: number, details: string[]): Figure {
  return { name, value, broken: value > 0, details };
}
