// One chaos session: a fresh namespace on the given API server, the simulator, the proxy and the
// controller process; the schedule played out (applies, user actions, faults, kills); then the wait
// for every run to end, the deletion of every run, and the figures.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { injectFault, simPods, simPodsWithProcesses, simStats, type SimStats } from '../runpod-sim/client.ts';
import { startSimulator, type SimConfigInput } from '../runpod-sim/server.ts';
import { runKubectl } from '../support/kubectl.ts';
import { ControllerProcess } from './controller.ts';
import { faultGenerators } from './faults.ts';
import { billedPastDeadline, doubleBilling, finalizersLeft, keysInLog, malformedKeyRunsNotHeld, podsLeaked, resultsLostOrUnverified, retriesPastLimit, runsNotTerminal, type Figure } from './invariants.ts';
import { Killer, type KillRecord } from './killer.ts';
import { containerStops, destructionOf, leaderMsBetween, readLeaderTerms } from './leader-time.ts';
import { startProxy } from './proxy.ts';
import { isTerminalPhase, outcomeOf, RunBook } from './runbook.ts';
import { conditionsConfig, type SimConditions } from './conditions.ts';
import type { PlannedFault, Schedule } from './schedule.ts';
import { badKeySecret, runManifest } from './workload.ts';

export interface SessionOptions {
  schedule: Schedule;
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  /** Where the controller's log and the result store go. */
  workDir: string;
  /** Total GPUs of stock (split over the two GPU types the runs ask for). */
  stock: number;
  /** How long, after the schedule played out, every run gets to end. */
  settleTimeoutMs: number;
  /** Billing this long past a pod's deadline still counts as on time (controller margin + confirm). */
  billingMarginMs: number;
  windowTimeoutMs: number;
  /**
   * Before deleting the runs, wait until every kept pod's deadline (+ margin) has passed, so that the
   * deadline of kept pods is judged too (else a session may end before it).
   */
  holdKeptPods: boolean;
  say: (line: string) => void;
}

export interface FaultRecord { planned: PlannedFault; atMs: number; fired: boolean; detail: string; podId?: string }

export interface SessionReport {
  schedule: Schedule;
  namespace: string;
  figures: Figure[];
  /** Every pod the simulator rented, for the story behind a figure. */
  pods: { id: string; name: string; run: string; createdAt: string; deletedAt: string | null; deletedBy: string | null }[];
  /** What the world did where the controller led under noChanceMs (its pod destroyed, its watchdog stopped): not counted in the figures. */
  noChance: string[];
  /** Staging directories a killed retrieval left in the result store (litter, not a broken promise). */
  stagingLeft: string[];
  /** tries: status.retries + 1, the try the run ended on. */
  outcomes: { name: string; kind: string; outcome: string; message: string; attempts: number; tries: number; pods: number }[];
  kills: KillRecord[];
  faults: FaultRecord[];
  /** The controller's calls to Runpod (its account key; pods' own calls apart): creates by status, and all. */
  calls: { createsByStatus: Record<string, number>; total: number };
  controllerLog: string;
  durationMs: number;
}

const apiKey = 'rpa_CHAOS_KEY_DO_NOT_LOG_7d3e91';
/** The printable pieces of the malformed key: none may reach the controller's log. */
const badKeyParts = badKeySecret.value.split(/[^\x21-\x7e]+/).filter((part) => part.length >= 8);
const controllerSettings = { pollInterval: '2s', deadlineMargin: '5s', watchdogPeriod: '2s' };

export function simConfig(stock: number, conditions: SimConditions): SimConfigInput {
  const first = Math.ceil(stock / 2);
  return {
    ...conditionsConfig(conditions),
    gpuTypes: [
      { id: 'NVIDIA GeForce RTX 4090', displayName: 'RTX 4090', memoryInGb: 24, pricePerHour: { secure: 0.69, community: 0.34 }, stock: { 'EU-RO-1': first } },
      { id: 'NVIDIA A40', displayName: 'A40', memoryInGb: 48, pricePerHour: 0.40, stock: { 'EU-RO-1': stock - first } },
    ],
    // The controller polls every 2 s here (10 s by default): the quota scales with it.
    rateLimits: { minute: { quota: 300, seconds: 60 }, hour: { quota: 15_000, seconds: 3600 } },
    timings: { restartDelayMs: 1000 },
  };
}

