// The idle controller's cost: a controller process (as deployed: its own process, info logs,
// metrics and probes on) that has finished a few runs, then left idle for 60 s (IDLE_SECONDS). Printed:
// RSS and CPU time from ps before and after the idle minute, and the RSS split into anonymous and file-backed.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertNoLeaks } from '../test/runpod-sim/client.ts';
import { createTestNamespace, testCluster } from '../test/support/cluster.ts';
import { startControllerProcess } from '../test/support/controller-process.ts';
import { kubectl } from '../test/support/kubectl.ts';
import { runManifest, startSimProcess } from './support.ts';

const runs = 3;
const idleSeconds = Number(process.env.IDLE_SECONDS ?? 60);
const { kubeconfigPath } = await testCluster();
const namespace = await createTestNamespace('idle');
const apiKey = `rpa_IDLE_${randomBytes(8).toString('hex')}`;
const sim = await startSimProcess({
  gpuTypes: [{ id: 'NVIDIA GeForce RTX 4090', displayName: 'RTX 4090', memoryInGb: 24, pricePerHour: { secure: 0.69, community: 0.34 }, stock: { 'EU-RO-1': runs + 2 } }],
}, apiKey);
const resultsDir = mkdtempSync(join(tmpdir(), 'bench-idle-'));
const ns = (args: string[], input?: string) => kubectl([...args, '-n', namespace], input);
await ns(['create', 'secret', 'generic', 'runpod', `--from-literal=apiKey=${apiKey}`]);
const controller = await startControllerProcess({
  kubeconfig: kubeconfigPath, namespace, 'cluster-id': `bench-${namespace}`, 'runpod-api-url': sim.baseUrl, 'lease-namespace': namespace,
  'results-dir': resultsDir, 'log-level': 'info',
});
/** RSS as the kernel splits it: anonymous (heap, stacks, malloc), file-backed (the binary, libraries), shared. */
const rssParts = (): string => {
  const status = readFileSync(`/proc/${controller.pid}/status`, 'utf8');
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return ['RssAnon', 'RssFile', 'RssShmem'].map((f) => `${f} ${(kib(f) / 1024).toFixed(1)}`).join(', ') + ' MiB';
};
const ps = (): string => execFileSync('ps', ['-o', 'rss=,time=', '-p', String(controller.pid)], { encoding: 'utf8' }).trim();
/** utime + stime in seconds (ps's time has a resolution of one second). */
const cpuSeconds = (): number => {
  const fields = readFileSync(`/proc/${controller.pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};
try {
  const manifests = Array.from({ length: runs }, (_, i) => runManifest(`idle-${i}`, {
    job: { command: ['sh', '-c', 'mkdir -p output && echo done > output/done.txt'] }, results: { path: 'output' },
  }));
  await ns(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: manifests }));
  for (;;) {
    const out = await ns(['get', 'rpr', '-o', 'jsonpath={range .items[*]}{.status.phase}{"\\n"}{end}']);
    if (out.stdout.split('\n').filter((p) => p === 'Succeeded').length === runs) break;
    await sleep(1000);
  }
  await sleep(5000);
  const [rssBefore, cpuBefore] = ps().split(/\s+/);
  const cpuStart = cpuSeconds();
  await sleep(idleSeconds * 1000);
  const cpuIdle = cpuSeconds() - cpuStart;
  const [rssAfter, cpuAfter] = ps().split(/\s+/);
  console.log(`${runs} runs Succeeded, then ${idleSeconds} s idle (poll interval 10 s, metrics and probes on, info logs)`);
  console.log(`  RSS ${(Number(rssBefore) / 1024).toFixed(1)} MiB -> ${(Number(rssAfter) / 1024).toFixed(1)} MiB; CPU time ${cpuBefore} -> ${cpuAfter} (ps -o rss,time)`);
  console.log(`  of it: ${rssParts()}`);
  console.log(`  CPU used while idle: ${cpuIdle.toFixed(2)} s in ${idleSeconds} s (${((100 * cpuIdle) / idleSeconds).toFixed(2)} % of one core)`);
  await ns(['delete', 'rpr', '--all', '--timeout=60s']);
  await assertNoLeaks(sim.adminUrl, 30_000);
} finally {
  controller.kill('SIGTERM');
  await controller.exited;
  await sim.stop();
  rmSync(resultsDir, { recursive: true, force: true });
}
process.exit(0);
