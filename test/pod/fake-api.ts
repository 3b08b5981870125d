// The watchdog as it ships (the minified script), run here under a pod shell against a scripted
// stand-in for Runpod's v2 API: each test says what every call answers, and reads the calls back.
// For the rules that need answers the simulator cannot give on cue (a refusal that heals, a price
// that arrives late); the rules on real pods are in pods.test.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage } from 'node:http';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { PodShell } from '../../src/pod/job.ts';
import { IMAGE_REQUIREMENTS } from '../../src/pod/protocol.ts';
import { WATCHDOG_SCRIPT } from '../../src/pod/render.ts';
import { run, shellArgv } from './helpers.ts';

export const FAKE_POD_ID = 'fakepod01';
export const FAKE_POD_KEY = 'rpo-fake-pod-key-5b2c';

export interface Answer { status: number; body?: unknown; headers?: Record<string, string> }
export interface Call { method: string; path: string; at: number; authorized: boolean }

/** The pod as GET /v2/pods/{id} shows it; `cost` null or absent where a test says so. */
export function podBody(over: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: FAKE_POD_ID, name: 'r-1', status: 'RUNNING', cost: 0.4, createdAt: new Date().toISOString(), ...over };
}

export interface FakeApi {
  /** The v2 base URL the watchdog calls. */
  url: string;
  calls: Call[];
  close(): Promise<void>;
}

/** Answers each call with `answer(call, index among calls of that method)`; a DELETE answers 204 unless it says otherwise. */
export async function startFakeApi(answer: (call: Call, nth: number) => Answer): Promise<FakeApi> {
  const calls: Call[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    const call: Call = {
      method: request.method ?? '', path: (request.url ?? '').replace(/^\/v2/, ''), at: Date.now(),
      authorized: request.headers.authorization === `Bearer ${FAKE_POD_KEY}`,
    };
    const nth = calls.filter((earlier) => earlier.method === call.method).length;
    calls.push(call);
    request.resume();
    request.on('end', () => {
      const { status, body, headers } = answer(call, nth);
      response.writeHead(status, { 'Content-Type': 'application/json', ...headers });
      response.end(body === undefined ? '' : JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v2`, calls,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

export interface RunningWatchdog {
  stateDir: string;
  /** watchdog.log so far. */
  log(): string;
  /** The verdict file, or undefined while the watchdog probes. */
  verdict(): string | undefined;
  stop(): Promise<void>;
}

const roots: string[] = [];

/** A fresh state directory (a test may put files there before the watchdog starts). */
export function stateDir(): string {
  const root = mkdtempSync(join(tmpdir(), 'rpo-watchdog-'));
  roots.push(root);
  const dir = join(root, 'state');
  mkdirSync(dir);
  return dir;
}

/** A PATH with every tool the watchdog may use but `lacking` (to pick its HTTP client). */
export async function pathLacking(lacking: readonly string[]): Promise<string> {
  const bin = join(mkdtempSync(join(tmpdir(), 'rpo-watchdog-path-')), 'bin');
  roots.push(join(bin, '..'));
  mkdirSync(bin);
  for (const tool of [...IMAGE_REQUIREMENTS, 'curl', 'python3', 'wget', 'dash', 'bash']) {
    if (lacking.includes(tool)) continue;
    // The system's python3 (a version manager's shim is a script that needs its own PATH).
    const found = (await run(['sh', '-c', `PATH=/usr/local/bin:/usr/bin:/bin command -v ${tool}`])).stdout.trim();
    if (found !== '') symlinkSync(found, join(bin, tool));
  }
  return bin;
}

export function removeWatchdogDirs(): void {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Starts the shipped watchdog with the pod's injected env and `env` (RUNPOD_OPERATOR_*) over the defaults. */
export function startWatchdog(shell: PodShell, api: FakeApi, env: Record<string, string>, dir = stateDir()): RunningWatchdog {
  const child: ChildProcess = spawn(shellArgv(shell)[0]!, [...shellArgv(shell).slice(1), '-c', WATCHDOG_SCRIPT, 'runpod-operator-watchdog'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      RUNPOD_POD_ID: FAKE_POD_ID, RUNPOD_API_KEY: FAKE_POD_KEY,
      RUNPOD_OPERATOR_API_URL: api.url, RUNPOD_OPERATOR_STATE_DIR: dir, RUNPOD_OPERATOR_WATCHDOG_PERIOD: '1',
      RUNPOD_OPERATOR_DEADLINE: String(Math.floor(Date.now() / 1000) + 3600),
      ...env,
    },
    stdio: 'ignore',
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return {
    stateDir: dir,
    log: () => read(join(dir, 'watchdog.log')) ?? '',
    verdict: () => read(join(dir, 'watchdog'))?.trim(),
    async stop() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Runs `body` with a fake API and a watchdog, both stopped afterwards whatever happens. */
export async function withWatchdog(
  shell: PodShell,
  answer: (call: Call, nth: number) => Answer,
  env: Record<string, string>,
  body: (watchdog: RunningWatchdog, api: FakeApi) => Promise<void>,
  dir?: string,
): Promise<void> {
  const api = await startFakeApi(answer);
  const watchdog = startWatchdog(shell, api, env, dir);
  try {
    await body(watchdog, api);
  } finally {
    await watchdog.stop();
    await api.close();
  }
}

/** The GETs of the pod so far. */
export const podReads = (api: FakeApi): Call[] => api.calls.filter((call) => call.method === 'GET' && call.path === `/pods/${FAKE_POD_ID}`);
export const deletes = (api: FakeApi): Call[] => api.calls.filter((call) => call.method === 'DELETE');
