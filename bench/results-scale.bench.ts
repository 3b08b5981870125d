// Result sets at scale, on this machine: BENCH_FILES small files (10 000 of 4 KiB by default) and one
// large file (BENCH_LARGE_MB, 512 MiB by default), each through every path a retrieval takes: the
// pod's manifest, the controller's disk (SFTP, verified), S3 direct (the pod's presigned PUTs, a few
// upload commands at once) and S3 streamed through the controller, each followed by the read-back
// (HeadObject per file, a bounded few at once). A simulated pod (needs root, like the tests), a real
// SeaweedFS.        node bench/results-scale.bench.ts
// Prints figures only. Loopback: this measures process starts, hashing, SSH and the store, not a network.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import type { SFTPWrapper } from 'ssh2';
import { partSizeFor } from '../src/results/part-size.ts';
import { uploadFromPod } from '../src/results/s3-direct.ts';
import { streamFileToS3 } from '../src/results/s3-stream.ts';
import { resultKey, type S3Target } from '../src/results/s3-target.ts';
import { verifyObjects } from '../src/results/s3-verify.ts';
import { connectPinned, type SshConnection } from '../src/ssh/connect.ts';
import { execChecked } from '../src/ssh/exec.ts';
import { computeManifest, type ManifestFile } from '../src/ssh/manifest.ts';
import { retrieveDirectory } from '../src/ssh/retrieve.ts';
import { SftpSession } from '../src/ssh/sftp.ts';
import { ACCOUNT_KEY, cleanUp, createPod, makeKeys, removeKeys, sshPort } from '../test/pod/helpers.ts';
import { eventually } from '../test/support/eventually.ts';
import { startSimulator } from '../test/runpod-sim/server.ts';
import { startCountingProxy } from '../test/s3/counting-proxy.ts';
import { startObjectStore } from '../test/s3/seaweedfs.ts';
import { RssSampler } from './support.ts';

const fileCount = Number(process.env.BENCH_FILES ?? 10_000);
const largeMb = Number(process.env.BENCH_LARGE_MB ?? 512);
const MIB = 1024 * 1024;

/** Counts the commands through the controller's client: sent, or only presigned (the pod sends those). */
function countRequests(client: S3Client): Map<string, number> {
  const counts = new Map<string, number>();
  client.middlewareStack.add((next, context) => (args) => {
    counts.set(context.commandName ?? '?', (counts.get(context.commandName ?? '?') ?? 0) + 1);
    return next(args);
  }, { step: 'initialize', name: 'benchCount' });
  return counts;
}

const line = (what: string, seconds: number, bytes: number, files: number, extra = ''): void => {
  console.log(`${what.padEnd(40)} ${seconds.toFixed(2).padStart(8)} s  ${(files / seconds).toFixed(0).padStart(7)} files/s  ${(bytes / MIB / seconds).toFixed(1).padStart(7)} MiB/s${extra ? `  ${extra}` : ''}`);
};

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; seconds: number; rss: RssSampler }> {
  const rss = new RssSampler();
  const started = performance.now();
  const value = await work();
  const seconds = (performance.now() - started) / 1000;
  rss.stop();
  return { value, seconds, rss };
}

/** Streams every file through the controller, two at a time (as the retrieval's streamed path does). */
async function streamAll(conn: SshConnection, dir: string, files: readonly ManifestFile[], target: S3Target): Promise<void> {
  const sftp = await SftpSession.open(conn);
  try {
    let next = 0;
    await Promise.all([0, 1].map(async () => {
      while (next < files.length) {
        const file = files[next++] as ManifestFile;
        await streamFileToS3(sftp, posix.join(dir, file.path), file, target, resultKey(target, file.path));
      }
    }));
  } finally {
    sftp.end();
  }
}

/** The bar (issue 21): every file by ssh2's fastGet, no hashing, no verification, as many at once as a retrieval fetches (4). */
async function sftpStreamAll(conn: SshConnection, dir: string, files: readonly ManifestFile[], localDir: string): Promise<void> {
  mkdirSync(localDir, { recursive: true });
  const sftp = await new Promise<SFTPWrapper>((resolve, reject) => conn.client.sftp((error, opened) => (error ? reject(error) : resolve(opened))));
  try {
    let next = 0;
    await Promise.all([0, 1, 2, 3].map(async () => {
      while (next < files.length) {
        const file = files[next++] as ManifestFile;
        await new Promise<void>((resolve, reject) => sftp.fastGet(posix.join(dir, file.path), join(localDir, file.path), (error) => (error ? reject(error) : resolve())));
      }
    }));
  } finally {
    sftp.end();
  }
}

const GIB = 1024 * MIB;
console.log(`part sizes chosen, streamed path (8 MiB preferred) / direct path (64 MiB): ${[['100 GiB', 100 * GIB], ['1 TiB', 1024 * GIB], ['5 TiB', 5 * 1024 * GIB]]
  .map(([label, size]) => `${label} → ${partSizeFor(Number(size)) / MIB} / ${partSizeFor(Number(size), 64 * MIB) / MIB} MiB`).join(', ')}`);

