// Several installs of the controller in this process, on one cluster id, sharing one simulated Runpod
// account (as teams or shards do): each install's log kept apart, so a test can tell who swept what.
// Disposed in reverse: the leak check first, then the installs, the client and the simulator; a failed
// assertion and a leak found after it are both reported (unsuppressed).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configSchema } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { startController, type RunningController } from '../../src/main.ts';
import { createRunpodClient, type RunpodClient } from '../../src/runpod/index.ts';
import { assertNoLeaks } from '../runpod-sim/client.ts';
import { startSimulator, type RunningSimulator } from '../runpod-sim/server.ts';
import { testCluster } from './cluster.ts';
import { testApiKey, testTimings, unsuppressed } from './operator.ts';

export interface Install { controller: RunningController; logLines: string[] }

export interface SharedAccount {
  sim: RunningSimulator;
  /** The account's own client, for pods made by hand (strays). */
  client: RunpodClient;
  clusterId: string;
  /** An install with these settings (namespace, selector, lease) over the common ones: each second a poll and a sweep. */
  start: (settings: Record<string, string>) => Promise<Install>;
}

export async function withSharedAccount(clusterId: string, body: (account: SharedAccount) => Promise<void>): Promise<void> {
  const { kubeconfigPath } = await testCluster();
  // Installs polling one account each second: a budget above a real account's, for a quick test.
  const sim = await startSimulator({ apiKeys: [testApiKey], config: { rateLimits: { minute: { quota: 600, seconds: 60 }, hour: { quota: 30_000, seconds: 3600 } } } });
  const resultsDir = mkdtempSync(join(tmpdir(), 'results-shared-'));
  const client = createRunpodClient({ apiKey: testApiKey, baseUrl: sim.baseUrl, logger: createLogger('silent') });
  const installs: Install[] = [];
  await unsuppressed(async () => {
    await using cleanup = new AsyncDisposableStack();
    cleanup.defer(async () => {
      await sim.stop();
      rmSync(resultsDir, { recursive: true, force: true });
    });
    cleanup.defer(() => client.close());
    cleanup.defer(async () => { for (const install of installs) await install.controller.stop(); });
    cleanup.defer(() => assertNoLeaks(sim.adminUrl, 15_000));
    const start = async (settings: Record<string, string>): Promise<Install> => {
      const config = configSchema.parse({
        kubeconfig: kubeconfigPath, clusterId, runpodApiUrl: sim.baseUrl, pollInterval: '1s', leaderElect: 'true', logLevel: 'debug',
        resultsDir, sweepInterval: '1s', strayGrace: '2s', metricsBindAddress: '0', healthProbeBindAddress: '0', ...settings,
      });
      const logLines: string[] = [];
      const logger = createLogger('debug', { write: (line: string) => { logLines.push(line); } });
      const install = { logLines, controller: await startController(config, { logger, timings: testTimings, onLostLeadership: () => undefined }) };
      installs.push(install);
      return install;
    };
    await body({ sim, client, clusterId, start });
  });
}

/** Whether this install's log says it deleted pod `id` as a stray. */
export const sweptBy = (install: Install | undefined, id: string): boolean =>
  install?.logLines.some((line) => line.includes(id) && line.includes('stray')) ?? false;
