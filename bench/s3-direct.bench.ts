// The direct S3 path's throughput on this machine: a simulated pod (through network.forward) uploads
// one file to a real SeaweedFS with presigned multipart parts, driven by uploadFromPod over SSH.
//   node bench/s3-direct.bench.ts        (BENCH_SIZE_MB=200 by default; needs root, like the tests)
// Prints figures only. Loopback: this measures curl, the simulator's relay and SeaweedFS, not a network.
import { readFileSync } from 'node:fs';
import type { S3Client } from '@aws-sdk/client-s3';
import { uploadFromPod } from '../src/results/s3-direct.ts';
import { parsePartHashes, partHashCommand } from '../src/results/s3-direct-pod.ts';
import { streamFileToS3 } from '../src/results/s3-stream.ts';
import { SftpSession } from '../src/ssh/index.ts';
import { connectPinned } from '../src/ssh/connect.ts';
import { execChecked } from '../src/ssh/exec.ts';
import { computeManifest } from '../src/ssh/manifest.ts';
import { ACCOUNT_KEY, cleanUp, createPod, makeKeys, removeKeys, sshPort } from '../test/pod/helpers.ts';
import { eventually } from '../test/support/eventually.ts';
import { startSimulator } from '../test/runpod-sim/server.ts';
import { startObjectStore } from '../test/s3/seaweedfs.ts';
import { RssSampler } from './support.ts';

const sizeMb = Number(process.env.BENCH_SIZE_MB ?? 200);
/** uploadFromPod's default part size. */
const PART_MIB = 64;

/**
 * Counts the commands through the controller's client: CreateMultipartUpload and CompleteMultipartUpload
 * are requests it sends; PutObject and UploadPart are only signed here (presigned), and the pod sends each once.
 */
function countRequests(client: S3Client): Map<string, number> {
  const counts = new Map<string, number>();
  client.middlewareStack.add((next, context) => (args) => {
    counts.set(context.commandName ?? '?', (counts.get(context.commandName ?? '?') ?? 0) + 1);
    return next(args);
  }, { step: 'initialize', name: 'benchCount' });
  return counts;
}

const store = await startObjectStore();
await store.createBucket('bench');
const port = Number(new URL(store.endpoint).port);
const sim = await startSimulator({
  apiKeys: [ACCOUNT_KEY],
  config: {
    gpuTypes: [{ id: 'NVIDIA A40', displayName: 'A40', memoryInGb: 48, pricePerHour: 0.4, stock: { 'EU-RO-1': 8 } }],
    rateLimits: { enabled: false },
    network: { forward: [{ podPort: port, hostPort: port }] },
  },
});
const keys = await makeKeys();
const s3 = store.client();
try {
  const id = await createPod(sim, { name: 'bench-s3-direct', shell: 'dash', keys });
  const sshdPort = await sshPort(sim, id);
  const conn = await eventually('sshd', () => connectPinned({
    host: '127.0.0.1', port: sshdPort, username: 'root', privateKey: readFileSync(keys.clientKeyPath, 'utf8'), hostPublicKey: keys.hostPublic, readyTimeoutMs: 10_000,
  }).catch(() => undefined), 60_000, 300);
  try {
    const counts = countRequests(s3);
    const run = async (what: string, dir: string, script: string, prefix: string): Promise<void> => {
      await execChecked(conn, `mkdir -p ${dir} && cd ${dir} && ${script}`, 'the payload', { timeoutMs: 600_000 });
      const { files } = await computeManifest(conn, dir, { timeoutMs: 600_000 });
      counts.clear();
      const rss = new RssSampler();
      const started = performance.now();
      const outcome = await uploadFromPod(conn, dir, files, { client: s3, bucket: 'bench', keyPrefix: prefix }, { expiresInSeconds: 900 });
      const seconds = (performance.now() - started) / 1000;
      rss.stop();
      if (outcome.kind !== 'uploaded') throw new Error(`${what}: ${outcome.message}`);
      const mib = outcome.bytes / 1048576;
      const controller = [...counts].map(([name, n]) => `${name} ${n}`).join(', ') || 'none';
      console.log(`${what.padEnd(44)} ${seconds.toFixed(2).padStart(7)} s  ${(mib / seconds).toFixed(1).padStart(7)} MiB/s  controller RSS ${(rss.baseline / 1048576).toFixed(0)} -> peak ${(rss.hwm() / 1048576).toFixed(0)} MiB  commands (presigned or sent): ${controller}`);
    };
    // The store's first write allocates its volumes (seconds): not the path's cost.
    await run('warm-up (one small file)', '/root/warm', 'printf x > x', 'warm/');
    const hashStarted = performance.now();
    await execChecked(conn, `mkdir -p /root/hash && head -c ${sizeMb * 1048576} /dev/urandom > /root/hash/payload.bin`, 'the payload', { timeoutMs: 600_000 });
    const madeIn = (performance.now() - hashStarted) / 1000;
    const parted = [{ path: 'payload.bin', size: sizeMb * 1048576, partMiB: PART_MIB }];
    const hashing = performance.now();
    parsePartHashes((await execChecked(conn, partHashCommand('/root/hash', parted), 'the part hashes', { timeoutMs: 600_000 })).stdout.toString(), parted);
    const hashSeconds = (performance.now() - hashing) / 1000;
    console.log(`${'alone: part + whole hashes on the pod'.padEnd(44)} ${hashSeconds.toFixed(2).padStart(7)} s  ${(sizeMb / hashSeconds).toFixed(1).padStart(7)} MiB/s  (writing the payload: ${madeIn.toFixed(2)} s)`);
    await execChecked(conn, 'rm -rf /root/hash', 'cleaning up', { timeoutMs: 60_000 });
    await run(`one ${sizeMb} MiB file, ${PART_MIB} MiB parts`, '/root/big', `head -c ${sizeMb * 1048576} /dev/urandom > payload.bin`, 'big/');
    // The same file through the controller (the fallback when the pod cannot reach the store): SFTP in, multipart out.
    {
      const { files } = await computeManifest(conn, '/root/big', { timeoutMs: 600_000 });
      const file = files[0]!;
      counts.clear();
      const rss = new RssSampler();
      const started = performance.now();
      const sftp = await SftpSession.open(conn);
      try {
        await streamFileToS3(sftp, '/root/big/payload.bin', file, { client: s3, bucket: 'bench', keyPrefix: 'streamed/' }, 'streamed/payload.bin');
      } finally {
        sftp.end();
      }
      const seconds = (performance.now() - started) / 1000;
      rss.stop();
      const controller = [...counts].map(([name, n]) => `${name} ${n}`).join(', ') || 'none';
      console.log(`${`the same file streamed through the controller`.padEnd(44)} ${seconds.toFixed(2).padStart(7)} s  ${(file.size / 1048576 / seconds).toFixed(1).padStart(7)} MiB/s  controller RSS ${(rss.baseline / 1048576).toFixed(0)} -> peak ${(rss.hwm() / 1048576).toFixed(0)} MiB  requests: ${controller}`);
    }
    await run('100 files of 64 KiB (single PUTs)', '/root/small', 'i=0; while [ $i -lt 100 ]; do head -c 65536 /dev/urandom > f$i; i=$((i+1)); done', 'small/');
  } finally {
    conn.close();
  }
  await cleanUp(sim);
} finally {
  s3.destroy();
  await sim.stop();
  // The store's process is unref'd (the test runner keeps a test's loop alive): keep this one alive until it has exited.
  const alive = setInterval(() => undefined, 1000);
  await store.stop();
  clearInterval(alive);
  removeKeys(keys);
}
