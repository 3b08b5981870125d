// Scale: many runs on one account, as a platform team asks about them. One table per size (N/4 and N),
// each figure measured in that size's own world (API server, simulator in a child process, the
// controller in this process at its production defaults), and with --running M a world holding M
// long runs Running at once.
//   npm run bench -- --runs 200 [--rate-limit relaxed|runpod] [--running 300 [--end-spread 60]] [--job-seconds 5]   (--runs 0: the held part only)
// --rate-limit relaxed: quotas too large to bind, announced in RateLimit headers (the controller's own
// pace); runpod: Runpod's 60/min and 3000/h per key. Prints figures; asserts nothing.
import diagnostics from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { SimConfigInput } from '../test/runpod-sim/config.ts';
import { simPodLogs } from '../test/runpod-sim/client.ts';
import { watchApiRequests } from '../test/support/api-requests.ts';
import { cpuByParty, cpuShares } from './process-cpu.ts';
import {
  callRows, fmtMiB, fmtS, percentile, podsOfRun, reconcileDurations, reconcileStarts, RssSampler, runManifest, runOfPod, simPods, simStats,
  sshConnections, startBenchWorld, totalReconciles, type BenchWorld, type SimPod,
} from './support.ts';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '50' },
    'rate-limit': { type: 'string', default: 'relaxed' },
    running: { type: 'string', default: '0' },
    'job-seconds': { type: 'string', default: '5' },
    'end-spread': { type: 'string', default: '60' },
    'poll-interval': { type: 'string', default: '10s' },
  },
});
const wholeNumber = (flag: 'runs' | 'running' | 'job-seconds' | 'end-spread', min: number): number => {
  const value = Number(args[flag]);
  if (!Number.isInteger(value) || value < min) throw new Error(`--${flag} must be a whole number of at least ${min}, not ${args[flag]}`);
  return value;
};
const runs = wholeNumber('runs', 0);
const running = wholeNumber('running', 0);
const jobSeconds = wholeNumber('job-seconds', 0);
const endSpreadS = wholeNumber('end-spread', 1);
const pollInterval = String(args['poll-interval']);
const pollSeconds = Number(/^(\d+)s$/.exec(pollInterval)?.[1] ?? Number.NaN);
const quotas = {
  relaxed: { enabled: true, minute: { quota: 1_000_000, seconds: 60 }, hour: { quota: 10_000_000, seconds: 3600 } },
  runpod: { enabled: true },
} as const;
const rateLimit = String(args['rate-limit']);
if (!(rateLimit in quotas)) throw new Error(`--rate-limit must be relaxed or runpod, not ${rateLimit}`);
const gpu = 'NVIDIA GeForce RTX 4090';
const simFor = (n: number): SimConfigInput => ({
  gpuTypes: [{ id: gpu, displayName: 'RTX 4090', memoryInGb: 24, pricePerHour: { secure: 0.69, community: 0.34 }, stock: { 'EU-RO-1': n + 16 } }],
  rateLimits: quotas[rateLimit as keyof typeof quotas],
  // An account that rents hundreds of pods has a spend limit to match (Runpod's default, $80/h, holds
  // about 115 of these at once: the controller would rightly hold the rest back).
  account: { spendRateUsdPerHour: Math.max(80, Math.ceil(n * 0.69 * 1.5)) },
});
const ended = ['phase:Succeeded', 'phase:Failed'];
const names = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);
const fmtN = (value: number, digits = 1): string => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
const fmtP = (values: number[]): string => `${fmtS(percentile(values, 50))} / ${fmtS(percentile(values, 99))} / ${fmtS(values.length ? Math.max(...values) : undefined)}`;