export async function runSession(options: SessionOptions): Promise<SessionReport> {
  const { schedule, say } = options;
  const started = Date.now();
  const elapsed = () => Date.now() - started;
  const kubectl = (args: string[], input?: string) => runKubectl(['--kubeconfig', options.kubeconfigPath, ...args], input);
  const namespace = `chaos-s${schedule.seed}-${Date.now().toString(36)}`;
  const resultsDir = join(options.workDir, 'results');
  mkdirSync(resultsDir, { recursive: true });
  await must(kubectl(['create', 'namespace', namespace]));
  await must(kubectl(['create', 'secret', 'generic', 'runpod', '-n', namespace, `--from-literal=apiKey=${apiKey}`]));
  const malformed = { apiVersion: 'v1', kind: 'Secret', metadata: { name: badKeySecret.name }, data: { [badKeySecret.key]: Buffer.from(badKeySecret.value, 'latin1').toString('base64') } };
  await must(kubectl(['apply', '-n', namespace, '-f', '-'], JSON.stringify(malformed)));

  const sim = await startSimulator({ apiKeys: [apiKey], config: simConfig(options.stock, schedule.conditions) });
  const runs = new RunBook(options.kubeConfig, namespace, schedule.runs);
  const controllerLog = join(options.workDir, 'controller.log');
  // Only the controller calls the proxy, and it starts once the killer exists.
  const proxy = await startProxy({ host: '127.0.0.1', port: sim.port }, (exchange, forward) => killer.handle(exchange, forward));
  const controller = new ControllerProcess({
    kubeconfig: options.kubeconfigPath, namespace, clusterId: `chaos-${namespace}`, runpodApiUrl: proxy.url, podApiUrl: sim.baseUrl,
    resultsDir, logFile: controllerLog, ...controllerSettings,
  });
  const killer: Killer = new Killer({ controller, runs, adminUrl: sim.adminUrl, resultsRoot: join(resultsDir, namespace), elapsed, windowTimeoutMs: options.windowTimeoutMs });
  const faults: FaultRecord[] = [];
  let polling = true;
  const poller = (async () => {
    while (polling) {
      await runs.refresh().catch(() => undefined);
      await sleep(500);
    }
  })();

  try {
    controller.start();
    say(`namespace ${namespace}; simulator ${sim.baseUrl}; controller log ${controllerLog}`);
    const at = (ms: number) => sleep(Math.max(0, ms - elapsed()));
    const applies = schedule.runs.map(async (run) => {
      await at(run.applyAtMs);
      const applied = await must(kubectl(['apply', '-n', namespace, '-f', '-', '-o', 'jsonpath={.metadata.uid}'], JSON.stringify(runManifest(run))));
      const entry = runs.applied(run.name, applied.stdout.trim());
      if (run.actionAfterMs === undefined) return;
      if (run.kind === 'bad-key') entry.heldInvalid = await seenCredentialsInvalid(runs, run.name, started + run.applyAtMs + run.actionAfterMs);
      await at(run.applyAtMs + run.actionAfterMs);
      // A user's action may come too late (the run already ended): it is reported, not fatal.
      const action: string[] = run.kind === 'cancel'
        ? ['patch', 'rpr', run.name, '-n', namespace, '--type', 'merge', '-p', '{"spec":{"cancel":true}}']
        : ['delete', 'rpr', run.name, '-n', namespace, '--wait=false'];
      if (run.kind === 'delete' || run.kind === 'bad-key') entry.deleteRequested = true;
      const done = await kubectl(action);
      if (done.status !== 0) say(`${action[0]} ${run.name} failed: ${done.stderr.trim()}`);
    });
    const injections = (async () => {
      for (const fault of schedule.faults) {
        await at(fault.atMs);
        faults.push(await fire(fault, sim.adminUrl, runs, elapsed()));
      }
    })();
    const kills = (async () => {
      for (const kill of schedule.kills) {
        await at(kill.atMs);
        await killer.execute(kill);
        const record = killer.records.at(-1)!;
        say(`kill ${killer.records.length}/${schedule.kills.length} at ${Math.round(elapsed() / 1000)}s: ${kill.window}${record.hit ? '' : ' (missed)'} ${record.run ?? ''} ${record.detail}`);
      }
    })();
    await Promise.all([...applies, injections, kills]);
    controller.assertNoUnexpectedExit();
    say(`schedule played out at ${Math.round(elapsed() / 1000)}s; waiting for every run to end, until none has for ${options.settleTimeoutMs / 1000}s (at most ${3 * options.settleTimeoutMs / 1000}s)`);

    // The window starts again whenever a run ends: runs queued behind a tight spend limit while others
    // finish are waiting their turn, not stuck. A run stuck for a whole window still counts.
    const settleEnd = Date.now() + 3 * options.settleTimeoutMs;
    let settleUntil = Date.now() + options.settleTimeoutMs;
    let openBefore = Infinity;
    while (Date.now() < Math.min(settleUntil, settleEnd)) {
      await runs.refresh().catch(() => undefined);
      const open = [...runs.entries.values()].filter((e) => !e.gone && !(isTerminalPhase(e.latest) && !e.deleteRequested));
      if (open.length === 0) break;
      if (open.length < openBefore) settleUntil = Date.now() + options.settleTimeoutMs;
      openBefore = open.length;
      controller.assertNoUnexpectedExit();
      await sleep(2000);
    }
    if (options.holdKeptPods) await holdKeptPods(runs, options.billingMarginMs, say);
    polling = false;
    await poller;
    await runs.refresh();
    const notTerminal = runsNotTerminal(runs);
    const outcomes = [...runs.entries.values()].map((entry) => ({
      name: entry.planned.name, kind: entry.planned.kind, outcome: outcomeOf(entry), message: entry.latest?.status?.message ?? '',
      attempts: entry.latest?.status?.attempts?.length ?? 0, tries: (entry.latest?.status?.retries ?? 0) + 1, pods: 0,
    }));

    say('deleting every run');
    await kubectl(['delete', 'rpr', '--all', '-n', namespace, '--wait=false']);
    const deleteUntil = Date.now() + 120_000;
    let leftover = await runs.list();
    while (leftover.length > 0 && Date.now() < deleteUntil) {
      await sleep(1000);
      leftover = await runs.list();
    }
    // What the finalizer waited for is done: nothing of ours may bill now (a few seconds for processes to go).
    let pods = await simPodsWithProcesses(sim.adminUrl);
    for (let i = 0; i < 15 && podsLeaked(pods).value > 0; i++) {
      await sleep(1000);
      pods = await simPodsWithProcesses(sim.adminUrl);
    }
    const now = Date.now();
    const terms = readLeaderTerms(controllerLog, killer.records.map((kill) => started + (kill.atMs ?? 0)), now);
    const leaderMs = (from: number, to: number): number => leaderMsBetween(terms, from, to);
    const results = resultsLostOrUnverified(runs, (entry) => destructionOf(entry, pods, faults, terms, started));
    const stops = containerStops(faults, started);
    const billing = billedPastDeadline(pods, runs, options.billingMarginMs, now, {
      leaderMs, watchdogStoppedAt: (pod) => stops.find((stop) => stop.podId === pod.id)?.at,
    });
    const badKeys = malformedKeyRunsNotHeld(runs, leaderMs, started);
    const figures = [
      notTerminal,
      podsLeaked(pods),
      billing.billed,
      doubleBilling(pods, runs, now),
      retriesPastLimit(pods, runs),
      results.lost,
      finalizersLeft(leftover.map((run) => ({ name: run.metadata.name ?? '', finalizers: run.metadata.finalizers ?? [], message: run.status?.message ?? '' }))),
      badKeys.notHeld,
      keysInLog(readFileSync(controllerLog, 'utf8'), [apiKey, ...badKeyParts]),
    ];
    for (const outcome of outcomes) {
      const uid = runs.entries.get(outcome.name)?.uid;
      outcome.pods = pods.filter((pod) => uid && pod.env.RUNPOD_OPERATOR_RUN === uid).length;
    }
    controller.assertNoUnexpectedExit();
    const stagingLeft = leftoverStaging(join(resultsDir, namespace));
    const rented = pods.map((pod) => ({
      id: pod.id, name: pod.name, run: runs.byUid(pod.env.RUNPOD_OPERATOR_RUN ?? '')?.planned.name ?? '?',
      createdAt: pod.createdAt, deletedAt: pod.deletedAt, deletedBy: pod.deletedBy,
    }));
    const calls = controllerCalls(await simStats(sim.adminUrl));
    return { schedule, namespace, figures, noChance: [...billing.noChance, ...results.noChance, ...badKeys.noChance], stagingLeft, pods: rented, outcomes, kills: killer.records, faults, calls, controllerLog, durationMs: elapsed() };
  } finally {
    polling = false;
    await poller;
    await controller.stop();
    await proxy.stop();
    await sim.stop();
  }
}

