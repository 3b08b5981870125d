// Runpod simulator figures: GET /v2/pods throughput, pod start time (create -> port 22 answers,
// create -> ssh.direct reported) and memory per idle pod. Prints figures; asserts nothing.
//   node_modules/.bin/node bench/sim.bench.ts
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { assertNoLeaks, simPods, simPodsWithProcesses } from '../test/runpod-sim/client.ts';
import { startSimulator } from '../test/runpod-sim/server.ts';
import { call, field, keyPair, sshdPodBody } from '../test/runpod-sim/testkit.ts';

const KEY = 'bench-account-key';
const IDLE_PODS = 4;
const THROUGHPUT_SECONDS = 3;

const sim = await startSimulator({
  apiKeys: [KEY],
  config: {
    rateLimits: { enabled: false },
    gpuTypes: [{ id: 'NVIDIA GeForce RTX 4090', displayName: 'RTX 4090', memoryInGb: 24, pricePerHour: 0.69, stock: { 'EU-RO-1': 64 } }],
  },
});

function banner(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.once('data', (chunk: Buffer) => done(chunk.toString().startsWith('SSH-')));
    socket.once('error', () => done(false));
    socket.once('close', () => done(false));
  });
}

function pssKb(pid: number): number {
  try {
    return Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

const stats = (values: number[]): string => {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
  return `median ${median.toFixed(0)} ms, min ${(sorted[0] ?? 0).toFixed(0)} ms, max ${(sorted.at(-1) ?? 0).toFixed(0)} ms (n=${sorted.length})`;
};

try {
  // Start time, one pod at a time so the figures are not a queue.
  const client = keyPair();
  const reachable: number[] = [];
  const reported: number[] = [];
  const ids: string[] = [];
  for (let i = 0; i < IDLE_PODS; i += 1) {
    const started = performance.now();
    const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: sshdPodBody(`bench-${i}`, keyPair(), client) });
    const id = String(field(created.body, 'id'));
    ids.push(id);
    let reachedAt: number | undefined;
    let reportedAt: number | undefined;
    while (reachedAt === undefined || reportedAt === undefined) {
      if (reachedAt === undefined) {
        const port = (await simPods(sim.adminUrl)).find((pod) => pod.id === id)?.sshPort;
        if (port != null && (await banner(port))) reachedAt = performance.now();
      }
      if (reportedAt === undefined) {
        const pod = await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY });
        if (field(pod.body, 'ssh', 'direct') !== null) reportedAt = performance.now();
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    reachable.push(reachedAt - started);
    reported.push(reportedAt - started);
  }
  console.log(`pod start, create -> port 22 answers with an SSH banner: ${stats(reachable)}`);
  console.log(`pod start, create -> ssh.direct reported by GET /v2/pods/{id}: ${stats(reported)}`);

  // Memory: every process of each idle pod (holder, relay to the API, container, sshd, sleep).
  await new Promise((resolve) => setTimeout(resolve, 500));
  const pods = (await simPodsWithProcesses(sim.adminUrl)).filter((pod) => pod.deletedAt === null);
  const perPod = pods.map((pod) => ({
    rss: pod.processes.reduce((sum, proc) => sum + proc.rssKb, 0),
    pss: pod.processes.reduce((sum, proc) => sum + pssKb(proc.pid), 0),
    count: pod.processes.length,
  }));
  const avg = (pick: (p: { rss: number; pss: number; count: number }) => number): number => perPod.reduce((sum, p) => sum + pick(p), 0) / perPod.length;
  console.log(
    `memory per idle pod (sshd + sleep): ${avg((p) => p.count).toFixed(1)} processes, RSS ${(avg((p) => p.rss) / 1024).toFixed(1)} MiB, ` +
      `PSS ${(avg((p) => p.pss) / 1024).toFixed(1)} MiB (RSS counts shared pages once per process; PSS shares them out)`,
  );

  // Throughput of the list call with IDLE_PODS pods alive, sequential and 16 in flight.
  for (const concurrency of [1, 16]) {
    let done = 0;
    const until = performance.now() + THROUGHPUT_SECONDS * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < until) {
          const response = await fetch(`${sim.baseUrl}/pods`, { headers: { Authorization: `Bearer ${KEY}` } });
          await response.arrayBuffer();
          done += 1;
        }
      }),
    );
    console.log(`GET /v2/pods (${IDLE_PODS} pods), ${concurrency} in flight: ${(done / THROUGHPUT_SECONDS).toFixed(0)} requests/s`);
  }

  for (const id of ids) await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY });
  await assertNoLeaks(sim.adminUrl);
} finally {
  await sim.stop();
}