/** What a world costs this process while `body` runs: CPU, RSS, event-loop lag. */
async function measured<T>(body: (sampler: RssSampler) => Promise<T>): Promise<{ result: T; cpuS: number; machineBusy: string; lagP99Ms: number; sampler: RssSampler }> {
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  const cpu = process.cpuUsage();
  const machine = machineCpu();
  const sampler = new RssSampler(250);
  try {
    const result = await body(sampler);
    const used = process.cpuUsage(cpu);
    const cpuS = (used.user + used.system) / 1e6;
    const now = machineCpu();
    const busy = now.busy - machine.busy;
    // Where the cores went: this process (the controller, and the bench's own watch) against the rest
    // (the simulator and its pods, the API server, etcd, kubectl), all on one machine.
    const machineBusy = `${Math.round((100 * busy) / (now.total - machine.total))}% busy; this process ${Math.round((100 * cpuS) / busy)}% of it`;
    return { result, cpuS, machineBusy, lagP99Ms: lag.percentile(99) / 1e6, sampler };
  } finally {
    sampler.stop();
    lag.disable();
  }
}

/**
 * Samples the controller's busy workers and ready queue once a second until stop(), from the moment the
 * queue first held fewer runs than workers: the backlog the creates left (the runs that came up first
 * waiting behind the last ones' set-up) is the ramp's, not the hold's.
 */
function sampleWorkers(world: BenchWorld): { stop(): { drainedAt: number | undefined; busy: number; of: number; waitingP99: number } } {
  const busy: number[] = [];
  const waiting: number[] = [];
  let drainedAt: number | undefined;
  const timer = setInterval(() => {
    const stats = world.controllerStats();
    if (!stats) return;
    drainedAt ??= stats.queueLength < world.workers ? Date.now() : undefined;
    if (drainedAt === undefined) return;
    busy.push(stats.activeWorkers);
    waiting.push(stats.queueLength);
  }, 1000);
  return {
    stop() {
      clearInterval(timer);
      return { drainedAt, busy: busy.reduce((sum, n) => sum + n, 0) / Math.max(1, busy.length), of: world.workers, waitingP99: percentile(waiting, 99) ?? Number.NaN };
    },
  };
}

async function sshAccepted(world: BenchWorld, pods: SimPod[]): Promise<number> {
  let accepted = 0;
  for (const pod of pods) accepted += sshConnections(await simPodLogs(world.sim.adminUrl, pod.id)).accepted;
  return accepted;
}

/** RSS and live V8 heap once garbage is collected (node --expose-gc: bench/run.ts passes it). */
const afterGc = async (): Promise<{ rss: number; heap: number }> => {
  for (let i = 0; i < 3; i++) {
    globalThis.gc?.();
    await sleep(200);
  }
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heap: heapUsed };
};

/** The machine's CPU time so far (all cores, /proc/stat), in seconds: busy and total. */
function machineCpu(): { busy: number; total: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((sum, n) => sum + n, 0) / 100;
  const idle = ((fields[3] ?? 0) + (fields[4] ?? 0)) / 100;
  return { busy: total - idle, total };
}

type Table = Map<string, string>;

/**
 * When the controller (in this process) sent each run's first create, from undici's diagnostics channel:
 * the controller's part of apply -> create ends there, the simulator's starts.
 */
function watchCreatesSent(runCount: number, onAllSent: () => void): { sentAt: Map<string, number>; stop: () => void } {
  const sentAt = new Map<string, number>();
  const onRequest = (message: unknown): void => {
    const { request } = message as { request: { method: string; path: string; body?: unknown } };
    if (request.method !== 'POST' || request.path !== '/v2/pods') return;
    const { name } = JSON.parse(String(request.body)) as { name?: string };
    const run = name === undefined ? undefined : runOfPod(name);
    if (run === undefined || sentAt.has(run)) return;
    sentAt.set(run, Date.now());
    if (sentAt.size === runCount) onAllSent();
  };
  diagnostics.subscribe('undici:request:create', onRequest);
  return { sentAt, stop: () => diagnostics.unsubscribe('undici:request:create', onRequest) };
}

/** Every run of the world deleted, and gone off the watch (their finalizers confirmed their pods gone). */
async function deleteAll(world: BenchWorld, runNames: string[], timeoutMs: number): Promise<void> {
  await world.kubectl(['delete', 'rpr', '--all', '--wait=false']);
  await world.tracker.waitForAll(runNames, ['deleted'], timeoutMs);
}

