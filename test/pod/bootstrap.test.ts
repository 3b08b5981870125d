// The bootstrap's requirement check, run for real here (no pod): the rendered args, split into words
// as Runpod does and exec'd without a shell, under dash and bash --posix, with a PATH of symlinks that
// lacks some tools. Inside a private mount namespace with
// tmpfs over /root and /etc/ssh, so that no mistake could touch this machine's SSH setup.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IMAGE_REQUIREMENTS } from '../../src/pod/protocol.ts';
import { renderPodArgs, renderPodScriptsEnv } from '../../src/pod/render.ts';
import { splitArgs } from '../runpod-sim/argv.ts';
import { SHELLS, run } from './helpers.ts';
import { freePort } from '../envtest/harness.ts';
import { eventually } from '../support/eventually.ts';

const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const FAKE_POD_KEY = 'rpo-fake-pod-key-must-never-appear-0123456789';
const roots: string[] = [];

after(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** A directory of symlinks to every required tool (and the shells) except `lacking`. */
async function pathWithout(root: string, lacking: string[]): Promise<string> {
  const bin = join(root, 'bin');
  mkdirSync(bin);
  for (const tool of [...IMAGE_REQUIREMENTS, 'curl', 'dash', 'bash', 'env']) {
    if (lacking.includes(tool)) continue;
    const found = await run(['sh', '-c', `command -v ${tool}`]);
    const target = found.stdout.trim();
    if (found.code !== 0 || target === '') throw new Error(`this machine lacks ${tool}`);
    symlinkSync(target, join(bin, tool));
  }
  return bin;
}

interface Booted {
  pod: string;
  output: () => string;
  kill: () => void;
}

/** Runs the rendered args as Runpod would (split into words, no shell) with a PATH lacking `lacking`. */
async function boot(shell: (typeof SHELLS)[number], lacking: string[]): Promise<Booted> {
  const root = mkdtempSync(join(tmpdir(), 'rpo-boot-'));
  roots.push(root);
  const runDir = join(root, 'run');
  const stateDir = join(root, 'state');
  const bin = await pathWithout(root, lacking);
  const port = await freePort();
  const env = {
    PATH: bin,
    HOME: '/root',
    RUNPOD_POD_ID: 'testpod123',
    RUNPOD_API_KEY: FAKE_POD_KEY,
    RUNPOD_OPERATOR_API_URL: `http://127.0.0.1:${port}/v2`,
    RUNPOD_OPERATOR_RUN_DIR: runDir,
    RUNPOD_OPERATOR_STATE_DIR: stateDir,
    RUNPOD_OPERATOR_WATCHDOG_PERIOD: '1',
    RUNPOD_OPERATOR_DEADLINE: String(Math.floor(Date.now() / 1000) + 3600),
    RUNPOD_OPERATOR_HOST_KEY: 'not used: the check fails first',
    RUNPOD_OPERATOR_AUTHORIZED_KEY: 'ssh-ed25519 AAAA not-used',
    ...renderPodScriptsEnv(),
  };
  const isolate = 'mount -t tmpfs tmpfs /root && mount -t tmpfs tmpfs /etc/ssh && exec /usr/bin/env -i "$@"';
  const child = spawn(
    'unshare',
    ['--mount', '--propagation', 'private', '/bin/sh', '-c', isolate, 'isolate',
      ...Object.entries(env).map(([name, value]) => `${name}=${value}`), ...splitArgs(renderPodArgs({ shell }))],
    { detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return {
    pod: stateDir,
    output: () => output,
    kill: () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    },
  };
}

for (const shell of SHELLS) {
  describe(`bootstrap under ${shell}`, () => {
    const noHttp = 'curl (or python3, or GNU wget): the watchdog cannot call Runpod';
    const cases = [
      { lacking: ['setsid'], reason: 'the image lacks: setsid' },
      { lacking: ['sha256sum', 'setsid', 'tar'], reason: 'the image lacks: sha256sum setsid tar' },
      // No HTTP client either (this PATH has no python3 or wget): named too, and the watchdog says it cannot call.
      { lacking: ['setsid', 'curl'], reason: `the image lacks: setsid, and ${noHttp}` },
    ];
    for (const { lacking, reason } of cases) {
      const http = !lacking.includes('curl');
      test(`reports exactly what the image lacks (${lacking.join(', ')}), then the watchdog deletes the pod at once`, async () => {
        const booted = await boot(shell, lacking);
        const { pod } = booted;
        try {
          await eventually('the bootstrap verdict', () => (existsSync(join(pod, 'bootstrap')) ? true : undefined));
          assert.equal(readFileSync(join(pod, 'bootstrap'), 'utf8'), `failed: ${reason}\n`);
          await eventually('the watchdog verdict', () => (existsSync(join(pod, 'watchdog')) ? true : undefined));
          assert.equal(readFileSync(join(pod, 'watchdog'), 'utf8'), `failed: the bootstrap failed: ${reason}\n`);
          // At once (no probe, no grace), and again while the API does not answer: never giving up.
          const log = await eventually('two delete attempts (one without an HTTP client)', () => {
            const text = readFileSync(join(pod, 'watchdog.log'), 'utf8');
            const attempts = text.split(`deleting the pod: the bootstrap failed: ${reason}`).length - 1;
            return (http ? attempts >= 2 : text.includes('cannot delete: ')) ? text : undefined;
          });
          if (http) {
            assert.match(log, /DELETE \/pods\/testpod123 failed: no answer from http:\/\/127\.0\.0\.1:\d+\/v2 \(curl exit 7\); trying the terminate action/);
            assert.match(log, /terminate failed: no answer/);
          } else {
            assert.match(log, new RegExp(`start: pod testpod123 http=none [^]*cannot delete: the image lacks ${escaped(noHttp)}`));
          }
          // The failed delete is recorded for the controller.
          const recorded = await eventually('the recorded delete failure', () => (existsSync(join(pod, 'watchdog.delete')) ? readFileSync(join(pod, 'watchdog.delete'), 'utf8') : undefined));
          assert.match(recorded, http ? /^bootstrap \d+ DELETE: no answer from .*; terminate: no answer from .*\n$/ : /^bootstrap \d+ the image lacks curl/);
          assert.match(readFileSync(join(pod, 'bootstrap.log'), 'utf8'), new RegExp(`FAILED: ${escaped(reason)}`));
          assert.match(booted.output(), new RegExp(`watchdog: deleting the pod: the bootstrap failed: ${escaped(reason)}`), 'the log also goes to stdout');
          // sshd was never started and nothing was installed.
          assert.equal(existsSync(join(pod, 'image.env')), false);
          assert.ok(!booted.output().includes(FAKE_POD_KEY) && !log.includes(FAKE_POD_KEY), 'the pod key is never logged');
        } finally {
          booted.kill();
        }
      });
    }

    test('without base64 the args\' stub records the failure, says it on stdout and tries to delete the pod', async () => {
      const booted = await boot(shell, ['base64']);
      const { pod } = booted;
      try {
        await eventually('the bootstrap verdict', () => (existsSync(join(pod, 'bootstrap')) ? true : undefined));
        assert.equal(readFileSync(join(pod, 'bootstrap'), 'utf8'), 'failed: the image lacks: base64\n');
        // curl's own complaint: the API (nothing listens there) was called.
        await eventually('the delete attempt', () => (/curl: \(7\)/.test(booted.output()) ? true : undefined));
        assert.match(booted.output(), /runpod-operator bootstrap: FAILED: the image lacks: base64; deleting the pod/);
        assert.ok(!booted.output().includes(FAKE_POD_KEY), 'the pod key is never logged');
      } finally {
        booted.kill();
      }
    });
  });
}