/** Whether the run is seen waiting Pending/CredentialsInvalid before `until` (epoch ms). */
async function seenCredentialsInvalid(runs: RunBook, name: string, until: number): Promise<boolean> {
  while (Date.now() < until) {
    const status = (await runs.get(name))?.status;
    if (status?.phase === 'Pending' && status.reason === 'CredentialsInvalid') return true;
    await sleep(500);
  }
  return false;
}

async function fire(fault: PlannedFault, adminUrl: string, runs: RunBook, atMs: number): Promise<FaultRecord> {
  const generator = faultGenerators[fault.name];
  let target: { id: string; runName: string } | undefined;
  if (generator.targetsPod) {
    const live = (await simPods(adminUrl)).filter((pod) => pod.deletedAt === null).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    const pod = live[Math.floor(fault.podPick * live.length)];
    if (!pod) return { planned: fault, atMs, fired: false, detail: 'no live pod to aim at' };
    target = { id: pod.id, runName: runs.byUid(pod.env.RUNPOD_OPERATOR_RUN ?? '')?.planned.name ?? pod.name };
  }
  const body = generator.arm(fault.params, target);
  if (!body) return { planned: fault, atMs, fired: false, detail: 'nothing to aim at' };
  try {
    await injectFault(adminUrl, body);
    return { planned: fault, atMs, fired: true, detail: JSON.stringify(body) + (target ? ` (run ${target.runName})` : ''), ...(target ? { podId: target.id } : {}) };
  } catch (error) {
    return { planned: fault, atMs, fired: false, detail: String(error) };
  }
}

