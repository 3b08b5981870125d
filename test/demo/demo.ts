// `npm run demo`: the main job on an embedded default. Starts a local API server (the envtest
// harness) or uses the current cluster (USE_EXISTING_CLUSTER=true), the Runpod simulator and the
// controller; applies examples/quickstart.yaml; shows the run's progress until it ends; prints where
// the verified results are; then cleans everything up (the results stay).
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseAllDocuments } from 'yaml';
import { configSchema } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { startController } from '../../src/main.ts';
import { startControlPlane } from '../envtest/harness.ts';
import { runKubectl } from '../support/kubectl.ts';
import { assertNoLeaks, simPods } from '../runpod-sim/client.ts';
import { startSimulator } from '../runpod-sim/server.ts';

const repo = resolve(import.meta.dirname, '..', '..');
const manifest = readFileSync(join(repo, 'examples', 'quickstart.yaml'), 'utf8');
const demoKey = (parseAllDocuments(manifest).map((doc) => doc.toJS() as { kind: string; stringData?: { apiKey?: string } })
  .find((doc) => doc.kind === 'Secret')?.stringData?.apiKey) ?? '';
const namespace = `runpod-demo-${Date.now().toString(36)}`;
const resultsDir = mkdtempSync(join(tmpdir(), 'runpod-operator-demo-'));
const say = (text: string) => console.log(`demo: ${text}`);

/** What was started, stopped in reverse order on success, on any failure and on SIGINT/SIGTERM. */
const cleanups: { what: string; stop: () => Promise<void> }[] = [];
let cleaning: Promise<void> | undefined;
function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    for (const { what, stop } of cleanups.reverse()) {
      try {
        await stop();
      } catch (error) {
        say(`stopping ${what} failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    say('cleaned up (the controller, the simulator and the local API server are stopped)');
  })();
  return cleaning;
}
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.once(signal, () => {
    say(`${signal}: stopping`);
    void cleanUp().finally(() => process.exit(code));
  });
}

async function demo(): Promise<boolean> {
  say(process.env.USE_EXISTING_CLUSTER === 'true' ? 'using the current cluster' : 'starting a local kube-apiserver + etcd');
  const plane = await startControlPlane({ dir: mkdtempSync(join(tmpdir(), 'runpod-demo-envtest-')) });
  cleanups.push({ what: 'the local API server', stop: () => plane.stop() });
  const kubectl = (...args: string[]) => runKubectl(['--kubeconfig', plane.kubeconfigPath, ...args]);
  const sim = await startSimulator({ apiKeys: [demoKey] });
  cleanups.push({ what: 'the Runpod simulator', stop: () => sim.stop() });
  say(`Runpod simulator at ${sim.baseUrl}`);
  if (process.env.USE_EXISTING_CLUSTER === 'true') {
    cleanups.push({ what: `namespace ${namespace}`, stop: async () => { await kubectl('delete', 'namespace', namespace, '--wait=false'); } });
  }
  await kubectl('create', 'namespace', namespace);
  const controller = await startController(configSchema.parse({
    kubeconfig: plane.kubeconfigPath, namespace, runpodApiUrl: sim.baseUrl, resultsDir,
    pollInterval: '2s', leaderElect: 'true', leaseNamespace: namespace, logLevel: 'warn',
    metricsBindAddress: '0', healthProbeBindAddress: '0',
  }), { logger: createLogger('warn') });
  cleanups.push({ what: 'the controller', stop: () => controller.stop() });

  const applied = await runKubectl(['--kubeconfig', plane.kubeconfigPath, 'apply', '-n', namespace, '-f', '-'], manifest);
  process.stdout.write(applied.stdout + applied.stderr);
  if (applied.status !== 0) throw new Error('kubectl apply of examples/quickstart.yaml failed');
  let last = '';
  let phase = '';
  const deadline = Date.now() + 10 * 60_000;
  while (Date.now() < deadline && phase !== 'Succeeded' && phase !== 'Failed') {
    // Like `kubectl get -w`: a line each time the phase, reason, pod or exit code changes.
    const now = (await kubectl('get', 'rpr', 'quickstart', '-n', namespace, '-o', 'jsonpath={.status.phase} {.status.reason} {.status.pod.id} {.status.job.exitCode}')).stdout;
    if (now !== last) {
      const [header, row] = (await kubectl('get', 'rpr', 'quickstart', '-n', namespace, '-o', 'wide')).stdout.trim().split('\n');
      if (!last) console.log(header);
      console.log(row);
      last = now;
    }
    phase = now.split(' ')[0] ?? '';
    await sleep(500);
  }
  const status = JSON.parse((await kubectl('get', 'rpr', 'quickstart', '-n', namespace, '-o', 'jsonpath={.status}')).stdout || '{}') as {
    message?: string; results?: { location?: string; files?: number; bytes?: number };
  };
  say(`${phase || 'not finished within 10 minutes'}: ${status.message ?? ''}`);
  const location = status.results?.location;
  if (location) {
    say(`verified results in ${location}:`);
    const walk = (dir: string): string[] => readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? walk(path) : [path];
    });
    for (const file of walk(location)) console.log(`  ${relative(location, file)}  (${statSync(file).size} bytes)`);
  }
  await kubectl('delete', 'rpr', 'quickstart', '-n', namespace, '--timeout=60s');
  const pods = await simPods(sim.adminUrl);
  say(`pods rented: ${pods.length}, still alive: ${pods.filter((pod) => pod.deletedAt === null).length}`);
  await assertNoLeaks(sim.adminUrl, 15_000);
  return phase === 'Succeeded';
}

let succeeded = false;
try {
  succeeded = await demo();
} catch (error) {
  // A sentence, not a stack trace: what stopped the demo is all a newcomer needs here.
  say(`failed: ${error instanceof Error ? error.message : String(error)}`);
} finally {
  await cleanUp();
}
process.exit(succeeded ? 0 : 1);
