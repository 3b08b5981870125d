// Graceful shutdown and hand-over with the controller as real processes: a leader and a standby;
// SIGTERM reaches the leader while it streams a run's results. The leader must exit within the
// termination grace (30 s), having released the lease; the standby takes over and finishes the run
// from what the leader had staged, with nothing half-written left in the store. Ends with the leak check.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { sample } from '../metrics/scrape.ts';
import { injectFault } from '../runpod-sim/client.ts';
import { testCluster } from '../support/cluster.ts';
import { startControllerProcess, type ControllerProcess } from '../support/controller-process.ts';
import { runManifest, startWorld, unsuppressed } from '../support/operator.ts';
import { eventually } from '../support/eventually.ts';

const terminationGraceMs = 30_000;
/**
 * The result and its pod's link: a transfer of some ten seconds, cut by SIGTERM once 10 MB are staged.
 * A link paced as a real pod's, not 400 MB at loopback speed: the same cut, a tenth of the bytes to
 * encrypt, relay, hash and write on two cores shared by the suite.
 */
const resultBytes = 40_000_000;
const linkBytesPerSecond = 4_000_000;
const ended = (run: { status?: { phase?: string } }) => run.status?.phase === 'Succeeded' || run.status?.phase === 'Failed';

/** The partial file of a cut-short download of `name` in a staging directory under `dir`, once it holds `atLeast` bytes. */
async function stagedPartial(dir: string, name: string, atLeast: number, timeoutMs: number): Promise<{ path: string; bytes: number }> {
  return eventually(`a partial ${name} of ${atLeast} bytes`, () => {
    const found = readdirSync(dir, { recursive: true, withFileTypes: true }).find((entry) => entry.name === `.${name}.part`);
    const bytes = found ? statSync(join(found.parentPath, found.name), { throwIfNoEntry: false })?.size ?? 0 : 0;
    return found && bytes >= atLeast ? { path: join(found.parentPath, found.name), bytes } : undefined;
  }, timeoutMs);
}

/** Every `.partial-` staging directory under the results dir. */
function partials(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isDirectory() && /\.partial-[0-9a-f]{8}$/.test(entry.name)).map((entry) => entry.name);
}

void test('SIGTERM mid-transfer: the leader exits within the grace and releases the lease; the standby finishes the run', () => unsuppressed(async () => {
  await using world = await startWorld('shutdown');
  const { kubeconfigPath, kubeConfig } = await testCluster();
  const resultsDir = mkdtempSync(join(tmpdir(), 'results-shutdown-'));
  const flags = {
    kubeconfig: kubeconfigPath, namespace: world.namespace, 'cluster-id': world.clusterId, 'runpod-api-url': world.sim.baseUrl,
    'lease-namespace': world.namespace, 'results-dir': resultsDir, 'poll-interval': '2s', 'deadline-margin': '5s', 'log-level': 'debug',
  };
  const children: ControllerProcess[] = [];
  try {
    const a = await startControllerProcess(flags);
    children.push(a);
    await a.waitForLine((l) => l.msg === 'became leader');
    const b = await startControllerProcess(flags);
    children.push(b);
    await b.waitForLine((l) => l.msg === 'new leader observed');
    const standbyReady = await fetch(`${b.healthUrl}/readyz`);
    assert.deepEqual([standbyReady.status, await standbyReady.text()], [200, 'ok (standby)\n'], 'a standby is ready');
    assert.equal(sample(await (await fetch(`${b.metricsUrl}/metrics`)).text(), 'runpod_operator_leader'), 0);
    assert.equal(sample(await (await fetch(`${a.metricsUrl}/metrics`)).text(), 'runpod_operator_leader'), 1);

    await world.apply(runManifest('big', {
      job: { command: ['sh', '-c', `mkdir -p output && head -c ${resultBytes} /dev/zero > output/big.bin && echo written`] },
      results: { path: 'output' },
    }));
    // Paced from before sshd is up, so every connection to the pod is (an open one keeps its speed).
    const created = await world.waitForRun('big', 'a pod', (run) => run.status?.pod?.id !== undefined || ended(run), 120_000);
    await injectFault(world.sim.adminUrl, { fault: 'slow-link', podId: created.status!.pod!.id!, bytesPerSecond: linkBytesPerSecond });
    await world.waitForRun('big', 'Retrieving', (run) => run.status?.phase === 'Retrieving' || ended(run), 120_000);
    const partial = await stagedPartial(resultsDir, 'big.bin', 10_000_000, 60_000);
    const sentAt = Date.now();
    a.kill('SIGTERM');
    const exit = await Promise.race([a.exited, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), terminationGraceMs + 10_000).unref())]);
    assert.ok(exit, 'the leader exited at all');
    console.log(`leader exited ${exit.at - sentAt} ms after SIGTERM (code ${exit.code})`);
    assert.ok(exit.at - sentAt < terminationGraceMs, `exited within the ${terminationGraceMs} ms grace`);
    assert.equal(exit.code, 0, 'a clean exit');
    const interrupted = await world.run('big');
    assert.equal(interrupted?.status?.phase, 'Retrieving', 'SIGTERM came while the results were being fetched');
    assert.equal(interrupted?.status?.results?.retrievedAt, undefined, 'and the transfer was cut, not finished');
    const kept = statSync(partial.path, { throwIfNoEntry: false })?.size ?? 0;
    assert.ok(kept >= partial.bytes, `what the leader fetched stays staged for the standby to resume (${kept} bytes)`);
    assert.ok(a.lines.some((l) => l.msg === 'released the leader lease'), 'it released the lease');
    const lease = await kubeConfig.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: world.namespace, name: 'runpod-operator-leader' });
    const holder = lease.spec?.holderIdentity ?? '';
    assert.ok(holder === '' || holder.endsWith(`-${b.pid}`), `released, or already taken by the standby (holder "${holder}")`);

    await b.waitForLine((l) => l.msg === 'became leader', 20_000);
    const run = await world.waitForRun('big', 'Succeeded', ended, 180_000);
    assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
    assert.equal(run.status?.results?.bytes, resultBytes);
    assert.deepEqual(partials(resultsDir), [], 'no partial results left behind');
    await world.deleteRun('big');
    b.kill('SIGTERM');
    assert.equal((await b.exited).code, 0);
  } finally {
    for (const child of children) child.kill('SIGKILL');
    rmSync(resultsDir, { recursive: true, force: true });
  }
}));
