// A real S3-compatible object store for the tests: SeaweedFS (`weed server -s3`: master, volume
// server, filer and S3 gateway in one process) on loopback, its data in a temp dir, one S3 identity
// from a `-s3.config` file. Built from the Go module proxy by build-seaweedfs.sh.
//
// Ports: every SeaweedFS server also listens on a gRPC port, by default its HTTP port + 10000, so a
// random free port above 55535 makes it panic at start. Here each gRPC port is set explicitly to its
// HTTP port + 10000, with the HTTP ports drawn from 20000-22699: all eight stay below the kernel's
// ephemeral range (32768+), where the random ports of other servers on the machine are.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { once } from 'node:events';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CreateBucketCommand, DeleteBucketCommand, S3Client } from '@aws-sdk/client-s3';

export interface ObjectStore {
  /** http://127.0.0.1:<port> of the S3 gateway (path-style addressing). */
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The store's stdout/stderr, in a temp dir of its own (kept after stop, for a failed test; the data is not). */
  logPath: string;
  /** An S3 client for this store and identity (path style), for the tests' own calls. */
  client(): S3Client;
  createBucket(name: string): Promise<void>;
  stop(): Promise<void>;
}

const REGION = 'us-east-1';
const SERVICES = ['master', 'volume', 'filer', 's3'] as const;
const GRPC_OFFSET = 10000;
const START_TIMEOUT_MS = 120_000;
const START_ATTEMPTS = 3;

