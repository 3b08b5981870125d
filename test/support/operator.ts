// End-to-end world for one test: the shared API server (its own namespace), a fresh Runpod
// simulator, and the controller under test in this process, pointed at both. stop() ends with the
// leak check: no pod of ours may be left alive.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { group, plural, version, type RunpodRun } from '../../src/api/runpodrun.ts';
import { configSchema } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { startController, type RunningController } from '../../src/main.ts';
import type { Timings } from '../../src/run/decide/timings.ts';
import { assertNoLeaks } from '../runpod-sim/client.ts';
import { startSimulator, type RunningSimulator, type SimConfigInput } from '../runpod-sim/server.ts';
import { createTestNamespace, testCluster } from './cluster.ts';
import { eventually, EVENTUALLY_MS } from './eventually.ts';
import { kubectl } from './kubectl.ts';
import { RunChanges } from './run-changes.ts';

export const testApiKey = 'rpa_TESTKEY_DO_NOT_LOG_4f1c9b7e2a6d';

export interface World {
  namespace: string;
  sim: RunningSimulator;
  clusterId: string;
  logLines: string[];
  /** The controller's --results-dir. */
  resultsDir: string;
  /** Starts the controller; `overrides` go over the world's settings (say another kubeconfig), undefined unsets one. */
  startController(overrides?: Record<string, string | undefined>): Promise<void>;
  stopController(): Promise<void>;
  /** The running controller's metrics and health URLs (ephemeral loopback ports). */
  endpoints(): { metricsUrl?: string | undefined; healthUrl?: string | undefined };
  apply(manifest: object | string): Promise<void>;
  run(name: string): Promise<RunpodRun | undefined>;
  waitForRun(name: string, what: string, predicate: (run: RunpodRun) => boolean, timeoutMs?: number): Promise<RunpodRun>;
  /** `kubectl delete rpr`, which returns once the controller removed its finalizer. */
  deleteRun(name: string): Promise<void>;
  stop(): Promise<void>;
  /** `await using world = ...`: stop() at the end of the scope, without hiding the scope's own error. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * The run loop's waits and bounds in a test's world, compressed from decide/timings.ts's production
 * values (as cert-manager's integration tests step a fake clock past a long backoff): each still
 * longer than this world's 2 s poll and the simulator's lags a test sets (20 s at most), so the rules
 * they test hold.
 */
export const testTimings: Partial<Timings> = {
  newPodListLagToleranceMs: 30_000,
  lookSpacingMs: 1000,
  deletedListLagToleranceMs: 30_000,
  goneLookSpacingMs: 5000,
  startAgainBoundMs: 20_000,
  graceRenewalMinMs: 30_000,
  resendUnconfirmedDeleteMs: 20_000,
  systemLogFirstReadMs: 5000,
  systemLogReadEveryMs: 15_000,
  // The spend, rate-limit and capacity spacings stay as in production: tests count the creates they allow.
};

export interface WorldOptions {
  sim?: SimConfigInput; pollInterval?: string; deadlineMargin?: string; watchdogPeriod?: string;
  /** Over testTimings (production values where a test needs one). */
  timings?: Partial<Timings>;
  /** What the controller calls instead of this world's simulator (a validating proxy in front of it); pods still call the simulator. */
  apiFront?: (sim: RunningSimulator) => string;
}

export async function startWorld(prefix: string, options: WorldOptions = {}): Promise<World> {
  const { kubeConfig, kubeconfigPath } = await testCluster();
  const namespace = await createTestNamespace(prefix);
  const sim = await startSimulator({ apiKeys: [testApiKey], config: options.sim });
  // A cluster id per test: the sweeper of one test can never see another test's pods as strays.
  const clusterId = `test-${namespace}`;
  const logLines: string[] = [];
  const resultsDir = mkdtempSync(join(tmpdir(), `results-${prefix}-`));
  let controller: RunningController | undefined;
  const objects = kubeConfig.makeApiClient(CustomObjectsApi);
  const changes = new RunChanges(kubeConfig, `/apis/${group}/${version}/namespaces/${namespace}/${plural}`);

  // Set-up, not the subject: through the API (a kubectl process costs some 0.2 s of CPU, in every world).
  await kubeConfig.makeApiClient(CoreV1Api).createNamespacedSecret({ namespace, body: { metadata: { name: 'runpod' }, stringData: { apiKey: testApiKey } } });

  const world: World = {
    namespace, sim, clusterId, logLines, resultsDir,
    async startController(overrides = {}) {
      const input = {
        kubeconfig: kubeconfigPath, namespace, clusterId, runpodApiUrl: options.apiFront?.(sim) ?? sim.baseUrl,
        pollInterval: options.pollInterval ?? '2s', deadlineMargin: options.deadlineMargin ?? '5s',
        leaderElect: 'true', leaseNamespace: namespace, logLevel: 'debug', resultsDir,
        metricsBindAddress: '127.0.0.1:0', healthProbeBindAddress: '127.0.0.1:0',
        ...(options.watchdogPeriod ? { watchdogPeriod: options.watchdogPeriod } : {}),
        ...overrides,
      };
      const config = configSchema.parse(Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined)));
      const logger = createLogger('debug', { write: (line: string) => { logLines.push(line); } });
      controller = await startController(config, { logger, podApiUrl: sim.baseUrl, timings: { ...testTimings, ...options.timings }, onLostLeadership: () => logLines.push('{"msg":"lost leadership"}') });
    },
    async stopController() {
      await controller?.stop();
      controller = undefined;
    },
    endpoints: () => ({ metricsUrl: controller?.metricsUrl, healthUrl: controller?.healthUrl }),
    async apply(manifest) {
      const text = typeof manifest === 'string' ? manifest : JSON.stringify(manifest);
      const result = await kubectl(['apply', '-n', namespace, '-f', '-'], text);
      assert.equal(result.status, 0, result.stderr);
    },
    async run(name) {
      try {
        return await objects.getNamespacedCustomObject({ group, version, namespace, plural, name }) as RunpodRun;
      } catch {
        return undefined;
      }
    },
    async waitForRun(name, what, predicate, timeoutMs = EVENTUALLY_MS) {
      let last: RunpodRun | undefined;
      let seen = 0;
      try {
        // At the run's next change (a watch), and every 2 s whatever the watch does.
        return await eventually(`${name} to be ${what}`, async () => {
          seen = changes.generation;
          last = await world.run(name);
          return last && predicate(last) ? last : undefined;
        }, timeoutMs, 2000, (ms) => changes.after(seen, ms));
      } catch (error) {
        return assert.fail(`${(error as Error).message}; last status: ${JSON.stringify(last?.status)}`);
      }
    },
    async deleteRun(name) {
      const result = await kubectl(['delete', 'rpr', name, '-n', namespace, '--timeout=60s']);
      assert.equal(result.status, 0, result.stderr);
    },
    [Symbol.asyncDispose]: () => Promise.resolve(),
    async stop() {
      if (process.env.E2E_LOG_DIR) writeFileSync(join(process.env.E2E_LOG_DIR, `controller-${namespace}.log`), logLines.join(''));
      try {
        await assertNoLeaks(sim.adminUrl, 15_000);
      } catch (error) {
        // What the controller did is the first thing anyone debugging a leak needs.
        const file = join(tmpdir(), `controller-${namespace}.log`);
        writeFileSync(file, logLines.join(''));
        console.error(`controller log: ${file}`);
        throw error;
      } finally {
        await changes.stop();
        await world.stopController();
        await sim.stop();
        rmSync(resultsDir, { recursive: true, force: true });
      }
    },
  };
  world[Symbol.asyncDispose] = () => world.stop();
  return world;
}