// --- N runs applied at once, each a short job with one result file ----------------------------
async function batch(n: number): Promise<Table> {
  const table: Table = new Map();
  const world = await startBenchWorld(`scale-${n}`, { sim: simFor(n), pollInterval, watchdogPeriod: '10s' });
  try {
    await sleep(1000);
    const idle = await afterGc();
    const runNames = names('batch', n);
    const manifests = runNames.map((name) => runManifest(name, {
      gpu: { types: [gpu] }, results: { path: 'output' },
      job: { command: ['sh', '-c', `mkdir -p output && sleep ${jobSeconds} && echo done > output/done.txt`] },
      limits: { maxRuntimeSeconds: 1800, readyTimeoutSeconds: 900, bootGraceSeconds: 1200 },
    }));
    const reconcilesBefore = totalReconciles(world.controllerStats()) ?? 0;
    const apiRequests = watchApiRequests();
    let beforeCreates = new Map<string, number>();
    const cpuAtApply = cpuByParty(world.sim.pid);
    let cpuAtLastCreate = cpuAtApply;
    const creates = watchCreatesSent(n, () => {
      beforeCreates = apiRequests.snapshot();
      cpuAtLastCreate = cpuByParty(world.sim.pid);
    });
    const { result: { startedAt, applyMs }, cpuS, machineBusy, lagP99Ms, sampler } = await measured(async () => {
      const { startedAt: at, tookMs } = await world.apply(manifests);
      await world.tracker.waitForAll(runNames, ended, 300_000 + n * (rateLimit === 'runpod' ? 10_000 : 3000));
      return { startedAt: at, applyMs: tookMs };
    });
    creates.stop();
    apiRequests.stop();
    const wallMs = Math.max(...runNames.map((name) => world.tracker.at(name, 'phase:Succeeded') ?? world.tracker.at(name, 'phase:Failed') ?? Number.NaN)) - startedAt;
    const held = await afterGc();
    const pods = await simPods(world.sim.adminUrl);
    const stats = await simStats(world.sim.adminUrl);
    const firstCreate = (name: string): number | undefined => podsOfRun(pods, name).map((pod) => Date.parse(pod.createdAt)).sort((a, b) => a - b)[0];
    /** Per run, the time from `from` to `to`, where both are known. */
    const between = (from: (name: string) => number | undefined, to: (name: string) => number | undefined): number[] => runNames.map((name) => {
      const [start, end] = [from(name), to(name)];
      return start !== undefined && end !== undefined ? end - start : undefined;
    }).filter((ms): ms is number => ms !== undefined);
    const applied = (): number => startedAt;
    const succeeded = runNames.filter((name) => world.tracker.runs.get(name)?.last?.status?.phase === 'Succeeded').length;
    const deleteWaits = runNames.map((name) => {
      const retrieved = world.tracker.at(name, 'cond:ResultsRetrieved');
      const deleted = podsOfRun(pods, name).map((pod) => (pod.deletedAt ? Date.parse(pod.deletedAt) : Number.NaN))[0];
      return retrieved !== undefined && deleted !== undefined && Number.isFinite(deleted) ? deleted - retrieved : undefined;
    }).filter((ms): ms is number => ms !== undefined);
    const account = callRows(stats, 'account');
    const accountTotal = account.reduce((sum, row) => sum + row.count, 0);
    const throttled = stats.requests.filter((e) => e.caller === 'account' && e.status === 429).reduce((sum, e) => sum + e.count, 0);
    const listsNeeded = Math.ceil(wallMs / 1000 / pollSeconds);
    const bound = 3 + listsNeeded / n;
    const tracked = runNames.map((name) => world.tracker.runs.get(name));
    const statusWrites = tracked.reduce((sum, run) => sum + (run?.statusChanges ?? 0), 0);
    const phaseChanges = tracked.reduce((sum, run) => sum + (run?.timeline.filter((t) => t.what.startsWith('phase:')).length ?? 0), 0);
    const ssh = await sshAccepted(world, pods);

    table.set('outcome', `${succeeded}/${n} Succeeded, ${pods.length} pods created`);
    table.set('apply -> create p50 / p99 / max', fmtP(between(applied, firstCreate)));
    // kubectl writes a List's objects one after another: the last exists seconds after the first. From
    // each run's own arrival on the watch, the wait is the controller's alone.
    table.set('  kubectl apply of all', fmtS(applyMs));
    const added = (name: string): number | undefined => world.tracker.at(name, 'added');
    const sent = (name: string): number | undefined => creates.sentAt.get(name);
    table.set('  run on the watch -> create p50 / p99 / max', fmtP(between(added, firstCreate)));
    table.set('    on the watch -> POST sent', fmtP(between(added, sent)));
    table.set('    POST sent -> Runpod has it', fmtP(between(sent, firstCreate)));
    // On one machine the first pods boot (real sshd and shells) while the last creates are prepared.
    const lastSent = Math.max(...creates.sentAt.values());
    table.set('  machine CPU until the last create', `${fmtS(lastSent - startedAt)} wall: ${cpuShares(cpuAtApply, cpuAtLastCreate)}`);
    table.set('apply -> Running p50 / p99', (() => { const v = between(applied, (name) => world.tracker.at(name, 'phase:Running')); return `${fmtS(percentile(v, 50))} / ${fmtS(percentile(v, 99))}`; })());
    table.set('first apply -> last end', fmtS(wallMs));
    table.set('runs per minute', fmtN(n / (wallMs / 60_000)));
    table.set('account requests per run', fmtN(accountTotal / n, 2));
    for (const row of account) table.set(`  ${row.endpoint}`, fmtN(row.count / n, 2));
    table.set('  lower bound (3 + polls / runs)', `${fmtN(bound, 2)} (${listsNeeded} polls at ${pollInterval})`);
    table.set('  ratio to the bound', `${fmtN(accountTotal / n / bound, 2)}x`);
    table.set('429s received', String(throttled));
    table.set('status writes / phase changes per run', `${fmtN(statusWrites / n)} / ${fmtN(phaseChanges / n)}`);
    const perRun = (counts: Map<string, number>): string => fmtN([...counts.values()].reduce((sum, c) => sum + c, 0) / n);
    table.set('API-server requests per run: until the last create / all', `${perRun(beforeCreates)} / ${perRun(apiRequests.counts)}`);
    for (const [what, count] of [...apiRequests.counts].sort((a, b) => b[1] - a[1])) table.set(`  ${what}`, `${fmtN((beforeCreates.get(what) ?? 0) / n)} / ${fmtN(count / n)}`);
    table.set('reconciles per run', fmtN(((totalReconciles(world.controllerStats()) ?? 0) - reconcilesBefore) / n));
    table.set('SSH connections per run', fmtN(ssh / n));
    table.set('results -> pod deleted, longest', fmtS(deleteWaits.length ? Math.max(...deleteWaits) : undefined));
    table.set('controller CPU per run', `${fmtN((cpuS * 1000) / n, 0)} ms`);
    table.set('machine CPU over the batch', machineBusy);
    table.set('RSS idle / peak', `${fmtMiB(idle.rss)} / ${fmtMiB(sampler.peak())}`);
    // RSS keeps what the batch's churn made V8 and malloc reserve; the live heap is what holding costs
    // (the bench's own watch keeps a copy of each run too: about half of it).
    table.set('per 1000 finished runs held: RSS / live heap', `${fmtMiB(((held.rss - idle.rss) * 1000) / n)} / ${fmtMiB(((held.heap - idle.heap) * 1000) / n)}`);
    table.set('event-loop lag p99', `${fmtN(lagP99Ms, 0)} ms`);
    await deleteAll(world, runNames, 120_000);
  } finally {
    table.set('leak check', await world.stop());
  }
  return table;
}

