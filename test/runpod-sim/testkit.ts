// Shared by the simulator's own tests: raw API calls, SSH keys, an sshd-starting pod, waiting.
import ssh2 from 'ssh2';
import { generateKeyPair } from '../../src/ssh/keys.ts';
import { simPodLogs, simPods } from './client.ts';
import type { RunningSimulator } from './server.ts';
import { eventually } from '../support/eventually.ts';

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

export async function call(
  sim: RunningSimulator,
  method: string,
  path: string,
  options: { key?: string | undefined; body?: unknown; signal?: AbortSignal } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { 'User-Agent': 'runpod-sim-tests' };
  if (options.key !== undefined) headers.Authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(`http://127.0.0.1:${sim.port}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? null : (JSON.parse(text) as unknown) };
}

/** Reads a field of a JSON body without trusting its shape. */
export function field(body: unknown, ...path: (string | number)[]): unknown {
  let value = body;
  for (const part of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string | number, unknown>)[part];
  }
  return value;
}

export interface KeyPair {
  private: string;
  public: string;
}

/** The product's encoder, not ssh2's generateKeyPairSync: that one corrupts about one key in 240 (src/ssh/keys.ts). */
export function keyPair(): KeyPair {
  const pair = generateKeyPair('sim-test');
  return { private: pair.privateKey, public: pair.publicKey };
}

/**
 * `args` that run `script` with sh: Runpod adds no shell, so the args name one (`sh -c '<script>'`,
 * single-quoted so that Runpod's word splitting hands sh the script as one word).
 */
export function shArgs(script: string): string {
  return `sh -c '${script.replace(/'/g, `'\\''`)}'`;
}

/** `args` that start a real sshd with the host key and authorized key given in env. */
export const SSHD_ARGS = shArgs([
  'set -e',
  'mkdir -p /root/.ssh',
  'printf "%s\\n" "$PUBLIC_KEY" > /root/.ssh/authorized_keys',
  'chmod 600 /root/.ssh/authorized_keys',
  'printf "%s\\n" "$TEST_HOST_KEY" > /etc/ssh/ssh_host_ed25519_key',
  'chmod 600 /etc/ssh/ssh_host_ed25519_key',
  '/usr/sbin/sshd -e -p 22 -h /etc/ssh/ssh_host_ed25519_key',
  'echo sshd-started',
  'exec sleep infinity',
].join('\n'));

export function sshdPodBody(name: string, host: KeyPair, client: KeyPair, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    image: 'runpod/base:sim',
    gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 },
    ports: ['22/tcp'],
    env: { PUBLIC_KEY: client.public, TEST_HOST_KEY: host.private },
    args: SSHD_ARGS,
    ...extra,
  };
}

/**
 * Waits until the pod's ports are assigned (the admin API, which no quota counts: polling the v2 GET
 * every 50 ms would spend the key's 60 calls a minute the test itself needs), then returns the port
 * GET /v2/pods/{id} reports as ssh.direct.
 */
export async function waitForSsh(sim: RunningSimulator, key: string, podId: string): Promise<number> {
  try {
    await eventually(`ssh.direct of ${podId}`, async () => ((await simPods(sim.adminUrl)).find((pod) => pod.id === podId)?.ready ? true : undefined));
  } catch (error) {
    // A pod that never came up says why in its own log: the failure carries it (seen once in a full suite, never alone).
    const pod = (await simPods(sim.adminUrl)).find((p) => p.id === podId);
    const log = (await simPodLogs(sim.adminUrl, podId)).split('\n').slice(-20).join('\n');
    throw new Error(`${(error as Error).message}; the pod is ${pod?.status ?? 'not listed'}, its log ends:\n${log}`, { cause: error });
  }
  const response = await call(sim, 'GET', `/v2/pods/${podId}`, { key });
  const port = field(response.body, 'ssh', 'direct', 'port');
  if (typeof port !== 'number') throw new Error(`pod ${podId} is ready but GET reports no ssh.direct port`);
  return port;
}

function hostKeyBlob(publicKey: string): Buffer {
  return Buffer.from(publicKey.split(' ')[1] ?? '', 'base64');
}

/** A connection refused or reset before the handshake: nothing listens behind the port yet. */
export function isNotListening(error: unknown): boolean {
  const { level, code, message } = error as { level?: string; code?: string; message?: string };
  return level === 'client-socket' && (code === 'ECONNRESET' || code === 'ECONNREFUSED')
    || /connection lost before handshake/i.test(message ?? '');
}

/**
 * Connects with the host key pinned (anything else is refused) and returns the open client. The
 * port is published before sshd listens (as on Runpod), so a refused or reset connection is tried
 * again for a while; any other failure is final.
 */
export async function sshConnect(port: number, host: KeyPair, client: KeyPair, timeoutMs = 20000): Promise<ssh2.Client> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await sshConnectOnce(port, host, client);
    } catch (error) {
      if (!isNotListening(error) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

export async function sshConnectOnce(port: number, host: KeyPair, client: KeyPair): Promise<ssh2.Client> {
  const expected = hostKeyBlob(host.public);
  const conn = new ssh2.Client();
  await new Promise<void>((resolve, reject) => {
    conn.once('ready', () => resolve());
    conn.once('error', reject);
    conn.connect({
      host: '127.0.0.1',
      port,
      username: 'root',
      privateKey: client.private,
      readyTimeout: 15000,
      hostVerifier: (key: Buffer) => key.equals(expected),
    });
  });
  return conn;
}

export async function sshExec(conn: ssh2.Client, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    conn.exec(command, (error, stream) => {
      if (error) {
        reject(error);
        return;
      }
      let out = '';
      stream.on('data', (chunk: Buffer) => {
        out += chunk.toString();
      });
      stream.stderr.on('data', (chunk: Buffer) => {
        out += chunk.toString();
      });
      stream.on('close', () => resolve(out));
    });
  });
}

export function envOf(environ: string): Record<string, string> {
  return Object.fromEntries(
    environ
      .split(/[\0\n]/)
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}
