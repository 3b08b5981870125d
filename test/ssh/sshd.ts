// A real OpenSSH sshd on 127.0.0.1 for tests: its own host key, its own authorized_keys, its own
// config, logging to stderr (kept for assertions). Needs root (sshd's privilege separation and
// login as root), like the simulated pods.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { ConnectOptions } from '../../src/ssh/connect.ts';
import { generateKeyPair, type SshKeyPair } from '../../src/ssh/keys.ts';

export const SSHD = process.env.SSHD_PATH ?? '/usr/sbin/sshd';

export interface StartSshdOptions {
  hostKey?: SshKeyPair;
  /** authorized_keys lines; default: the generated client key's public key. */
  authorizedKeys?: string[];
  /** sshd LogLevel; default VERBOSE (logs connections, accepted and refused keys). */
  logLevel?: string;
}

export interface TestSshd {
  host: string;
  port: number;
  username: string;
  hostKey: SshKeyPair;
  clientKey: SshKeyPair;
  /** Everything sshd wrote to stderr so far. */
  log(): string;
  /** Options for connectPinned that should succeed against this sshd. */
  connectOptions(overrides?: Partial<ConnectOptions>): ConnectOptions;
  stop(): Promise<void>;
}

export async function startSshd(options: StartSshdOptions = {}): Promise<TestSshd> {
  if (process.getuid?.() !== 0) throw new Error('the sshd test helper needs root (sshd privilege separation, root login)');
  const hostKey = options.hostKey ?? generateKeyPair('test-sshd-host');
  const clientKey = generateKeyPair('test-sshd-client');
  // StrictModes checks every directory above authorized_keys: /tmp (1777) fails it, /run (0755) passes.
  await mkdir('/run/sshd', { recursive: true, mode: 0o755 }); // sshd's privilege separation directory
  const dir = await mkdtemp('/run/rpo-sshd-test-');
  try {
    await writeFile(join(dir, 'host_key'), hostKey.privateKey, { mode: 0o600 });
    const authorized = options.authorizedKeys ?? [clientKey.publicKey];
    await writeFile(join(dir, 'authorized_keys'), authorized.map((line) => `${line}\n`).join(''), { mode: 0o600 });
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      await writeFile(join(dir, 'sshd_config'), sshdConfig(dir, port, options.logLevel ?? 'VERBOSE'), { mode: 0o600 });
      const started = await spawnSshd(join(dir, 'sshd_config'), port);
      if ('child' in started) return handle(started.child, started.log, dir, port, hostKey, clientKey);
      // Another process took the port between our probe and sshd's bind: try another one.
      if (attempt >= 5) throw new Error(`sshd did not start: ${started.log()}`);
    }
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

function sshdConfig(dir: string, port: number, logLevel: string): string {
  return [
    `Port ${port}`,
    'ListenAddress 127.0.0.1',
    `HostKey ${join(dir, 'host_key')}`,
    'PidFile none',
    `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
    'PermitRootLogin prohibit-password',
    'PubkeyAuthentication yes',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'UsePAM no',
    'StrictModes yes',
    'Subsystem sftp internal-sftp',
    `LogLevel ${logLevel}`,
    '',
  ].join('\n');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function spawnSshd(config: string, port: number): Promise<{ child: ChildProcess; log: () => string } | { log: () => string }> {
  return new Promise((resolve) => {
    const child = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    let text = '';
    const log = (): string => text;
    const ready = `Server listening on 127.0.0.1 port ${port}.`;
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      text += chunk;
      if (text.includes(ready)) resolve({ child, log });
    });
    child.once('error', (err) => {
      text += `\nspawn failed: ${err.message}`;
      resolve({ log });
    });
    child.once('exit', () => resolve({ log }));
  });
}

function handle(child: ChildProcess, log: () => string, dir: string, port: number, hostKey: SshKeyPair, clientKey: SshKeyPair): TestSshd {
  // If the test process dies first, sshd must not outlive it.
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  let stopped: Promise<void> | undefined;
  return {
    host: '127.0.0.1',
    port,
    username: 'root',
    hostKey,
    clientKey,
    log,
    connectOptions: (overrides = {}) => ({
      host: '127.0.0.1',
      port,
      username: 'root',
      privateKey: clientKey.privateKey,
      hostPublicKey: hostKey.publicKey,
      readyTimeoutMs: 10_000,
      ...overrides,
    }),
    stop: () => {
      stopped ??= (async () => {
        process.removeListener('exit', killOnExit);
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGTERM');
          const escalate = setTimeout(() => child.kill('SIGKILL'), 5_000);
          await exited;
          clearTimeout(escalate);
        }
        await rm(dir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}