// --- M long runs held Running at once; their jobs end one after another ------------------------
async function held(m: number): Promise<Table> {
  const table: Table = new Map();
  const world = await startBenchWorld(`held-${m}`, { sim: simFor(m), pollInterval, watchdogPeriod: '10s' });
  // Every job ends at its own moment past a ramp that lets all M be Running first: END + (i mod S) s, S the
  // --end-spread (60 by default: M ends within a minute, the hardest case; a longer S, ends as batches see them)
  // on the pod's clock (the simulator's pods share this machine's), so "job end -> seen" is exact. 120 + M s
  // was too short for 300 on two cores (221 Running when the first job ended): every pod up slows the next.
  const rampS = 120 + 2 * m;
  try {
    const runNames = names('held', m);
    const endAt = Math.ceil(Date.now() / 1000) + rampS;
    const endOf = (i: number): number => (endAt + (i % endSpreadS)) * 1000;
    const manifests = runNames.map((name, i) => runManifest(name, {
      gpu: { types: [gpu] }, results: { path: 'output' },
      job: { command: ['sh', '-c', `mkdir -p output; left=$((${endOf(i) / 1000} - $(date +%s))); [ "$left" -gt 0 ] && sleep "$left"; echo done > output/done.txt`] },
      limits: { maxRuntimeSeconds: 3600, readyTimeoutSeconds: 900, bootGraceSeconds: 1800 },
    }));
    const { result, cpuS, machineBusy, lagP99Ms } = await measured(async () => {
      await world.apply(manifests);
      const allRunning = await world.tracker.waitForAll(runNames, ['phase:Running'], rampS * 1000);
      const runningAt = Date.now();
      const pods = await simPods(world.sim.adminUrl);
      const sshBefore = await sshAccepted(world, pods);
      const firstEnd = endOf(0);
      const durationsFrom = reconcileDurations.length;
      const workload = sampleWorkers(world);
      const apiRequests = watchApiRequests();
      const cpuHeld = cpuByParty(world.sim.pid);
      await sleep(Math.max(0, firstEnd - Date.now() - 2000));
      const hold = { from: runningAt, to: Date.now(), workers: workload.stop(), durations: reconcileDurations.slice(durationsFrom), apiRequests: apiRequests.snapshot() };
      apiRequests.stop();
      const cpuEnds = cpuByParty(world.sim.pid);
      const sshAfter = await sshAccepted(world, pods);
      const heldMinutes = (hold.to - runningAt) / 60_000;
      await world.tracker.waitForAll(runNames, ended, 600_000 + m * 2000 + endSpreadS * 1000);
      const cpu = { held: cpuShares(cpuHeld, cpuEnds), ends: cpuShares(cpuEnds, cpuByParty(world.sim.pid)) };
      return { allRunning, sshPerMinute: (sshAfter - sshBefore) / heldMinutes, heldMinutes, hold, cpu };
    });
    // While held (before any job ended, once the creates' backlog drained): how long each run went between
    // two reconciles, i.e. how old its last judgment (of its job, cost and deadline) could get, and what the
    // workers were doing meanwhile. With 250 held the queue held ~200 runs for the first 18 s, then <= 30.
    const { hold } = result;
    const steadyFrom = hold.workers.drainedAt ?? hold.to;
    const gaps = runNames.flatMap((name) => {
      const starts = (reconcileStarts.get(`${world.namespace}/${name}`) ?? []).filter((at) => at >= steadyFrom && at <= hold.to);
      return starts.slice(1).map((at, i) => at - (starts[i] as number));
    });
    // From the job's end as recorded (status.job.finishedAt): a run that came up after its END ended at once.
    const seen = runNames.map((name) => {
      const at = ['phase:Retrieving', ...ended].map((label) => world.tracker.at(name, label)).filter((t): t is number => t !== undefined).sort((a, b) => a - b)[0];
      const finishedAt = Date.parse(world.tracker.runs.get(name)?.last?.status?.job?.finishedAt ?? '');
      return at === undefined || !Number.isFinite(finishedAt) ? undefined : at - finishedAt;
    }).filter((ms): ms is number => ms !== undefined);
    table.set('runs Running at once', `${result.allRunning}/${m} before the first job ended`);
    table.set('job end -> seen p50 / p99 / max', fmtP(seen));
    table.set('  in poll intervals, p99', fmtN((percentile(seen, 99) ?? Number.NaN) / 1000 / pollSeconds, 2));
    table.set('while held: the creates\' backlog drained', `${fmtS(steadyFrom - hold.from)} after the last run was Running (then:)`);
    table.set('  a run judged every p50 / p99 / max', fmtP(gaps));
    table.set('  judged every, in poll intervals, p99', fmtN((percentile(gaps, 99) ?? Number.NaN) / 1000 / pollSeconds, 2));
    table.set('  reconcile took p50 / p99', `${fmtS(percentile(hold.durations, 50))} / ${fmtS(percentile(hold.durations, 99))}`);
    table.set('  workers busy (mean) / runs waiting (p99)', `${fmtN(hold.workers.busy)} of ${hold.workers.of} / ${fmtN(hold.workers.waitingP99, 0)}`);
    const perReconcile = (count: number): string => fmtN(count / hold.durations.length);
    const byKind = [...hold.apiRequests].sort((a, b) => b[1] - a[1]);
    table.set('  API-server requests per reconcile', `${perReconcile(byKind.reduce((sum, [, count]) => sum + count, 0))} (${byKind.map(([what, count]) => `${what} ${perReconcile(count)}`).join(', ')})`);
    table.set('  machine CPU while held, by party', result.cpu.held);
    table.set('machine CPU from the first end to the last, by party', result.cpu.ends);
    table.set('SSH handshakes per minute while held', `${fmtN(result.sshPerMinute)} (over ${fmtN(result.heldMinutes)} min)`);
    table.set('controller CPU per run', `${fmtN((cpuS * 1000) / m, 0)} ms`);
    table.set('machine CPU over the hold', machineBusy);
    table.set('event-loop lag p99', `${fmtN(lagP99Ms, 0)} ms`);
    await deleteAll(world, runNames, 300_000);
  } finally {
    table.set('leak check', await world.stop());
  }
  return table;
}