export function runManifest(name: string, spec: Record<string, unknown> = {}): object {
  return {
    apiVersion: `${group}/${version}`, kind: 'RunpodRun', metadata: { name },
    spec: {
      credentials: { secretName: 'runpod' }, image: 'runpod/base:0.6.2', gpu: { types: ['NVIDIA GeForce RTX 4090', 'NVIDIA A40'] },
      job: { command: ['sleep', '600'] }, limits: { maxRuntimeSeconds: 600, readyTimeoutSeconds: 60 }, ...spec,
    },
  };
}

export const hasCondition = (run: RunpodRun, type: string, status = 'True'): boolean =>
  run.status?.conditions?.some((c) => c.type === type && c.status === status) ?? false;

/** A test body in a fresh world with the controller running; the world stops (leak check) whatever happens. */
export function withWorld(prefix: string, body: (world: World) => Promise<void>, options: WorldOptions = {}): Promise<void> {
  return unsuppressed(async () => {
    await using world = await startWorld(prefix, options);
    await world.startController();
    await body(world);
  });
}

/**
 * Runs a scope that uses `await using`, so that when both the scope and its disposal fail, the report
 * names both: the test runner prints a SuppressedError as "An error was suppressed during disposal"
 * and neither of the errors that matter (a failed assertion, then the leak check finding its pod).
 */
export async function unsuppressed(scope: () => Promise<void>): Promise<void> {
  try {
    await scope();
  } catch (error) {
    if (!(error instanceof SuppressedError)) throw error;
    const message = (value: unknown): string => (value instanceof Error ? value.message : String(value));
    throw new Error(`${message(error.suppressed)}\n... and then, while stopping: ${message(error.error)}`, { cause: error.suppressed });
  }
}
