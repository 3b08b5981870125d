// What the controller benchmarks share: a world (namespace on the test API server, the Runpod
// simulator in a CHILD process, the controller in this one), a tracker that timestamps every status
// transition as the watch delivers it, memory and call accounting, and small number formatting.
// The simulator runs out of process on purpose: its port relays carry every byte the controller
// retrieves and its bookkeeping grows with the pods; in this process both would be counted as the
// controller's memory and would share its event loop. Runpod is another machine in production.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { group, plural, version, type RunpodRun } from '../src/api/runpodrun.ts';
import { configSchema } from '../src/config.ts';
import { Controller, type ControllerStats } from '../src/kube/controller.ts';
import { Reflector, resourcePath } from '../src/kube/reflector.ts';
import { createLogger } from '../src/log.ts';
import { startController, type RunningController } from '../src/main.ts';
import { RunReconciler } from '../src/run/reconciler.ts';
import { assertNoLeaks, simPods, simStats, type SimPod, type SimStats } from '../test/runpod-sim/client.ts';
import type { SimConfigInput } from '../test/runpod-sim/config.ts';
import { createTestNamespace, testCluster } from '../test/support/cluster.ts';
import { kubectl } from '../test/support/kubectl.ts';

// A key per world: the Runpod client keeps one rate limiter per key for the whole process
// (rateLimiterForKey), and what one part taught it about quotas must not carry into the next.
let worlds = 0;
const newApiKey = (): string => `rpa_BENCHKEY_${process.pid}_${++worlds}_${randomBytes(6).toString('hex')}`;
const repoRoot = join(import.meta.dirname, '..');

// --- the controller's own counters ------------------------------------------------------------
// startController() does not hand its Controller out; the prototype's start() is the one place
// every instance passes through, so it is wrapped here to keep a reference to the latest.
let latestController: Controller | undefined;
const originalStart = Object.getOwnPropertyDescriptor(Controller.prototype, 'start')?.value as (this: Controller) => void;
const remember = (controller: Controller): void => { latestController = controller; };
Controller.prototype.start = function start(this: Controller): void {
  remember(this);
  originalStart.call(this);
};

// Likewise every reconcile passes through RunReconciler.prototype.reconcile: timed here, with the
// moment (Date.now()) each run's reconciles started, so a bench can tell how often each run is judged.
export const reconcileDurations: number[] = [];
export const reconcileStarts = new Map<string, number[]>();
const originalReconcile = Object.getOwnPropertyDescriptor(RunReconciler.prototype, 'reconcile')?.value as RunReconciler['reconcile'];
RunReconciler.prototype.reconcile = async function reconcile(this: RunReconciler, ...args: Parameters<RunReconciler['reconcile']>): ReturnType<RunReconciler['reconcile']> {
  const started = performance.now();
  const starts = reconcileStarts.get(args[0]) ?? [];
  starts.push(Date.now());
  reconcileStarts.set(args[0], starts);
  try {
    return await originalReconcile.apply(this, args);
  } finally {
    reconcileDurations.push(performance.now() - started);
  }
};

// --- the simulator, out of process ----------------------------------------------------------
export interface SimProcess { baseUrl: string; adminUrl: string; pid: number; stop(): Promise<void> }

export async function startSimProcess(config: SimConfigInput, apiKey: string): Promise<SimProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-sim-'));
  const configFile = join(dir, 'config.json');
  writeFileSync(configFile, JSON.stringify(config));
  const command = [process.execPath, join(repoRoot, 'test/runpod-sim/cli.ts'), '--port', '0', '--api-key', apiKey, '--config', configFile];
  // BENCH_SIM_NICE: the simulator and its pods at a lower CPU priority. Runpod's pods run on Runpod's
  // machines; here they share two cores with the controller and its API server, and their boots
  // (real sshd and shells) take the CPU the next runs' creates wait for.
  const nice = process.env.BENCH_SIM_NICE;
  const [file, ...args] = nice ? ['nice', '-n', nice, ...command] : command;
  const child: ChildProcess = spawn(file as string, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const killNow = (): void => { try { child.kill('SIGKILL'); } catch { /* gone */ } };
  process.once('exit', killNow);
  let stdout = '';
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-4000); });
  const urls = await new Promise<{ baseUrl: string; adminUrl: string }>((resolve, reject) => {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const base = /Runpod simulator: (\S+)/.exec(stdout)?.[1];
      const admin = /admin: (\S+)/.exec(stdout)?.[1];
      if (base && admin) resolve({ baseUrl: base, adminUrl: admin });
    });
    child.once('exit', (code) => reject(new Error(`simulator exited with ${code}: ${stderr}`)));
  });
  return {
    ...urls,
    pid: child.pid ?? 0,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await Promise.race([exited, sleep(30_000).then(killNow)]);
      }
      process.removeListener('exit', killNow);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// --- status transitions, timestamped on arrival ---------------------------------------------
