// Shared by the pod-side tests: shells, keys made by ssh-keygen, running a command under a shell,
// pinned SSH with the OpenSSH client, and simulator pods created from the rendered args and env.
import { spawn } from 'node:child_process';
import { after } from 'node:test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PodShell } from '../../src/pod/job.ts';
import { DEFAULT_RUN_DIR, DEFAULT_STATE_DIR } from '../../src/pod/protocol.ts';
import { renderPodArgs, renderPodEnv, type PodEnvInput } from '../../src/pod/render.ts';
import { assertNoLeaks, simPodLogs, simPods, type SimPod } from '../runpod-sim/client.ts';
import type { RunningSimulator } from '../runpod-sim/server.ts';
import { eventually, EVENTUALLY_MS } from '../support/eventually.ts';

/** The shells every pod-side script is tested under. */
export const SHELLS: PodShell[] = ['dash', 'bash --posix'];

export function shellArgv(shell: PodShell): string[] {
  return shell.split(' ');
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end (or kills it after timeoutMs) and collects its output. */
export function run(argv: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string; stdin?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  const [file, ...args] = argv;
  if (file === undefined) throw new Error('empty argv');
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env: options.env ?? process.env, cwd: options.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30000);
    child.on('error', reject);
    child.stdin.on('error', () => undefined);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.stdin ?? '');
  });
}

/** Runs a command string under one of the pod shells, as a login shell over SSH would. */
export function runShell(shell: PodShell, command: string, options: { env?: NodeJS.ProcessEnv; cwd?: string; stdin?: string } = {}): Promise<RunResult> {
  return run([...shellArgv(shell), '-c', command], options);
}

export interface Keys {
  dir: string;
  hostPrivate: string;
  hostPublic: string;
  clientKeyPath: string;
  clientPublic: string;
}

/** A fresh ed25519 host key and client key, made by ssh-keygen as an operator would. */
export async function makeKeys(): Promise<Keys> {
  const dir = mkdtempSync(join(tmpdir(), 'rpo-pod-keys-'));
  for (const name of ['host', 'client']) {
    const made = await run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', `rpo-test-${name}`, '-f', join(dir, name)]);
    if (made.code !== 0) throw new Error(`ssh-keygen: ${made.stderr}`);
  }
  return {
    dir,
    hostPrivate: readFileSync(join(dir, 'host'), 'utf8'),
    hostPublic: readFileSync(join(dir, 'host.pub'), 'utf8').trim(),
    clientKeyPath: join(dir, 'client'),
    clientPublic: readFileSync(join(dir, 'client.pub'), 'utf8').trim(),
  };
}

export function removeKeys(keys: Keys): void {
  rmSync(keys.dir, { recursive: true, force: true });
}

const madeKeys: Keys[] = [];
after(() => {
  for (const made of madeKeys) removeKeys(made);
});

/** makeKeys, removed again when the test file ends. */
export async function keys(): Promise<Keys> {
  const made = await makeKeys();
  madeKeys.push(made);
  return made;
}

/**
 * How often a test looks at a pod over SSH while it waits: each look is an ssh process, an sshd
 * session and the state command's handful of processes on the pod (some 0.1 CPU-s), and a pod file
 * waits beside twenty others on two cores. A second is well inside every grace a test waits within.
 */
export const SSH_LOOK_MS = 1000;

/**
 * ssh with the host key pinned (only the given key for [127.0.0.1]:port is accepted). The key exchange
 * is curve25519: OpenSSH 9's default (sntrup761x25519) costs the client some 60 ms of CPU more per
 * connection (85 against 25 ms, measured here), and the pod tests make hundreds on two shared cores.
 * What they test is the pod's sshd and host key, not the key exchange (the controller's ssh2 never
 * offers sntrup either).
 */
export async function ssh(port: number, keys: Keys, command: string, options: { stdin?: string; pinnedHostKey?: string } = {}): Promise<RunResult> {
  const knownHosts = join(keys.dir, `known_hosts_${port}`);
  const [type, blob] = (options.pinnedHostKey ?? keys.hostPublic).split(' ');
  writeFileSync(knownHosts, `[127.0.0.1]:${port} ${type} ${blob}\n`);
  return run(
    [
      'ssh', '-F', '/dev/null', '-o', 'StrictHostKeyChecking=yes', '-o', `UserKnownHostsFile=${knownHosts}`, '-o', 'GlobalKnownHostsFile=/dev/null',
      '-o', 'KexAlgorithms=curve25519-sha256', '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=10', '-o', 'LogLevel=ERROR',
      '-i', keys.clientKeyPath, '-p', String(port), 'root@127.0.0.1', command,
    ],
    { stdin: options.stdin ?? '' },
  );
}

/**
 * ssh once the pod's sshd answers with the pinned key: ssh.direct comes with the port assignment, as
 * on Runpod, so the first connections may be refused or reset (ssh's own exit code 255) for a while.
 */
