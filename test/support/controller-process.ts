// The controller as a child process (`node <the image's Node flags> dist/controller.mjs FLAGS`: the bundle
// test/global-setup.ts and bench/run.ts build), as a Deployment
// runs it: for the shutdown test and the failover and idle benches. Its JSON log lines are kept; its
// endpoints' ports are read from them (it binds 127.0.0.1:0).
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { imageEntrypoint } from './image-entrypoint.ts';

const repoRoot = join(import.meta.dirname, '..', '..');

export interface LogLine { time?: string; level?: string; msg?: string; [field: string]: unknown }

export interface ControllerProcess {
  pid: number;
  lines: LogLine[];
  /** Resolves with the exit code (or the signal's name) and when it exited (Date.now()). */
  exited: Promise<{ code: number | null; signal: string | null; at: number }>;
  metricsUrl: string;
  healthUrl: string;
  /** The first log line matching, waiting for it (rejects once the process exited without one). */
  waitForLine(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  kill(signal: NodeJS.Signals): void;
}

export async function startControllerProcess(flags: Record<string, string>, env: NodeJS.ProcessEnv = {}): Promise<ControllerProcess> {
  const { nodeFlags, script } = imageEntrypoint();
  const args = [...nodeFlags, join(repoRoot, script), ...Object.entries(flags).map(([k, v]) => `--${k}=${v}`),
    '--metrics-bind-address=127.0.0.1:0', '--health-probe-bind-address=127.0.0.1:0'];
  // The image sets no NODE_OPTIONS: the test runner's own (a larger young generation) are not the deployment's.
  // It fills a compile cache at build, so a deployed controller starts from compiled code: so does this one.
  const { NODE_OPTIONS: _runner, ...inherited } = process.env;
  const compileCache = inherited.NODE_COMPILE_CACHE ?? join(repoRoot, 'node_modules', '.cache', 'node-compile');
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...inherited, NODE_COMPILE_CACHE: compileCache, ...env } });
  const killNow = (): void => { try { child.kill('SIGKILL'); } catch { /* gone */ } };
  process.once('exit', killNow);
  const lines: LogLine[] = [];
  const waiters = new Set<() => void>();
  let stderr = '';
  let buffer = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    const parts = buffer.split('\n');
    buffer = parts.pop() ?? '';
    for (const part of parts) {
      try {
        lines.push(JSON.parse(part) as LogLine);
      } catch {
        lines.push({ msg: part });
      }
    }
    for (const wake of waiters) wake();
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-4000); });
  let done = false;
  const exited = new Promise<{ code: number | null; signal: string | null; at: number }>((resolve) => {
    child.once('exit', (code, signal) => {
      done = true;
      process.off('exit', killNow);
      for (const wake of waiters) wake();
      resolve({ code, signal, at: Date.now() });
    });
  });
  const waitForLine = (match: (line: LogLine) => boolean, timeoutMs = 60_000): Promise<LogLine> => new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(new Error(`no matching log line within ${timeoutMs} ms`)), timeoutMs);
    const finish = (error?: Error, line?: LogLine): void => {
      clearTimeout(timer);
      waiters.delete(check);
      if (line) resolve(line);
      else reject(error ?? new Error('exited'));
    };
    const check = (): void => {
      const line = lines.find(match);
      if (line) finish(undefined, line);
      else if (done) finish(new Error(`the controller exited without such a log line; stderr: ${stderr}`));
    };
    waiters.add(check);
    check();
  });
  const portOf = async (component: string): Promise<string> => {
    const line = await waitForLine((l) => l.component === component && typeof l.address === 'string');
    return `http://${String(line.address)}`;
  };
  const [metricsUrl, healthUrl] = await Promise.all([portOf('metrics'), portOf('health probes')]);
  return {
    pid: child.pid ?? 0, lines, exited, metricsUrl, healthUrl, waitForLine,
    kill: (signal) => { child.kill(signal); },
  };
}