function print(title: string, columns: [string, Table][]): void {
  // Every column's rows, each after the row it follows in its own column (a size may call an endpoint others do not).
  const rows: string[] = [];
  for (const [, table] of columns) {
    let previous: string | undefined;
    for (const row of table.keys()) {
      if (!rows.includes(row)) rows.splice(previous === undefined ? 0 : rows.indexOf(previous) + 1, 0, row);
      previous = row;
    }
  }
  const width = Math.max(...rows.map((row) => row.length));
  const colWidth = Math.max(...columns.flatMap(([head, table]) => [head.length, ...[...table.values()].map((v) => v.length)]));
  console.log(`\n== ${title}`);
  console.log(`  ${''.padEnd(width)}  ${columns.map(([head]) => head.padEnd(colWidth)).join('  ')}`);
  for (const row of rows) console.log(`  ${row.padEnd(width)}  ${columns.map(([, table]) => (table.get(row) ?? '').padEnd(colWidth)).join('  ')}`);
}

console.log(`scale: --runs ${runs} --rate-limit ${rateLimit} --running ${running}; poll ${pollInterval}, jobs of ${jobSeconds} s with one result file (${process.version})`);
const sizes = runs === 0 ? [] : [...new Set([Math.ceil(runs / 4), runs])];
const columns: [string, Table][] = [];
for (const n of sizes) columns.push([`${n} runs`, await batch(n)]);
if (columns.length > 0) print(`runs applied at once, rate limits ${rateLimit}`, columns);
if (running > 0) print(`${running} runs held Running, their jobs ending over ${Math.min(endSpreadS, running)} s`, [[`${running} held`, await held(running)]]);
// The private API server and etcd are children of this process; the 'exit' handler of the harness stops them.
process.exit();