const store = await startObjectStore();
await store.createBucket('bench');
const relay = await startCountingProxy(store.endpoint, 20);
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
const local = mkdtempSync(join(tmpdir(), 'rpo-bench-scale-'));
try {
  // No job ever starts on this pod: its boot grace must outlast the bench.
  const id = await createPod(sim, { name: 'bench-results-scale', shell: 'dash', keys, input: { bootGraceSeconds: 7200, deadline: Math.floor(Date.now() / 1000) + 7200 } });
  const sshdPort = await sshPort(sim, id);
  const conn = await eventually('sshd', () => connectPinned({
    host: '127.0.0.1', port: sshdPort, username: 'root', privateKey: readFileSync(keys.clientKeyPath, 'utf8'), hostPublicKey: keys.hostPublic, readyTimeoutMs: 10_000,
  }).catch(() => undefined), 60_000, 300);
  const counts = countRequests(s3);
  try {
    // The store's first write allocates its volumes (seconds): not a path's cost.
    await execChecked(conn, 'mkdir -p /root/warm && printf x > /root/warm/x', 'warm-up', { timeoutMs: 60_000 });
    await uploadFromPod(conn, '/root/warm', (await computeManifest(conn, '/root/warm', { timeoutMs: 60_000 })).files, { client: s3, bucket: 'bench', keyPrefix: 'warm/' }, { expiresInSeconds: 900 });

    const payloads = [
      { name: `${fileCount} files of 4 KiB`, dir: '/root/many', script: `i=0; while [ $i -lt ${fileCount} ]; do head -c 4096 /dev/urandom > f$i; i=$((i+1)); done` },
      { name: `one file of ${largeMb} MiB`, dir: '/root/large', script: `head -c ${largeMb * MIB} /dev/urandom > payload.bin` },
    ];
    for (const payload of payloads) {
      console.log(`\n== ${payload.name}`);
      await execChecked(conn, `mkdir -p ${payload.dir} && cd ${payload.dir} && ${payload.script}`, 'the payload', { timeoutMs: 1_800_000 });
      const manifest = await timed(() => computeManifest(conn, payload.dir, { timeoutMs: 1_800_000 }));
      const { files } = manifest.value;
      const bytes = files.reduce((sum, file) => sum + file.size, 0);
      line('manifest on the pod (sha256sum)', manifest.seconds, bytes, files.length);

      const bare = await timed(() => sftpStreamAll(conn, payload.dir, files, join(local, 'bare', payload.dir)));
      line('SFTP stream alone (ssh2 fastGet)', bare.seconds, bytes, files.length);
      rmSync(join(local, 'bare'), { recursive: true, force: true });
      const dir = await timed(() => retrieveDirectory(conn, payload.dir, join(local, payload.dir), manifest.value));
      if (!dir.value.ok) throw new Error(`the disk store did not verify: ${JSON.stringify(dir.value).slice(0, 300)}`);
      line('controller disk (SFTP in, verified)', dir.seconds, bytes, files.length, `${(bare.seconds / dir.seconds).toFixed(2)}x the SFTP stream; RSS peak ${(dir.rss.hwm() / MIB).toFixed(0)} MiB`);
      rmSync(join(local, payload.dir), { recursive: true, force: true });

      for (const [path, send] of [
        ['S3 direct (presigned PUTs by the pod)', (target: S3Target) => uploadFromPod(conn, payload.dir, files, target, { expiresInSeconds: 3600 }).then((outcome) => {
          if (outcome.kind !== 'uploaded') throw new Error(outcome.message);
        })],
        ['S3 streamed through the controller', (target: S3Target) => streamAll(conn, payload.dir, files, target)],
      ] as const) {
        const target: S3Target = { client: s3, bucket: 'bench', keyPrefix: `${payload.dir.slice(6)}-${path.includes('direct') ? 'direct' : 'streamed'}/` };
        counts.clear();
        const sent = await timed(() => send(target));
        const requests = [...counts].map(([name, n]) => `${name.replace('Command', '')} ${n}`).join(', ') || 'none';
        line(path, sent.seconds, bytes, files.length, `RSS peak ${(sent.rss.hwm() / MIB).toFixed(0)} MiB; controller commands (presigned or sent): ${requests}`);
        counts.clear();
        const verified = await timed(() => verifyObjects(target, files));
        const problems = verified.value.missing.length + verified.value.different.length + verified.value.extra.length;
        if (problems > 0) throw new Error(`the read-back found ${problems} problems`);
        line('  read-back (HeadObject per file + list)', verified.seconds, bytes, files.length, [...counts].map(([name, n]) => `${name.replace('Command', '')} ${n}`).join(', '));
        if (files.length > 1) {
          // Loopback has no round trip: the same read-back through a relay that holds each answer 20 ms, as a store across a network.
          const far = new S3Client({ endpoint: relay.endpoint, region: store.region, forcePathStyle: true, credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey } });
          try {
            relay.reset();
            const slow = await timed(() => verifyObjects({ ...target, client: far }, files));
            line('  read-back, 20 ms added per answer', slow.seconds, bytes, files.length, `HEADs in flight at once: ${relay.maxInFlight('HEAD')}`);
          } finally {
            far.destroy();
          }
        }
      }
      await execChecked(conn, `rm -rf ${payload.dir}`, 'cleaning up', { timeoutMs: 300_000 });
    }
  } finally {
    conn.close();
  }
  await cleanUp(sim);
} finally {
  rmSync(local, { recursive: true, force: true });
  s3.destroy();
  await relay.stop();
  await sim.stop();
  // The store's process is unref'd (the test runner keeps a test's loop alive): keep this one alive until it has exited.
  const alive = setInterval(() => undefined, 1000);
  await store.stop();
  clearInterval(alive);
  removeKeys(keys);
}