export async function sshWhenUp(port: number, keys: Keys, command: string, timeoutMs = EVENTUALLY_MS): Promise<RunResult> {
  return eventually(`sshd on port ${port}`, async () => {
    const result = await ssh(port, keys, command);
    return result.code === 255 ? undefined : result;
  }, timeoutMs, SSH_LOOK_MS);
}

export const ACCOUNT_KEY = 'rpo-pod-tests-account-key-0123456789';

export interface PodOptions {
  name: string;
  shell: PodShell;
  keys: Keys;
  /** Overrides of the rendered env input. */
  input?: Partial<PodEnvInput>;
  /** Extra env entries after rendering (e.g. a PATH), or replacements of rendered ones. */
  extraEnv?: Record<string, string>;
  /** The create call's image (the simulator's config may give it an entrypoint or an sshd of its own). */
  image?: string;
  /** The create call's network volume (the simulator shares one directory per volume id). */
  networkVolume?: { volumeId: string; path: string };
}

export function podEnvInput(sim: RunningSimulator, keys: Keys, input: Partial<PodEnvInput> = {}): PodEnvInput {
  return {
    clusterId: 'test-cluster',
    scope: 'cluster-wide',
    runUid: '0b7c5a52-6a0e-4a39-9f0e-3d1f1c2b9a11',
    attempt: 1,
    apiUrl: sim.baseUrl,
    deadline: Math.floor(Date.now() / 1000) + 3600,
    bootGraceSeconds: 600,
    retrieveGraceSeconds: 600,
    keepPod: false,
    hostPrivateKey: keys.hostPrivate,
    authorizedKey: keys.clientPublic,
    watchdogPeriodSeconds: 1,
    // The pod commands' defaults, so that tests need not name them; the controller uses runDirOf(uid)
    // and stateDirOf(uid).
    runDir: DEFAULT_RUN_DIR,
    stateDir: DEFAULT_STATE_DIR,
    ...input,
  };
}

/** Creates a pod from the rendered args and env with the account key; returns its id. */
export async function createPod(sim: RunningSimulator, options: PodOptions): Promise<string> {
  const env = { ...renderPodEnv(podEnvInput(sim, options.keys, options.input)), ...options.extraEnv };
  const args = renderPodArgs({ shell: options.shell });
  const response = await fetch(`${sim.baseUrl}/pods`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ACCOUNT_KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      name: options.name,
      image: options.image ?? 'test',
      gpu: { id: 'NVIDIA A40', count: 1 },
      ports: ['22/tcp'],
      args,
      env,
      ...(options.networkVolume ? { mounts: { network: [options.networkVolume] } } : {}),
    }),
  });
  const body = (await response.json()) as { id?: string };
  if (response.status !== 201 || typeof body.id !== 'string') throw new Error(`create: ${response.status} ${JSON.stringify(body)}`);
  return body.id;
}

/** The pod's mapped SSH port once the simulator reports ssh.direct. */
export async function sshPort(sim: RunningSimulator, id: string, timeoutMs = EVENTUALLY_MS): Promise<number> {
  return eventually(`ssh.direct of ${id}`, async () => {
    const response = await fetch(`${sim.baseUrl}/pods/${id}`, { headers: { Authorization: `Bearer ${ACCOUNT_KEY}` } });
    if (response.status !== 200) {
      await response.body?.cancel();
      return undefined;
    }
    const body = (await response.json()) as { ssh?: { direct?: { port?: number } | null } };
    return body.ssh?.direct?.port ?? undefined;
  }, timeoutMs, 200);
}

export async function simPod(sim: RunningSimulator, id: string): Promise<SimPod> {
  const pod = (await simPods(sim.adminUrl)).find((candidate) => candidate.id === id);
  if (!pod) throw new Error(`no pod ${id} in the simulator`);
  return pod;
}

export async function waitDeleted(sim: RunningSimulator, id: string, timeoutMs = EVENTUALLY_MS): Promise<SimPod> {
  try {
    return await eventually(`pod ${id} to be deleted`, async () => {
      const pod = await simPod(sim, id);
      return pod.deletedAt === null ? undefined : pod;
    }, timeoutMs, 200);
  } catch (error) {
    throw new Error(`${(error as Error).message} (${String((error as Error).cause)}); its logs:\n${await simPodLogs(sim.adminUrl, id)}`);
  }
}

/** Deletes every pod still alive with the account key, then runs the leak check. */
export async function cleanUp(sim: RunningSimulator): Promise<void> {
  for (const pod of await simPods(sim.adminUrl)) {
    if (pod.deletedAt !== null) continue;
    const response = await fetch(`${sim.baseUrl}/pods/${pod.id}`, { method: 'DELETE', headers: { Authorization: `Bearer ${ACCOUNT_KEY}` } });
    await response.body?.cancel();
  }
  await assertNoLeaks(sim.adminUrl, 5000);
}
