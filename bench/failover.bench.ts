// Failover under load, with the controller as real processes and the default election timings
// (lease 15 s, renew deadline 10 s, retry 2 s, as deploy/ runs it): a leader and a standby follow
// runs on simulated pods; the leader is SIGKILLed (no release: the standby waits out the lease),
// then the new leader gets SIGTERM (it releases: the next standby takes over at its next retry).
// Printed: from the signal to the standby's "became leader" and to its first reconcile step.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertNoLeaks } from '../test/runpod-sim/client.ts';
import { createTestNamespace, testCluster } from '../test/support/cluster.ts';
import { startControllerProcess, type ControllerProcess, type LogLine } from '../test/support/controller-process.ts';
import { kubectl } from '../test/support/kubectl.ts';
import { fmtS, runManifest, startSimProcess } from './support.ts';

const runs = Number(process.env.FAILOVER_RUNS ?? 8);
const { kubeconfigPath } = await testCluster();
const namespace = await createTestNamespace('failover');
const apiKey = `rpa_FAILOVER_${randomBytes(8).toString('hex')}`;
const sim = await startSimProcess({
  gpuTypes: [{ id: 'NVIDIA GeForce RTX 4090', displayName: 'RTX 4090', memoryInGb: 24, pricePerHour: { secure: 0.69, community: 0.34 }, stock: { 'EU-RO-1': runs + 4 } }],
}, apiKey);
const resultsDir = mkdtempSync(join(tmpdir(), 'bench-failover-'));
const ns = (args: string[], input?: string) => kubectl([...args, '-n', namespace], input);
await ns(['create', 'secret', 'generic', 'runpod', `--from-literal=apiKey=${apiKey}`]);
const flags = {
  kubeconfig: kubeconfigPath, namespace, 'cluster-id': `bench-${namespace}`, 'runpod-api-url': sim.baseUrl, 'lease-namespace': namespace,
  'results-dir': resultsDir, 'poll-interval': '2s', 'log-level': 'debug',
};
const processes: ControllerProcess[] = [];
const start = async (): Promise<ControllerProcess> => {
  const child = await startControllerProcess(flags);
  processes.push(child);
  return child;
};
const at = (line: LogLine): number => Date.parse(String(line.time));

/** Signals the leader; returns how long until the standby led and first reconciled (its own log's clock: same machine). */
async function failover(leader: ControllerProcess, standby: ControllerProcess, signal: NodeJS.Signals): Promise<{ leads: number; acts: number }> {
  await standby.waitForLine((l) => l.msg === 'new leader observed');
  await sleep(3000); // the standby has been campaigning for a while, as in production
  const sentAt = Date.now();
  leader.kill(signal);
  const led = await standby.waitForLine((l) => l.msg === 'became leader', 120_000);
  const acted = await standby.waitForLine((l) => l.msg === 'reconcile step' && at(l) >= at(led), 120_000);
  await leader.exited;
  return { leads: at(led) - sentAt, acts: at(acted) - sentAt };
}

try {
  const a = await start();
  await a.waitForLine((l) => l.msg === 'became leader');
  const b = await start();
  const manifests = Array.from({ length: runs }, (_, i) => runManifest(`load-${i}`, { job: { command: ['sleep', '300'] } }));
  await ns(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: manifests }));
  for (;;) {
    const out = await ns(['get', 'rpr', '-o', 'jsonpath={range .items[*]}{.status.phase}{"\\n"}{end}']);
    if (out.stdout.split('\n').filter((p) => p === 'Running').length === runs) break;
    await sleep(1000);
  }
  console.log(`${runs} runs Running on simulated pods; election timings: lease 15 s, renew deadline 10 s, retry 2 s (x up to 2.2 jitter)`);

  const killed = await failover(a, b, 'SIGKILL');
  console.log(`  SIGKILL of the leader -> standby leads after ${fmtS(killed.leads)}, first reconcile after ${fmtS(killed.acts)}`);
  const c = await start();
  const termed = await failover(b, c, 'SIGTERM');
  console.log(`  SIGTERM of the leader -> standby leads after ${fmtS(termed.leads)}, first reconcile after ${fmtS(termed.acts)}`);

  await ns(['delete', 'rpr', '--all', '--timeout=120s']);
  c.kill('SIGTERM');
  await c.exited;
  await assertNoLeaks(sim.adminUrl, 30_000);
  console.log('  no pod leaked');
} finally {
  for (const child of processes) child.kill('SIGKILL');
  await sim.stop();
  rmSync(resultsDir, { recursive: true, force: true });
}
process.exit(0);