/** Waits (at most 5 minutes) until the deadline + margin of every kept pod has passed. */
async function holdKeptPods(runs: RunBook, marginMs: number, say: (line: string) => void): Promise<void> {
  const limits = [...runs.entries.values()]
    .filter((entry) => entry.planned.kind === 'keep-pod' && !entry.gone && entry.latest?.status?.pod?.createdAt && entry.latest.status.pod.state !== 'Deleted')
    .map((entry) => Date.parse(entry.latest!.status!.pod!.createdAt!) + entry.planned.maxRuntimeSeconds * 1000 + marginMs + 5000);
  const until = Math.min(Math.max(0, ...limits), Date.now() + 300_000);
  if (until <= Date.now()) return;
  say(`holding ${limits.length} kept pods for ${Math.round((until - Date.now()) / 1000)}s: until their deadline + margin has passed`);
  await sleep(until - Date.now());
}

function controllerCalls(stats: SimStats): SessionReport['calls'] {
  const account = stats.requests.filter((entry) => entry.caller === 'account');
  const createsByStatus: Record<string, number> = {};
  for (const entry of account.filter((e) => e.method === 'POST' && e.path === '/v2/pods')) createsByStatus[entry.status] = (createsByStatus[entry.status] ?? 0) + entry.count;
  return { createsByStatus, total: account.reduce((sum, entry) => sum + entry.count, 0) };
}

function leftoverStaging(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root).flatMap((run) => readdirSync(join(root, run)).filter((name) => name.includes('.partial-')).map((name) => join(root, run, name)));
}

async function must<T extends { status: number; stderr: string }>(result: Promise<T>): Promise<T> {
  const done = await result;
  if (done.status !== 0) throw new Error(`kubectl failed: ${done.stderr}`);
  return done;
}