export interface Transition { at: number; what: string }

export interface TrackedRun {
  name: string;
  uid?: string;
  /** First arrival (Date.now()) of each label: `added` (the object itself), `phase:X`, `reason:X`, `cond:X` (True), `pod:X` (pod.state), `deleted`. */
  first: Map<string, number>;
  timeline: Transition[];
  last?: RunpodRun;
  /** Updates that changed the status: one per status write of the controller (a watch delivers every resourceVersion). */
  statusChanges: number;
}

/** Watches the namespace's runs (a Reflector of our own, apart from the controller's). */
export class RunTracker {
  readonly runs = new Map<string, TrackedRun>();
  readonly #reflector: Reflector<RunpodRun & KubernetesObject>;

  constructor(namespace: string, kubeConfig: KubeConfig) {
    this.#reflector = new Reflector<RunpodRun & KubernetesObject>({
      kubeConfig, log: createLogger('warn'), resyncMs: 0,
      path: resourcePath({ group, version, plural, namespace }),
      handlers: {
        onAdd: (run) => this.#see(run),
        onUpdate: (_old, run) => this.#see(run),
        onDelete: (run) => this.#mark(this.#entry(run.metadata.name), 'deleted', Date.now()),
      },
    });
  }

  async start(): Promise<void> {
    this.#reflector.start();
    await this.#reflector.waitForSync(new AbortController().signal);
  }

  stop(): Promise<void> {
    return this.#reflector.stop();
  }

  at(name: string, label: string): number | undefined {
    return this.runs.get(name)?.first.get(label);
  }

  /** Resolves with the arrival time of `label` on `name`, polling the in-memory record. */
  async waitFor(name: string, labels: string | string[], timeoutMs: number): Promise<number | undefined> {
    const wanted = Array.isArray(labels) ? labels : [labels];
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      for (const label of wanted) {
        const at = this.at(name, label);
        if (at !== undefined) return at;
      }
      await sleep(50);
    }
    return undefined;
  }

  /** Waits until every name has one of the labels (or the timeout); returns how many do. */
  async waitForAll(names: string[], labels: string[], timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    const count = (): number => names.filter((name) => labels.some((label) => this.at(name, label) !== undefined)).length;
    while (Date.now() < deadline && count() < names.length) await sleep(200);
    return count();
  }

  #entry(name: string): TrackedRun {
    let run = this.runs.get(name);
    if (!run) {
      run = { name, first: new Map(), timeline: [], statusChanges: 0 };
      this.runs.set(name, run);
    }
    return run;
  }

  #mark(run: TrackedRun, label: string, at: number): void {
    if (run.first.has(label)) return;
    run.first.set(label, at);
    run.timeline.push({ at, what: label });
  }

  #see(obj: RunpodRun): void {
    const at = Date.now();
    const run = this.#entry(obj.metadata.name);
    run.uid = obj.metadata.uid;
    if (obj.status !== undefined && JSON.stringify(obj.status) !== JSON.stringify(run.last?.status)) run.statusChanges += 1;
    run.last = obj;
    this.#mark(run, 'added', at);
    const status = obj.status ?? {};
    if (status.phase) this.#mark(run, `phase:${status.phase}`, at);
    if (status.reason) this.#mark(run, `reason:${status.reason}`, at);
    for (const condition of status.conditions ?? []) if (condition.status === 'True') this.#mark(run, `cond:${condition.type}`, at);
    if (status.pod?.state) this.#mark(run, `pod:${status.pod.state}`, at);
    if (obj.metadata.deletionTimestamp) this.#mark(run, 'deleting', at);
  }
}