/** The `weed` binary: $SEAWEEDFS_WEED, or the one build-seaweedfs.sh built (it builds it if missing). */
export function findWeed(): string {
  const fromEnv = process.env.SEAWEEDFS_WEED;
  if (fromEnv) return fromEnv;
  return execFileSync('bash', [join(import.meta.dirname, 'build-seaweedfs.sh')], {
    encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

/** Starts the store; resolves once a bucket can be created (so S3, filer and volumes are all up). */
export async function startObjectStore(): Promise<ObjectStore> {
  const weed = findWeed();
  const root = mkdtempSync(join(tmpdir(), 'seaweedfs-'));
  const logPath = join(root, 'weed.log');
  const accessKeyId = `test-${randomBytes(6).toString('hex')}`;
  const secretAccessKey = randomBytes(24).toString('hex');
  const configPath = join(root, 's3.json');
  writeFileSync(configPath, JSON.stringify({
    identities: [{ name: 'tests', credentials: [{ accessKey: accessKeyId, secretKey: secretAccessKey }], actions: ['Admin', 'Read', 'Write', 'List', 'Tagging'] }],
  }), { mode: 0o600 });

  let lastError: unknown;
  for (let attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
    const ports = await freePorts();
    removeGrpcSockets(ports);
    const data = join(root, `data-${attempt}`);
    mkdirSync(data);
    const child = startWeed(weed, weedArgs(ports, data, configPath), logPath);
    const endpoint = `http://127.0.0.1:${ports.s3}`;
    const client = (): S3Client => new S3Client({ endpoint, region: REGION, forcePathStyle: true, credentials: { accessKeyId, secretAccessKey }, maxAttempts: 1 });
    try {
      await untilBucketCanBeCreated(client(), child, logPath);
      const stop = once(child, 'exit');
      return {
        endpoint, region: REGION, accessKeyId, secretAccessKey, logPath, client,
        async createBucket(name: string): Promise<void> {
          const s3 = client();
          try {
            await s3.send(new CreateBucketCommand({ Bucket: name }));
          } finally {
            s3.destroy();
          }
        },
        async stop(): Promise<void> {
          await terminate(child, stop);
          // Its log too: a store that started and stopped leaves nothing in the temp dir.
          rmSync(root, { recursive: true, force: true });
          removeGrpcSockets(ports);
        },
      };
    } catch (error) {
      lastError = error;
      await terminate(child, once(child, 'exit'));
      rmSync(data, { recursive: true, force: true });
      removeGrpcSockets(ports);
    }
  }
  throw new Error(`SeaweedFS did not start (${START_ATTEMPTS} attempts; log ${logPath}): ${String(lastError)}`);
}

type Ports = Record<(typeof SERVICES)[number], number>;

function weedArgs(ports: Ports, data: string, configPath: string): string[] {
  return [
    // glog files (weed.*.log.INFO...) go to the temp dir removed with it, not to /tmp.
    `-logdir=${data}`,
    'server', '-s3', `-dir=${data}`, '-ip=127.0.0.1', '-ip.bind=127.0.0.1',
    ...SERVICES.flatMap((service) => [`-${service}.port=${ports[service]}`, `-${service}.port.grpc=${ports[service] + GRPC_OFFSET}`]),
    // No extra listeners: the S3 gateway's Iceberg and Lance catalogs are off, sockets live in the temp dir.
    '-s3.port.iceberg=0', '-s3.port.lance=0',
    `-filer.localSocket=${join(data, 'filer.sock')}`, `-s3.localSocket=${join(data, 's3.sock')}`,
    `-s3.config=${configPath}`,
    // Offline machines: no usage report. Volume slots from free disk (each bucket is a collection with
    // volumes of its own), 1 GiB per volume rather than 30 GB.
    '-master.telemetry=false', '-volume.max=0', '-master.volumeSizeLimitMB=1024',
  ];
}

/** Four HTTP ports in 20000-22699 whose gRPC ports (+10000) are free too. */
async function freePorts(): Promise<Ports> {
  for (;;) {
    const base = randomInt(20000, 22700 - SERVICES.length);
    const candidates = SERVICES.map((_, index) => base + index);
    const all = [...candidates, ...candidates.map((port) => port + GRPC_OFFSET)];
    const free = await Promise.all(all.map(isFree));
    if (free.every(Boolean)) return Object.fromEntries(SERVICES.map((service, index) => [service, base + index])) as Ports;
  }
}

/**
 * `weed server` also serves each gRPC port on /tmp/seaweedfs-<service>-grpc-<port>.sock (a fixed path,
 * no flag), and leaves the master's behind. Removed after stop, and before a start on ports that were
 * just found free (so any such socket is a dead store's).
 */
function removeGrpcSockets(ports: Ports): void {
  for (const service of SERVICES) rmSync(`/tmp/seaweedfs-${service}-grpc-${ports[service] + GRPC_OFFSET}.sock`, { force: true });
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function startWeed(weed: string, args: string[], logPath: string): ChildProcess {
  const log = openSync(logPath, 'a');
  // The kernel kills the store when the test process dies, however it dies; setpriv execs weed.
  const child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', weed, ...args], { stdio: ['ignore', log, log] });
  closeSync(log);
  // A spawn failure (no setpriv) shows as the exit that untilBucketCanBeCreated reports.
  child.on('error', () => undefined);
  child.unref();
  return child;
}

async function untilBucketCanBeCreated(s3: S3Client, child: ChildProcess, logPath: string): Promise<void> {
  const probe = `ready-probe-${randomBytes(4).toString('hex')}`;
  const deadline = Date.now() + START_TIMEOUT_MS;
  let lastError: unknown;
  try {
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`weed exited (${child.exitCode ?? child.signalCode}); see ${logPath}`);
      try {
        await s3.send(new CreateBucketCommand({ Bucket: probe }));
        await s3.send(new DeleteBucketCommand({ Bucket: probe }));
        return;
      } catch (error) {
        lastError = error;
      }
      await sleep(250);
    }
    throw new Error(`no bucket could be created within ${START_TIMEOUT_MS / 1000}s: ${String(lastError)}`);
  } finally {
    s3.destroy();
  }
}

async function terminate(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timedOut = await Promise.race([exited.then(() => false), sleep(15_000).then(() => true)]);
  if (timedOut) {
    child.kill('SIGKILL');
    await exited;
  }
}
