// Controller figures, end to end: the real API server, the real kubectl, the Runpod simulator with
// real pods (in a child process) and the controller in this process. Prints figures; asserts nothing.
//   node_modules/.bin/node bench/controller.bench.ts
// Sizes and settings (environment):
//   BENCH_RUNS=50            runs applied at once in the load part (200 for the full figure)
//   BENCH_LARGE_MB=300       size of the large result file, MiB
//   BENCH_POLL_INTERVAL=10s  the controller's --poll-interval (its production default)
//   BENCH_WATCHDOG_PERIOD=10s the controller's --watchdog-period (its production default)
//   BENCH_RATE_LIMITS=relaxed the load part's simulator quotas: relaxed (default: huge, announced in
//                            RateLimit headers), runpod (60/min, 3000/h) or none (no quotas, no headers)
//   BENCH_ONLY=1,2,3,4       which parts to run
//   BENCH_LOG_LEVEL=info, BENCH_LOG_DIR=DIR  the controller's log level, and a directory to keep its logs in
// Times are taken in this process: Date.now() just before `kubectl apply`, the arrival of each
// status change on a watch of our own, and the simulator's own record of each pod (createdAt, deletedAt).
import { availableParallelism, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { configSchema } from '../src/config.ts';
import type { ControllerStats } from '../src/kube/controller.ts';
import type { SimConfigInput } from '../test/runpod-sim/config.ts';
import { simPodLogs } from '../test/runpod-sim/client.ts';
import {
  busiestWindow, callTotal, diffStats, distribution, fmtMiB, fmtMs, fmtS, percentile, podsOfRun, printCalls, printTimeline,
  reconcileBreakdown, reconcileDurations, RssSampler, runManifest, simPods, simStats, sshConnections, startBenchWorld, totalReconciles,
  type BenchWorld, type SimStats,
} from './support.ts';

const runs = Number(process.env.BENCH_RUNS ?? 50);
const largeMb = Number(process.env.BENCH_LARGE_MB ?? 300);
const pollInterval = process.env.BENCH_POLL_INTERVAL ?? '10s';
const watchdogPeriod = process.env.BENCH_WATCHDOG_PERIOD ?? '10s';
const rateLimitModes = {
  // Quotas the controller learns from the RateLimit headers, too large to bind: the controller's own pace.
  relaxed: { perRunTimeoutMs: 4000, label: 'RELAXED (1,000,000/min, sent in RateLimit headers as Runpod does)', config: { enabled: true, minute: { quota: 1_000_000, seconds: 60 }, hour: { quota: 10_000_000, seconds: 3600 } } },
  // Runpod's documented quotas.
  runpod: { perRunTimeoutMs: 10_000, label: 'RUNPOD\'S (60/min, 3000/h per account key)', config: { enabled: true } },
  // No quotas and no headers: the controller falls back to its built-in assumption (30/min).
  none: { perRunTimeoutMs: 15_000, label: 'OFF (no RateLimit headers: the controller assumes its default budget)', config: { enabled: false } },
} as const;
const rateLimitMode = (process.env.BENCH_RATE_LIMITS ?? 'relaxed') as keyof typeof rateLimitModes;
if (!(rateLimitMode in rateLimitModes)) throw new Error(`BENCH_RATE_LIMITS must be one of ${Object.keys(rateLimitModes).join(', ')}`);
const only = new Set((process.env.BENCH_ONLY ?? '1,2,3,4').split(',').map((part) => part.trim()));
const workers = configSchema.parse({}).maxConcurrentReconciles;
const pollSeconds = Number(/^(\d+(?:\.\d+)?)s$/.exec(pollInterval)?.[1] ?? Number.NaN);

const summary: [string, string, string][] = [];
const note = (part: string, figure: string, value: string): void => { summary.push([part, figure, value]); };

// The single-run parts: the simulator's defaults (stock, prices, Runpod's 60/min + 3000/h quotas),
// with room for a pod's whole sshd log.
const singleSim: SimConfigInput = { pods: { logBytes: 4 * 1024 * 1024 } };

const quickstartScript = [
  'mkdir -p output',
  'echo "hello from $(hostname)" > output/hello.txt',
  'seq 1 1000 > output/numbers.txt',
  'date -u +%FT%TZ > output/finished-at.txt',
].join('\n');

const reconcilesBetween = (after: ControllerStats | undefined, before: ControllerStats | undefined): number | undefined => {
  const a = totalReconciles(after);
  const b = totalReconciles(before) ?? 0;
  return a === undefined ? undefined : a - b;
};

/** A world for one part; whatever happens in it, it ends with the leak check (in the summary too). */
async function inWorld(part: string, prefix: string, sim: SimConfigInput, body: (world: BenchWorld) => Promise<void>): Promise<void> {
  const world = await startBenchWorld(prefix, { sim, pollInterval, watchdogPeriod });
  try {
    await body(world);
  } finally {
    const leaks = await world.stop();
    console.log(`    controller log lines at warn or above: ${world.problems.length}${world.problems.length > 0 ? `, the first: ${world.problems.slice(0, 3).join(' | ')}` : ''}`);
    console.log(`    leak check: ${leaks}`);
    note(part, 'leak check', leaks);
  }
}

function lastStatus(world: BenchWorld, name: string): string {
  const status = world.tracker.runs.get(name)?.last?.status;
  return status ? `${status.phase}/${status.reason}: ${status.message}` : 'no status';
}

async function deleteRun(world: BenchWorld, name: string): Promise<{ tookMs: number; podGoneMs: number | undefined; calls: SimStats }> {
  const before = await simStats(world.sim.adminUrl);
  const started = Date.now();
  const result = await world.kubectl(['delete', 'rpr', name, '--timeout=180s']);
  if (result.status !== 0) console.log(`    kubectl delete: ${result.stderr.trim()}`);
  const goneAt = await world.tracker.waitFor(name, 'deleted', 60_000);
  const pods = podsOfRun(await simPods(world.sim.adminUrl), name);
  const lastDeleted = Math.max(...pods.map((pod) => (pod.deletedAt ? Date.parse(pod.deletedAt) : Number.NaN)));
  return {
    tookMs: (goneAt ?? Number.NaN) - started,
    podGoneMs: Number.isFinite(lastDeleted) ? lastDeleted - started : undefined,
    calls: diffStats(await simStats(world.sim.adminUrl), before),
  };
}

// --- 1. provisioning -------------------------------------------------------------------------
async function provisioning(): Promise<void> {
  console.log('\n== 1. One run\'s provisioning: apply -> PodReady (job: sleep 3600), then delete');
  await inWorld('1 provisioning', 'bench-prov', singleSim, async (world) => {
    const name = 'prov';
    const { startedAt, tookMs } = await world.apply([runManifest(name, { job: { command: ['sleep', '3600'] } })]);
    const readyAt = await world.tracker.waitFor(name, 'cond:PodReady', 180_000);
    const atReady = await simStats(world.sim.adminUrl);
    const reconcilesAtReady = totalReconciles(world.controllerStats());
    const [pod] = podsOfRun(await simPods(world.sim.adminUrl), name);
    const createMs = pod ? Date.parse(pod.createdAt) - startedAt : undefined;
    const addedAt = world.tracker.at(name, 'added');
    const seenToCreate = pod && addedAt !== undefined ? Date.parse(pod.createdAt) - addedAt : undefined;
    console.log(`    kubectl apply process, start to exit: ${fmtS(tookMs)}; apply -> the run arrives on a watch: ${fmtS(addedAt === undefined ? undefined : addedAt - startedAt)}`);
    console.log(`    apply -> POST /v2/pods received by Runpod (simulator createdAt): ${fmtS(createMs)}, of which run on the watch -> create: ${fmtS(seenToCreate)}`);
    console.log(`    apply -> PodReady (condition True, arrival on a watch): ${fmtS(readyAt === undefined ? undefined : readyAt - startedAt)}`
      + (readyAt === undefined ? `  TIMED OUT: ${lastStatus(world, name)}` : ''));
    if (pod && readyAt !== undefined) console.log(`    create -> PodReady: ${fmtS(readyAt - Date.parse(pod.createdAt))}`);
    console.log(`    reconciles until PodReady: ${reconcilesAtReady ?? 'n/a'}`);
    console.log('    timeline (from the moment before kubectl apply):');
    printTimeline(world.tracker.runs.get(name), startedAt, '      ');
    printCalls('Runpod calls until PodReady, account key', atReady, 'account');
    if (callTotal(atReady, 'pod') > 0) printCalls('Runpod calls until PodReady, pod keys (watchdog)', atReady, 'pod');

    const beforeDelete = world.controllerStats();
    const deletion = await deleteRun(world, name);
    console.log(`    kubectl delete -> run gone (finalizer removed): ${fmtS(deletion.tookMs)}; -> pod deleted at Runpod: ${fmtS(deletion.podGoneMs)}; `
      + `reconciles meanwhile: ${reconcilesBetween(world.controllerStats(), beforeDelete) ?? 'n/a'}`);
    printCalls('Runpod calls for the delete, account key', deletion.calls, 'account');

    note('1 provisioning', 'apply -> create request', `${fmtS(createMs)} (run on the watch -> create ${fmtS(seenToCreate)})`);
    note('1 provisioning', 'apply -> PodReady', fmtS(readyAt === undefined ? undefined : readyAt - startedAt));
    note('1 provisioning', 'Runpod calls to PodReady (account)', `${callTotal(atReady, 'account')} (${shortCalls(atReady, 'account')})`);
    note('1 provisioning', 'delete -> run gone', fmtS(deletion.tookMs));
  });
}

function shortCalls(stats: SimStats, caller: 'account' | 'pod'): string {
  const rows = new Map<string, number>();
  for (const entry of stats.requests.filter((e) => e.caller === caller)) {
    const key = `${entry.method} ${entry.path.replace('/v2', '')}`;
    rows.set(key, (rows.get(key) ?? 0) + entry.count);
  }
  return [...rows.entries()].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(', ');
}

// --- 2. a whole life -------------------------------------------------------------------------
async function wholeLife(): Promise<void> {
  console.log('\n== 2. One run\'s whole life: a quickstart-like job (3 result files) -> Succeeded, pod deleted');
  await inWorld('2 whole life', 'bench-life', singleSim, async (world) => {
    const name = 'quickstart';
    reconcileDurations.length = 0;
    const { startedAt } = await world.apply([runManifest(name, {
      job: { command: ['sh', '-c', quickstartScript] }, results: { path: 'output' },
      limits: { maxRuntimeSeconds: 600, maxCostUsd: '1.00', readyTimeoutSeconds: 120 },
    })]);
    const endedAt = await world.tracker.waitFor(name, ['phase:Succeeded', 'phase:Failed'], 300_000);
    const stats = await simStats(world.sim.adminUrl);
    const controllerStats = world.controllerStats();
    const run = world.tracker.runs.get(name)?.last;
    const pods = podsOfRun(await simPods(world.sim.adminUrl), name);
    const pod = pods[0];
    const ssh = pod ? sshConnections(await simPodLogs(world.sim.adminUrl, pod.id)) : undefined;
    const podGone = pod?.deletedAt ? Date.parse(pod.deletedAt) - startedAt : undefined;
    console.log(`    outcome: ${lastStatus(world, name)}; results: ${run?.status?.results?.files ?? '?'} files, ${run?.status?.results?.bytes ?? '?'} bytes`);
    console.log(`    apply -> ${run?.status?.phase ?? 'end'} (arrival on a watch): ${fmtS(endedAt === undefined ? undefined : endedAt - startedAt)}`);
    console.log(`    apply -> pod deleted at Runpod (simulator deletedAt): ${fmtS(podGone)}; pod lifetime ${fmtS(pod?.deletedAt ? Date.parse(pod.deletedAt) - Date.parse(pod.createdAt) : undefined)}, billed ~$${run?.status?.estimatedCostUsd ?? '?'}`);
    const durations = [...reconcileDurations];
    console.log(`    reconciles: ${totalReconciles(controllerStats) ?? 'n/a'} (${reconcileBreakdown(controllerStats)}); duration p50 ${fmtMs(percentile(durations, 50))}, max ${fmtMs(Math.max(...durations))} (the retrieving one included)`);
    console.log(`    SSH connections to the pod (sshd "Accepted publickey" lines): ${ssh?.accepted ?? 'n/a'}; unauthenticated (closed/reset before auth: the simulator's readiness probe): ${ssh?.preauthClosed ?? 'n/a'}`);
    console.log(`    pods created: ${pods.length}`);
    console.log('    timeline (from the moment before kubectl apply):');
    printTimeline(world.tracker.runs.get(name), startedAt, '      ');
    printCalls('Runpod calls, account key (the controller)', stats, 'account');
    printCalls('Runpod calls, pod key (the pod\'s watchdog)', stats, 'pod');

    const deletion = await deleteRun(world, name);
    console.log(`    kubectl delete of the finished run -> gone: ${fmtS(deletion.tookMs)}; Runpod calls for it: ${callTotal(deletion.calls, 'account')} (${shortCalls(deletion.calls, 'account') || 'none'})`);

    note('2 whole life', 'apply -> Succeeded (pod deleted)', fmtS(endedAt === undefined ? undefined : endedAt - startedAt));
    note('2 whole life', 'Runpod calls, account', `${callTotal(stats, 'account')} (${shortCalls(stats, 'account')})`);
    note('2 whole life', 'Runpod calls, pod watchdog', `${callTotal(stats, 'pod')} (${shortCalls(stats, 'pod')})`);
    note('2 whole life', 'SSH connections (authenticated)', String(ssh?.accepted ?? 'n/a'));
    note('2 whole life', 'reconciles', String(totalReconciles(controllerStats) ?? 'n/a'));
  });
}

// --- 3. a large result ----------------------------------------------------------------------
async function largeResult(): Promise<void> {
  const bytes = largeMb * 1024 * 1024;
  console.log(`\n== 3. Retrieval of one large result file: ${largeMb} MiB of random data (head -c ${bytes} /dev/urandom)`);
  await inWorld('3 large result', 'bench-large', singleSim, async (world) => {
    const name = 'large';
    await sleep(1000); // let the controller settle before the baseline
    const sampler = new RssSampler(100);
    const { startedAt } = await world.apply([runManifest(name, {
      job: { command: ['sh', '-c', `mkdir -p output && head -c ${bytes} /dev/urandom > output/big.bin`] }, results: { path: 'output' },
      limits: { maxRuntimeSeconds: 3600, readyTimeoutSeconds: 120 },
    })]);
    const endedAt = await world.tracker.waitFor(name, ['phase:Succeeded', 'phase:Failed'], 900_000).finally(() => sampler.stop());
    const run = world.tracker.runs.get(name)?.last;
    const retrievingAt = world.tracker.at(name, 'reason:Retrieving');
    const retrievedAt = world.tracker.at(name, 'cond:ResultsRetrieved');
    const jobEnded = run?.status?.job?.finishedAt ? Date.parse(run.status.job.finishedAt) : undefined;
    const got = run?.status?.results?.bytes ?? 0;
    const retrievalMs = retrievingAt !== undefined && retrievedAt !== undefined ? retrievedAt - retrievingAt : undefined;
    const rate = retrievalMs ? got / 1048576 / (retrievalMs / 1000) : undefined;
    const peakRetrieving = retrievingAt !== undefined && retrievedAt !== undefined ? sampler.peak(retrievingAt, retrievedAt) : undefined;
    console.log(`    outcome: ${lastStatus(world, name)}; results: ${run?.status?.results?.files ?? '?'} files, ${got} bytes`);
    console.log(`    apply -> ${run?.status?.phase ?? 'end'}: ${fmtS(endedAt === undefined ? undefined : endedAt - startedAt)}`);
    console.log(`    reason Retrieving -> ResultsRetrieved (both arrivals on a watch; manifest sha256 on the pod + transfer + local verify + job log + marker): ${fmtS(retrievalMs)}`);
    console.log(`    retrieval throughput: ${rate === undefined ? 'n/a' : `${rate.toFixed(1)} MiB/s`} (${(got / 1048576).toFixed(0)} MiB / ${fmtS(retrievalMs)})`);
    console.log(`    job end (status.job.finishedAt, the pod's clock, 1 s resolution) -> ResultsRetrieved: ${fmtS(jobEnded !== undefined && retrievedAt !== undefined ? retrievedAt - jobEnded : undefined)}`);
    console.log(`    status.results.retrievedAt - reason Retrieving: ${fmtS(run?.status?.results?.retrievedAt && retrievingAt !== undefined ? Date.parse(run.status.results.retrievedAt) - retrievingAt : undefined)} (retrievedAt is stamped with the reconcile's start, not the verification)`);
    console.log(`    controller process RSS: baseline ${fmtMiB(sampler.baseline)}, peak while retrieving ${peakRetrieving === undefined ? 'n/a' : `${fmtMiB(peakRetrieving)} (+${fmtMiB(peakRetrieving - sampler.baseline)})`}, `
      + `peak over the run ${fmtMiB(sampler.peak())}` + (sampler.hwmReset ? `, kernel VmHWM over the run ${fmtMiB(sampler.hwm())}` : ''));
    console.log(`    RSS samples: ${sampler.samples.length} (every 100 ms; the simulator and its port relays run in another process); peak V8 heap used ${fmtMiB(sampler.heapUsedPeak)}, peak external (Buffers) ${fmtMiB(sampler.externalPeak)}`);
    console.log('    timeline (from the moment before kubectl apply):');
    printTimeline(world.tracker.runs.get(name), startedAt, '      ');

    await deleteRun(world, name);
    note('3 large result', `retrieval of ${largeMb} MiB`, `${fmtS(retrievalMs)}, ${rate === undefined ? 'n/a' : `${rate.toFixed(1)} MiB/s`}`);
    note('3 large result', 'job end -> ResultsRetrieved', fmtS(jobEnded !== undefined && retrievedAt !== undefined ? retrievedAt - jobEnded : undefined));
    note('3 large result', 'RSS baseline / peak retrieving', `${fmtMiB(sampler.baseline)} / ${peakRetrieving === undefined ? 'n/a' : fmtMiB(peakRetrieving)}`
      + (sampler.hwmReset ? ` (VmHWM ${fmtMiB(sampler.hwm())})` : ''));
  });
}

// --- 4. the queue under load -----------------------------------------------------------------
async function load(): Promise<void> {
  console.log(`\n== 4. The queue under load: ${runs} runs applied at once (one kubectl apply), job: sleep 5 + one result file`);
  const sim: SimConfigInput = {
    gpuTypes: [{ id: 'NVIDIA GeForce RTX 4090', displayName: 'RTX 4090', memoryInGb: 24, pricePerHour: { secure: 0.69, community: 0.34 }, stock: { 'EU-RO-1': runs + 16 } }],
    rateLimits: rateLimitModes[rateLimitMode].config,
  };
  console.log(`    simulator: one GPU type, stock ${runs + 16}; rate limits ${rateLimitModes[rateLimitMode].label}`
    + (rateLimitMode === 'runpod' ? '' : '; Runpod enforces 60/min and 3000/h per account key: see the implied figures below'));
  const names = Array.from({ length: runs }, (_, i) => `load-${String(i).padStart(3, '0')}`);
  const timeoutMs = 180_000 + runs * rateLimitModes[rateLimitMode].perRunTimeoutMs;
  const timers: NodeJS.Timeout[] = [];
  await inWorld(`4 load (${runs} runs)`, 'bench-load', sim, async (world) => {
    await sleep(1000);
    const sampler = new RssSampler(100);
    let peakQueue = 0;
    let peakDelayed = 0;
    let peakActive = 0;
    timers.push(setInterval(() => {
      const s = world.controllerStats();
      if (!s) return;
      peakQueue = Math.max(peakQueue, s.queueLength);
      peakDelayed = Math.max(peakDelayed, s.delayed);
      peakActive = Math.max(peakActive, s.activeWorkers);
    }, 100));
    const callSamples: { at: number; total: number }[] = [];
    let sampling = false;
    timers.push(setInterval(() => {
      if (sampling) return;
      sampling = true;
      simStats(world.sim.adminUrl).then((s) => callSamples.push({ at: Date.now(), total: callTotal(s, 'account') }), () => undefined).finally(() => { sampling = false; });
    }, 1000));

    const manifests = names.map((name) => runManifest(name, {
      gpu: { types: ['NVIDIA GeForce RTX 4090'] },
      job: { command: ['sh', '-c', 'mkdir -p output && sleep 5 && echo done > output/done.txt'] }, results: { path: 'output' },
      limits: { maxRuntimeSeconds: 1800, readyTimeoutSeconds: 600, bootGraceSeconds: 1200 },
    }));
    reconcileDurations.length = 0;
    const { startedAt, tookMs } = await world.apply(manifests);
    console.log(`    kubectl apply of ${runs} runs: ${fmtS(tookMs)}`);
    let readyCount: number;
    let endedCount: number;
    try {
      readyCount = await world.tracker.waitForAll(names, ['cond:PodReady', 'phase:Failed'], timeoutMs);
      endedCount = await world.tracker.waitForAll(names, ['phase:Succeeded', 'phase:Failed'], Math.max(60_000, timeoutMs - (Date.now() - startedAt)));
    } finally {
      for (const timer of timers) clearInterval(timer);
      sampler.stop();
    }
    const endedWallMs = Date.now() - startedAt;
    const durations = [...reconcileDurations];
    const stats = await simStats(world.sim.adminUrl);
    callSamples.push({ at: Date.now(), total: callTotal(stats, 'account') });
    const controllerStats = world.controllerStats();
    const pods = await simPods(world.sim.adminUrl);

    const since = (label: string): number[] => names.map((n) => world.tracker.at(n, label)).filter((at): at is number => at !== undefined).map((at) => at - startedAt);
    const createMs = names.map((n) => podsOfRun(pods, n).map((pod) => Date.parse(pod.createdAt)).sort((a, b) => a - b)[0])
      .filter((at): at is number => at !== undefined).map((at) => at - startedAt);
    const seenToCreateMs = names.map((n) => {
      const first = podsOfRun(pods, n).map((pod) => Date.parse(pod.createdAt)).sort((a, b) => a - b)[0];
      const added = world.tracker.at(n, 'added');
      return first !== undefined && added !== undefined ? first - added : undefined;
    }).filter((ms): ms is number => ms !== undefined);
    const readyMs = since('cond:PodReady');
    const succeededMs = since('phase:Succeeded');
    const outcomes = new Map<string, number>();
    for (const n of names) {
      const status = world.tracker.runs.get(n)?.last?.status;
      const key = `${status?.phase ?? 'none'}/${status?.reason ?? 'none'}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    }
    // Peak pods alive at once, from the simulator's own created/deleted times.
    const edges = pods.flatMap((pod) => [{ at: Date.parse(pod.createdAt), d: 1 }, ...(pod.deletedAt ? [{ at: Date.parse(pod.deletedAt), d: -1 }] : [])]).sort((a, b) => a.at - b.at || a.d - b.d);
    let alive = 0;
    let peakAlive = 0;
    for (const edge of edges) peakAlive = Math.max(peakAlive, (alive += edge.d));
    let ssh = 0;
    for (const pod of pods) ssh += sshConnections(await simPodLogs(world.sim.adminUrl, pod.id)).accepted;

    console.log(`    outcomes: ${[...outcomes.entries()].map(([k, n]) => `${k} ${n}`).join(', ')}; pods created ${pods.length}, at most ${peakAlive} alive at once`);
    console.log(`    all PodReady: ${readyCount}/${runs} after ${fmtS(Math.max(...readyMs))}; all ended: ${endedCount}/${runs} after ${fmtS(endedWallMs)}`);
    console.log(`    apply -> create request:  ${distribution(createMs)}`);
    console.log(`    apply -> run on a watch:  ${distribution(since('added'))}`);
    console.log(`    run on watch -> create:   ${distribution(seenToCreateMs)}`);
    console.log(`    apply -> PodReady:        ${distribution(readyMs)}`);
    console.log(`    apply -> Succeeded:       ${distribution(succeededMs)}`);
    const between = (from: string, to: string): number[] => names.map((n) => {
      const a = world.tracker.at(n, from);
      const b = world.tracker.at(n, to);
      return a !== undefined && b !== undefined ? b - a : undefined;
    }).filter((ms): ms is number => ms !== undefined);
    console.log(`    PodReady -> Retrieving (job start, sleep 5, noticed at a poll): ${distribution(between('cond:PodReady', 'reason:Retrieving'))}`);
    console.log(`    ResultsRetrieved -> Succeeded (delete + confirmation): ${distribution(between('cond:ResultsRetrieved', 'phase:Succeeded'))}`);
    const billedPastResults = names.map((n) => {
      const retrieved = world.tracker.at(n, 'cond:ResultsRetrieved');
      const deleted = podsOfRun(pods, n)[0]?.deletedAt;
      return retrieved !== undefined && deleted ? Date.parse(deleted) - retrieved : undefined;
    }).filter((ms): ms is number => ms !== undefined);
    const byWatchdog = pods.filter((pod) => pod.deletedBy === 'pod').length;
    console.log(`    ResultsRetrieved -> pod deleted at Runpod (billing ends): ${distribution(billedPastResults)}; deleted by their own watchdog (retrieved marker) before the controller's DELETE: ${byWatchdog}/${pods.length}`);
    console.log(`    reconciles: ${totalReconciles(controllerStats) ?? 'n/a'} (${reconcileBreakdown(controllerStats)}), ${((totalReconciles(controllerStats) ?? 0) / runs).toFixed(1)} per run; `
      + `peak queue length ${peakQueue}, peak delayed ${peakDelayed}, peak busy workers ${peakActive}`);
    const busyMs = durations.reduce((sum, ms) => sum + ms, 0);
    console.log(`    reconcile duration: p50 ${fmtMs(percentile(durations, 50))}, p95 ${fmtMs(percentile(durations, 95))}, max ${fmtMs(Math.max(...durations))}; `
      + `workers busy ${(busyMs / 1000).toFixed(0)} s of ${((workers * endedWallMs) / 1000).toFixed(0)} worker-seconds (${((100 * busyMs) / (workers * endedWallMs)).toFixed(0)}%)`);
    console.log(`    SSH connections (sshd "Accepted publickey"): ${ssh}, ${(ssh / runs).toFixed(1)} per run`);
    console.log(`    controller process RSS: baseline ${fmtMiB(sampler.baseline)}, peak ${fmtMiB(sampler.peak())} (+${fmtMiB(sampler.peak() - sampler.baseline)})`
      + (sampler.hwmReset ? `, kernel VmHWM ${fmtMiB(sampler.hwm())}` : '') + `; peak V8 heap used ${fmtMiB(sampler.heapUsedPeak)}, peak external (Buffers) ${fmtMiB(sampler.externalPeak)}`);
    const slowest = names.reduce((a, b) => ((world.tracker.at(a, 'phase:Succeeded') ?? Infinity) >= (world.tracker.at(b, 'phase:Succeeded') ?? Infinity) ? a : b));
    console.log(`    timeline of the last run to end (${slowest}), from the moment before kubectl apply:`);
    printTimeline(world.tracker.runs.get(slowest), startedAt, '      ');
    printCalls('Runpod calls, account key (the controller)', stats, 'account');
    printCalls('Runpod calls, pod keys (the watchdogs)', stats, 'pod');

    const account = callTotal(stats, 'account');
    const lists = callTotal(stats, 'account', 'GET /v2/pods');
    const perRun = (account - lists) / runs;
    const busiest = busiestWindow(callSamples, 60_000);
    const listPerMin = Number.isFinite(pollSeconds) ? 60 / pollSeconds : Number.NaN;
    console.log(`    account calls: ${account} in ${fmtS(endedWallMs)} = ${(account / (endedWallMs / 60_000)).toFixed(0)}/min on average; busiest 60 s window ${busiest} (sampled every second)`);
    console.log(`    implied by Runpod's quotas: ${perRun.toFixed(2)} calls per run besides the shared list (GET /v2/pods ~${listPerMin.toFixed(0)}/min at poll ${pollInterval});`);
    const minMinutes = (runs * perRun) / (60 - listPerMin);
    console.log(`      at 60/min: >= ${minMinutes.toFixed(1)} min for ${runs} runs' own calls (${(60 - listPerMin).toFixed(0)}/min left after the list), i.e. <= ${((60 - listPerMin) / perRun).toFixed(1)} runs started+finished per minute;`);
    console.log(`      at 3000/h: <= ${((3000 - listPerMin * 60) / perRun).toFixed(0)} runs per hour; the busiest minute above (${busiest} calls) is ${busiest > 60 ? 'over 60: under Runpod\'s quota the controller would have waited' : 'within 60/min'}`);

    // Delete every run; their pods are already gone, so this is the finalizer's confirmation path.
    const beforeDelete = await simStats(world.sim.adminUrl);
    const deleteStarted = Date.now();
    const result = await world.kubectl(['delete', 'rpr', '--all', `--timeout=${Math.round(timeoutMs / 1000)}s`]);
    if (result.status !== 0) console.log(`    kubectl delete: ${result.stderr.trim()}`);
    const kubectlDeleteMs = Date.now() - deleteStarted;
    const gone = await world.tracker.waitForAll(names, ['deleted'], 120_000);
    const deleteMs = Math.max(...names.map((n) => world.tracker.at(n, 'deleted') ?? Number.NaN)) - deleteStarted;
    console.log(`    deletionTimestamp seen -> run gone, per run: ${distribution(between('deleting', 'deleted'))}; kubectl delete start -> last deletionTimestamp seen: ${fmtS(Math.max(...names.map((n) => world.tracker.at(n, 'deleting') ?? Number.NaN)) - deleteStarted)}`);
    const deleteCalls = diffStats(await simStats(world.sim.adminUrl), beforeDelete);
    const after = process.memoryUsage();
    console.log(`    once every run is gone: RSS ${fmtMiB(after.rss)}, V8 heap used ${fmtMiB(after.heapUsed)} (garbage not yet collected included), external ${fmtMiB(after.external)}`);
    console.log(`    kubectl delete rpr --all -> ${gone}/${runs} runs gone (last one off the watch): ${fmtS(deleteMs)}; the kubectl process itself (it waits for each object in turn): ${fmtS(kubectlDeleteMs)}; `
      + `Runpod calls meanwhile: ${callTotal(deleteCalls, 'account')} (${shortCalls(deleteCalls, 'account') || 'none'})`);

    note(`4 load (${runs} runs)`, 'simulator rate limits', rateLimitMode);
    note(`4 load (${runs} runs)`, 'all PodReady / all ended', `${fmtS(Math.max(...readyMs))} / ${fmtS(endedWallMs)} (${endedCount}/${runs} ended, ${outcomes.get('Succeeded/Succeeded') ?? 0} Succeeded)`);
    note(`4 load (${runs} runs)`, 'apply -> create p50 / p95', `${fmtS(percentile(createMs, 50))} / ${fmtS(percentile(createMs, 95))}`);
    note(`4 load (${runs} runs)`, 'apply -> PodReady p50 / p95', `${fmtS(percentile(readyMs, 50))} / ${fmtS(percentile(readyMs, 95))}`);
    note(`4 load (${runs} runs)`, 'apply -> Succeeded p50 / p95', `${fmtS(percentile(succeededMs, 50))} / ${fmtS(percentile(succeededMs, 95))}`);
    note(`4 load (${runs} runs)`, 'ResultsRetrieved -> pod deleted p50 / p95', `${fmtS(percentile(billedPastResults, 50))} / ${fmtS(percentile(billedPastResults, 95))} (${byWatchdog} by the watchdog)`);
    note(`4 load (${runs} runs)`, 'Runpod calls (account / pod)', `${account} / ${callTotal(stats, 'pod')} (${perRun.toFixed(2)} per run + ${lists} lists; busiest 60 s: ${busiest})`);
    note(`4 load (${runs} runs)`, 'reconciles, SSH connections per run', `${((totalReconciles(controllerStats) ?? 0) / runs).toFixed(1)}, ${(ssh / runs).toFixed(1)}`);
    note(`4 load (${runs} runs)`, 'reconcile p50 / p95; peak queue', `${fmtMs(percentile(durations, 50))} / ${fmtMs(percentile(durations, 95))}; ${peakQueue} keys waiting, ${peakActive}/${workers} workers busy`);
    note(`4 load (${runs} runs)`, 'RSS baseline / peak', `${fmtMiB(sampler.baseline)} / ${fmtMiB(sampler.peak())}` + (sampler.hwmReset ? ` (VmHWM ${fmtMiB(sampler.hwm())})` : ''));
    note(`4 load (${runs} runs)`, 'delete all -> last run gone', `${fmtS(deleteMs)} (the kubectl process ${fmtS(kubectlDeleteMs)})`);
  });
}

// --- main -------------------------------------------------------------------------------------
console.log(`controller benchmarks: poll interval ${pollInterval}, watchdog period ${watchdogPeriod}, max concurrent reconciles ${workers} (default), log level ${process.env.BENCH_LOG_LEVEL ?? 'info'}`);
console.log(`sizes: BENCH_LARGE_MB=${largeMb}, BENCH_RUNS=${runs}; the simulator runs in a child process, the controller in this one (${process.version})`);
const parts: [string, () => Promise<void>][] = [['1', provisioning], ['2', wholeLife], ['3', largeResult], ['4', load]];
const benchStarted = Date.now();
for (const [id, part] of parts) {
  if (!only.has(id)) continue;
  console.log(`\n(machine load average before part ${id}: ${loadavg().map((l) => l.toFixed(2)).join(' ')}; ${availableParallelism()} cores)`);
  try {
    await part();
  } catch (error) {
    process.exitCode = 1;
    console.log(`    PART ${id} FAILED: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
    note(`${id}`, 'FAILED', error instanceof Error ? error.message.slice(0, 120) : String(error));
  }
}

console.log(`\n== summary (${fmtS(Date.now() - benchStarted)} in all; poll ${pollInterval}, watchdog ${watchdogPeriod})`);
const widths = [0, 1].map((i) => Math.max(...summary.map((row) => row[i]?.length ?? 0)));
for (const [part, figure, value] of summary) console.log(`  ${part.padEnd(widths[0] ?? 0)}  ${figure.padEnd(widths[1] ?? 0)}  ${value}`);
// The private API server and etcd are children of this process; the 'exit' handler of the harness stops them.
process.exit();
