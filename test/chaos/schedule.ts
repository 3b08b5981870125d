// The whole session planned up front from one seed: which runs are applied when, which faults fire
// when, and when the controller is killed (at a random moment or inside a named crash window). The
// same seed and options give the same schedule, and its hash says so.
import { createHash } from 'node:crypto';
import { drawConditions, plainConditions, type SimConditions } from './conditions.ts';
import { faultGenerators, type FaultGeneratorName, type FaultParams } from './faults.ts';
import { Random } from './random.ts';
import { drawKinds, planRun, type PlannedRun } from './workload.ts';

/**
 * Where a kill lands. The first five are the crash windows of issue 9, pre-retry is issue 20's; `random` is any moment.
 * - pre-post: the attempt is in status, its POST /v2/pods never reached Runpod
 * - post-create: Runpod created the pod, the controller never saw the answer (no pod id recorded)
 * - mid-delete: a DELETE /v2/pods/{id} in flight (sent and answered, or not sent)
 * - mid-retrieval: the results are being copied (a staging directory exists)
 * - post-marker: the pod has the `retrieved` marker, the status does not say retrieved yet
 * - pre-retry: a run's status says Retrying (the failed try counted, its pod marked Deleting) and the
 *   next try has no pod: either before the failed try's pod is deleted (its DELETE held and dropped), or
 *   once it is confirmed deleted, in the backoff before the next create (`deleteSent`)
 */
export const killWindows = ['pre-post', 'post-create', 'mid-delete', 'mid-retrieval', 'post-marker', 'pre-retry', 'random'] as const;
/** Windows added after seeds were reported: placed in the rotation by a stream of their own (buildSchedule). */
const laterWindows: readonly KillWindow[] = ['pre-retry'];
export type KillWindow = (typeof killWindows)[number];

export interface PlannedFault { atMs: number; name: FaultGeneratorName; params: FaultParams; /** Which live pod, as a fraction of the list. */ podPick: number }
export interface PlannedKill {
  /** When the kill is armed (random: when it happens). */
  atMs: number;
  window: KillWindow;
  /**
   * mid-delete: whether Runpod got the DELETE before the kill. pre-retry: whether the failed try's pod
   * was deleted before the kill (the kill lands in the backoff), or its DELETE is held and dropped.
   */
  deleteSent: boolean;
  /** How long the controller stays down before it is started again. */
  restartAfterMs: number;
  /** The new leader's first pod lists Runpod refuses with a 401 (0: none): a blip at a restart is evidence, not a verdict. */
  refusedFirstLists: number;
}

export interface Schedule {
  seed: number;
  runs: PlannedRun[];
  faults: PlannedFault[];
  kills: PlannedKill[];
  /** How the simulated Runpod behaves all session long. */
  conditions: SimConditions;
  /** How long the session applies runs (faults and kills fall in it plus a tail). */
  spanMs: number;
  hash: string;
}

export interface ScheduleOptions {
  runs: number;
  seed: number;
  /** Faults in the session; default one per run. */
  faults?: number;
  /** Controller kills; default one per five runs (at least one). */
  kills?: number;
  /** Which faults may be drawn; default every generator. */
  faultNames?: readonly FaultGeneratorName[];
  /** Which windows kills cycle through; default every window. */
  windows?: readonly KillWindow[];
  /** Milliseconds between applies on average; default 3000. */
  applySpacingMs?: number;
  /** `drawn` (the default): the simulator's session-long behaviours are drawn from the seed; `plain`: its defaults. */
  conditions?: 'drawn' | 'plain';
  /** Runs whose Secret holds a malformed key (default 1). */
  badKeyRuns?: number;
  /** Runs of kind `retry` (spec.retry; default one per ten runs, at least one). */
  retryRuns?: number;
}

export function buildSchedule(options: ScheduleOptions): Schedule {
  const random = new Random(options.seed);
  const spacing = options.applySpacingMs ?? 3000;
  const spanMs = Math.max(10_000, options.runs * spacing);
  const runs = planRuns(random, options.runs, spanMs);
  const names = options.faultNames ?? (Object.keys(faultGenerators) as FaultGeneratorName[]);
  const faultCount = names.length === 0 ? 0 : options.faults ?? options.runs;
  const faults: PlannedFault[] = Array.from({ length: faultCount }, () => {
    const name = random.pick(names);
    return { atMs: random.int(2000, spanMs + 30_000), name, params: faultGenerators[name].plan(random), podPick: random.next() };
  }).sort((a, b) => a.atMs - b.atMs);
  const windows = options.windows ?? killWindows;
  const killCount = windows.length === 0 ? 0 : options.kills ?? Math.max(1, Math.round(options.runs / 5));
  // Every window before any repeats, in a seeded order. The windows of issue 9 are shuffled with the
  // draws they always had, and a later window takes a place drawn from a stream of its own: every other
  // draw of a seed (kill times, conditions) stays what it was before that window existed.
  const order = random.shuffle(windows.filter((window) => !laterWindows.includes(window)));
  const placing = new Random(options.seed ^ 0x2c1b3c6d);
  for (const window of laterWindows.filter((w) => windows.includes(w))) order.splice(placing.int(0, order.length), 0, window);
  const kills = Array.from({ length: killCount }, (_, index) => ({
    atMs: random.int(5000, spanMs + 20_000), window: order[index % order.length]!,
    deleteSent: random.next() < 0.5, restartAfterMs: random.int(500, 3000),
  })).sort((a, b) => a.atMs - b.atMs);
  // Drawn last, so a seed's runs, faults and kills stay what they were before conditions existed.
  const conditions = options.conditions === 'plain' ? plainConditions : drawConditions(random);
  // What came later draws from a stream of its own: every draw above stays what it was, conditions or not.
  const later = new Random(options.seed ^ 0x5bd1e995);
  const withRefusals: PlannedKill[] = kills.map((kill) => ({ ...kill, refusedFirstLists: later.next() < 0.5 ? later.int(2, 4) : 0 }));
  for (let i = 0; i < (options.badKeyRuns ?? 1); i++) runs.push(planRun(later, runs.length, 'bad-key', later.int(0, spanMs)));
  // After the bad-key runs, from the same stream: a seed's earlier plan stays what it was, with these added.
  const retryRuns = options.retryRuns ?? Math.max(1, Math.round(options.runs / 10));
  for (let i = 0; i < retryRuns; i++) runs.push(planRun(later, runs.length, 'retry', later.int(0, spanMs)));
  const plan = { seed: options.seed, runs, faults, kills: withRefusals, conditions, spanMs };
  return { ...plan, hash: createHash('sha256').update(JSON.stringify(plan)).digest('hex').slice(0, 16) };
}

/** Apply times: mostly spread out, some in bursts of three to five (more runs than stock at once: capacity waits). */
function planRuns(random: Random, count: number, spanMs: number): PlannedRun[] {
  const kinds = drawKinds(random, count);
  const times: number[] = [];
  while (times.length < count) {
    const at = random.int(0, spanMs);
    const burst = random.next() < 0.2 ? random.int(3, 5) : 1;
    for (let i = 0; i < burst && times.length < count; i++) times.push(at);
  }
  times.sort((a, b) => a - b);
  return kinds.map((kind, index) => planRun(random, index, kind, times[index]!));
}