// --- the world ------------------------------------------------------------------------------
export interface BenchWorldOptions { sim: SimConfigInput; pollInterval: string; watchdogPeriod: string }

export interface BenchWorld {
  namespace: string;
  sim: SimProcess;
  tracker: RunTracker;
  resultsDir: string;
  /** Log lines at warn and above (the controller logs at info; nothing is kept below warn). */
  problems: string[];
  controllerStats(): ControllerStats | undefined;
  /** The controller's --max-concurrent-reconciles. */
  workers: number;
  /** `kubectl apply` of the manifests (one List); resolves with Date.now() taken just before kubectl starts. */
  apply(manifests: object[]): Promise<{ startedAt: number; tookMs: number }>;
  kubectl(args: string[]): Promise<{ status: number; stdout: string; stderr: string }>;
  stop(): Promise<string>;
}

export async function startBenchWorld(prefix: string, options: BenchWorldOptions): Promise<BenchWorld> {
  const { kubeConfig, kubeconfigPath } = await testCluster();
  const namespace = await createTestNamespace(prefix);
  const apiKey = newApiKey();
  const sim = await startSimProcess(options.sim, apiKey);
  const resultsDir = mkdtempSync(join(tmpdir(), `bench-results-${prefix}-`));
  const ns = (args: string[]) => kubectl([...args, '-n', namespace]);
  await ns(['create', 'secret', 'generic', 'runpod', `--from-literal=apiKey=${apiKey}`]);
  // kubectl caches the API server's discovery and OpenAPI schemas after its first apply: warm them (a
  // server-side dry run creates nothing), as a user's kubectl is; else the first apply here pays ~2 s for them.
  const warmup = runManifest('warmup', { job: { command: ['true'] } });
  await kubectl(['apply', '--dry-run=server', '-n', namespace, '-f', '-'], JSON.stringify(warmup));
  const tracker = new RunTracker(namespace, kubeConfig);
  await tracker.start();

  const problems: string[] = [];
  const logLevel = process.env.BENCH_LOG_LEVEL ?? 'info';
  // BENCH_LOG_DIR: the controller's whole log, one file per world (for looking into a figure, not for measuring).
  const logFile = process.env.BENCH_LOG_DIR ? createWriteStream(join(process.env.BENCH_LOG_DIR, `controller-${namespace}.log`)) : undefined;
  const logger = createLogger(logLevel, {
    write: (line: string) => {
      logFile?.write(line);
      if (/"level":"(warn|error|fatal)"/.test(line)) problems.push(line.slice(0, 600));
    },
  });
  const config = configSchema.parse({
    kubeconfig: kubeconfigPath, namespace, clusterId: `bench-${namespace}`, runpodApiUrl: sim.baseUrl,
    pollInterval: options.pollInterval, watchdogPeriod: options.watchdogPeriod,
    leaderElect: 'true', leaseNamespace: namespace, logLevel, resultsDir, metricsBindAddress: '0', healthProbeBindAddress: '0',
    // BENCH_WORKERS: --max-concurrent-reconciles other than the default, to see whether the workers are the bound.
    ...(process.env.BENCH_WORKERS ? { maxConcurrentReconciles: process.env.BENCH_WORKERS } : {}),
  });
  const before = latestController;
  const controller: RunningController = await startController(config, { logger, onLostLeadership: () => problems.push('lost leadership') });
  // Leadership comes asynchronously; the Controller starts once the Lease is ours.
  const deadline = Date.now() + 30_000;
  while (latestController === before && Date.now() < deadline) await sleep(20);
  const mine = latestController === before ? undefined : latestController;

  return {
    namespace, sim, tracker, resultsDir, problems,
    controllerStats: () => mine?.stats(),
    workers: config.maxConcurrentReconciles,
    async apply(manifests) {
      const list = { apiVersion: 'v1', kind: 'List', items: manifests };
      const startedAt = Date.now();
      const result = await kubectl(['apply', '-n', namespace, '-f', '-'], JSON.stringify(list));
      if (result.status !== 0) throw new Error(`kubectl apply: ${result.stderr}`);
      return { startedAt, tookMs: Date.now() - startedAt };
    },
    kubectl: ns,
    async stop() {
      let leaks = 'no pod leaked';
      try {
        await assertNoLeaks(sim.adminUrl, 15_000);
      } catch (error) {
        leaks = `LEAK: ${error instanceof Error ? error.message : String(error)}`;
      }
      await controller.stop();
      logFile?.end();
      await tracker.stop();
      await sim.stop();
      rmSync(resultsDir, { recursive: true, force: true });
      return leaks;
    },
  };
}

