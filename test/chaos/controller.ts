// The controller under test as a child process: started with the CLI's flags, SIGKILLed (no chance
// to clean up, as a node failure or an OOM kill), started again. Its output goes to one log file.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { openSync, closeSync } from 'node:fs';
import { join } from 'node:path';

export interface ControllerSettings {
  kubeconfig: string;
  namespace: string;
  clusterId: string;
  runpodApiUrl: string;
  podApiUrl: string;
  resultsDir: string;
  logFile: string;
  pollInterval: string;
  deadlineMargin: string;
  watchdogPeriod: string;
}

export class ControllerProcess {
  #child: ChildProcess | undefined;
  #settings: ControllerSettings;
  starts = 0;
  kills = 0;
  /** Exits nobody asked for (a crash, or a controller that cannot start): a session with any is void. */
  readonly unexpectedExits: string[] = [];

  constructor(settings: ControllerSettings) {
    this.#settings = settings;
  }

  get running(): boolean {
    return this.#child !== undefined;
  }

  start(): void {
    if (this.#child) return;
    const s = this.#settings;
    const log = openSync(s.logFile, 'a');
    const child = spawn(process.execPath, [
      join(import.meta.dirname, 'controller-process.ts'),
      '--kubeconfig', s.kubeconfig, '--namespace', s.namespace, '--cluster-id', s.clusterId,
      '--runpod-api-url', s.runpodApiUrl, '--results-dir', s.resultsDir,
      '--poll-interval', s.pollInterval, '--deadline-margin', s.deadlineMargin, '--watchdog-period', s.watchdogPeriod,
      // Leader election on, as deployed: a restarted controller waits for the dead one's lease to expire.
      '--leader-elect', 'true', '--lease-namespace', s.namespace, '--log-level', 'debug',
      // No fixed ports: other test files (and another chaos session) run controllers alongside.
      '--metrics-bind-address', '0', '--health-probe-bind-address', '0',
    ], { stdio: ['ignore', log, log], env: { ...process.env, CHAOS_POD_API_URL: s.podApiUrl } });
    closeSync(log);
    child.once('exit', (code, signal) => {
      if (this.#child !== child) return;
      this.#child = undefined;
      this.unexpectedExits.push(signal ?? `code ${String(code)}`);
    });
    this.#child = child;
    this.starts++;
  }

  /** Throws once the controller exited on its own: figures measured without a controller prove nothing. */
  assertNoUnexpectedExit(): void {
    if (this.unexpectedExits.length > 0) {
      throw new Error(`the controller exited on its own (${this.unexpectedExits.join(', ')}); see ${this.#settings.logFile}`);
    }
  }

  /** SIGKILL, and wait until the process is gone. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    this.#child = undefined;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
    this.kills++;
  }

  /** A graceful stop at the end of the session (SIGTERM: the controller finishes its work and releases its lease). */
  async stop(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    this.#child = undefined;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  }
}