export function runManifest(name: string, spec: Record<string, unknown>): object {
  return {
    apiVersion: `${group}/${version}`, kind: 'RunpodRun', metadata: { name },
    spec: {
      credentials: { secretName: 'runpod' }, image: 'runpod/base:0.6.2-cuda12.4.1', gpu: { types: ['NVIDIA GeForce RTX 4090', 'NVIDIA A40'] },
      limits: { maxRuntimeSeconds: 600, readyTimeoutSeconds: 120 }, ...spec,
    },
  };
}

// --- Runpod calls -----------------------------------------------------------------------------
export type Caller = 'account' | 'pod' | 'anonymous';

/** Rows `METHOD /path  count  (status: n, ...)` of one caller, most frequent first. */
export function callRows(stats: SimStats, caller: Caller): { endpoint: string; count: number; statuses: string }[] {
  const byEndpoint = new Map<string, { count: number; statuses: Map<number, number> }>();
  for (const entry of stats.requests.filter((e) => e.caller === caller)) {
    const key = `${entry.method} ${entry.path}`;
    const row = byEndpoint.get(key) ?? { count: 0, statuses: new Map<number, number>() };
    row.count += entry.count;
    row.statuses.set(entry.status, (row.statuses.get(entry.status) ?? 0) + entry.count);
    byEndpoint.set(key, row);
  }
  return [...byEndpoint.entries()]
    .map(([endpoint, row]) => ({ endpoint, count: row.count, statuses: [...row.statuses.entries()].map(([s, n]) => `${s}: ${n}`).join(', ') }))
    .sort((a, b) => b.count - a.count);
}

export function callTotal(stats: SimStats, caller: Caller, endpoint?: string): number {
  return callRows(stats, caller).filter((row) => endpoint === undefined || row.endpoint === endpoint).reduce((sum, row) => sum + row.count, 0);
}

export function printCalls(title: string, stats: SimStats, caller: Caller, indent = '    '): void {
  const rows = callRows(stats, caller);
  const total = rows.reduce((sum, row) => sum + row.count, 0);
  console.log(`${indent}${title}: ${total} calls`);
  for (const row of rows) console.log(`${indent}  ${row.endpoint.padEnd(32)} ${String(row.count).padStart(6)}   (HTTP ${row.statuses})`);
}

export { simPods, simStats, type SimPod, type SimStats };

export async function resetSimStats(adminUrl: string): Promise<void> {
  await fetch(`${adminUrl}/reset-stats`, { method: 'POST' }).then((response) => response.arrayBuffer());
}

/** SSH connections a pod's sshd logged (it runs with -e: its log goes to the pod's stdout/stderr). */
export function sshConnections(log: string): { accepted: number; preauthClosed: number; lines: number } {
  return {
    accepted: (log.match(/Accepted publickey for /g) ?? []).length,
    // A TCP connection that never got to key exchange (e.g. the simulator's banner probe), or one that ended before auth.
    preauthClosed: (log.match(/^(kex_exchange_identification: .*|.*\[preauth\])$/gm) ?? []).length,
    lines: log.split('\n').length,
  };
}

// --- memory -----------------------------------------------------------------------------------
const mib = (bytes: number): number => bytes / 1048576;

function statusKb(field: string): number {
  try {
    return Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** RSS every `everyMs` (a sample can be late while the event loop is busy), plus the kernel's own high-water mark. */
export class RssSampler {
  readonly samples: { at: number; rss: number }[] = [];
  /** Peak V8 heap in use and peak off-heap (Buffers, ArrayBuffers): what of the RSS is live JavaScript data. */
  heapUsedPeak = 0;
  externalPeak = 0;
  readonly baseline: number;
  readonly hwmReset: boolean;
  #timer: NodeJS.Timeout;

  constructor(everyMs = 100) {
    this.baseline = process.memoryUsage.rss();
    // Writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0), so VmHWM is this window's peak.
    let reset = false;
    try {
      writeFileSync('/proc/self/clear_refs', '5');
      reset = true;
    } catch { /* not allowed here: the sampled peak stands alone */ }
    this.hwmReset = reset;
    this.samples.push({ at: Date.now(), rss: this.baseline });
    this.#timer = setInterval(() => {
      const usage = process.memoryUsage();
      this.samples.push({ at: Date.now(), rss: usage.rss });
      this.heapUsedPeak = Math.max(this.heapUsedPeak, usage.heapUsed);
      this.externalPeak = Math.max(this.externalPeak, usage.external);
    }, everyMs);
  }

  #hwmAtStop: number | undefined;

  stop(): void {
    if (this.#hwmAtStop !== undefined) return;
    clearInterval(this.#timer);
    this.samples.push({ at: Date.now(), rss: process.memoryUsage.rss() });
    this.#hwmAtStop = statusKb('VmHWM') * 1024;
  }

  peak(from = 0, to = Number.POSITIVE_INFINITY): number {
    return this.samples.filter((s) => s.at >= from && s.at <= to).reduce((max, s) => Math.max(max, s.rss), 0);
  }

  /** VmHWM in bytes between the reset and stop() (the true peak, whatever the sampling missed). */
  hwm(): number {
    return this.#hwmAtStop ?? statusKb('VmHWM') * 1024;
  }
}

// --- numbers ----------------------------------------------------------------------------------
export const fmtMiB = (bytes: number): string => `${mib(bytes).toFixed(1)} MiB`;
export const fmtS = (ms: number | undefined): string => (ms === undefined || !Number.isFinite(ms) ? 'n/a' : `${(ms / 1000).toFixed(2)} s`);
export const fmtMs = (ms: number | undefined): string => (ms === undefined || !Number.isFinite(ms) ? 'n/a' : `${ms.toFixed(0)} ms`);

export function percentile(values: number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  // Nearest rank.
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export function distribution(values: number[]): string {
  if (values.length === 0) return 'n/a';
  return `p50 ${fmtS(percentile(values, 50))}, p95 ${fmtS(percentile(values, 95))}, min ${fmtS(Math.min(...values))}, max ${fmtS(Math.max(...values))} (n=${values.length})`;
}

export function printTimeline(run: TrackedRun | undefined, zero: number, indent = '    '): void {
  if (!run) return;
  const interesting = run.timeline.filter((t) => !t.what.startsWith('cond:Reconciling'));
  for (const t of interesting) console.log(`${indent}+${((t.at - zero) / 1000).toFixed(2).padStart(7)} s  ${t.what}`);
}

/** Sum of `value` over the busiest window of `windowMs`, from cumulative samples (time, running total). */
export function busiestWindow(samples: { at: number; total: number }[], windowMs: number): number {
  let best = 0;
  let start = 0;
  for (let end = 0; end < samples.length; end++) {
    const endSample = samples[end]!;
    while (start < end && endSample.at - samples[start]!.at > windowMs) start++;
    best = Math.max(best, endSample.total - samples[start]!.total);
  }
  return best;
}

/** The run a pod was created for: the controller names a run's pods `<run>-<attempt>`. */
export const runOfPod = (podName: string): string => podName.replace(/-\d+$/, '');
export const podsOfRun = (pods: SimPod[], name: string): SimPod[] => pods.filter((pod) => runOfPod(pod.name) === name);

/** The requests counted in `after` but not yet in `before`. */
export function diffStats(after: SimStats, before: SimStats): SimStats {
  const key = (e: SimStats['requests'][number]): string => `${e.caller} ${e.method} ${e.path} ${e.status}`;
  const earlier = new Map(before.requests.map((e) => [key(e), e.count]));
  const requests = after.requests.map((e) => ({ ...e, count: e.count - (earlier.get(key(e)) ?? 0) })).filter((e) => e.count > 0);
  return { requests, total: requests.reduce((sum, e) => sum + e.count, 0) };
}

export const totalReconciles = (stats: ControllerStats | undefined): number | undefined =>
  stats ? Object.values(stats.reconciles).reduce((sum, n) => sum + n, 0) : undefined;

export const reconcileBreakdown = (stats: ControllerStats | undefined): string =>
  stats ? Object.entries(stats.reconciles).filter(([, n]) => n > 0).map(([outcome, n]) => `${outcome} ${n}`).join(', ') : 'n/a';
