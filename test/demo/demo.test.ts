// `npm run demo` that fails or is stopped midway leaves nothing running: every process it started
// (etcd, kube-apiserver, the simulator's pods and relays) is found by a marker in its environment
// (inherited by every descendant) or its temporary directory in its command line, and none may remain.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { findAssets } from '../envtest/harness.ts';

const repo = resolve(import.meta.dirname, '..', '..');
const scratch = mkdtempSync(join(tmpdir(), 'demo-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

interface Demo { child: ChildProcess; mark: string; dir: string; output: () => string; exited: Promise<number | string> }

function startDemo(path: string): Demo {
  const mark = randomBytes(8).toString('hex');
  const dir = mkdtempSync(join(scratch, 'run-'));
  const { apiserver, etcd } = findAssets();
  const child = spawn(process.execPath, [join(repo, 'test', 'demo', 'demo.ts')], {
    cwd: repo, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PATH: path, TMPDIR: dir, RUNPOD_DEMO_TEST_MARK: mark, TEST_ASSET_KUBE_APISERVER: apiserver, TEST_ASSET_ETCD: etcd },
  });
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; });
  const exited = new Promise<number | string>((done) => child.once('exit', (code, signal) => done(code ?? signal ?? -1)));
  return { child, mark, dir, output: () => output, exited };
}

/** Pids of live processes carrying the demo's marker in their environment or its directory in their command line. */
function leftovers(demo: Demo): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      const environ = readFileSync(`/proc/${pid}/environ`, 'latin1');
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'latin1');
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      if (/\) Z /.test(stat)) continue;
      if (environ.includes(`RUNPOD_DEMO_TEST_MARK=${demo.mark}`) || cmdline.includes(demo.dir)) {
        found.push(`${pid}: ${cmdline.replaceAll('\0', ' ').slice(0, 200)}`);
      }
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

/** Leftovers may take a moment to die after the demo exits (SIGKILL through the parent-death signal). */
async function assertNothingLeft(demo: Demo): Promise<void> {
  let left = leftovers(demo);
  for (let i = 0; i < 100 && left.length > 0; i++) {
    await sleep(100);
    left = leftovers(demo);
  }
  assert.deepEqual(left, [], `processes of the demo still running:\n${left.join('\n')}\ndemo output:\n${demo.output()}`);
}

async function waitForOutput(demo: Demo, pattern: RegExp, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(demo.output())) {
    if (demo.child.exitCode !== null || Date.now() > deadline) assert.fail(`the demo never printed ${pattern}:\n${demo.output()}`);
    await sleep(100);
  }
}

/** A PATH with every command of ours except the ones left out (a directory of symlinks). */
function pathWithout(...commands: string[]): string {
  const bin = join(scratch, `bin-without-${commands.join('-')}`);
  if (existsSync(bin)) return bin;
  mkdirSync(bin);
  for (const dir of (process.env.PATH ?? '').split(':').filter(Boolean)) {
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      if (commands.includes(name) || existsSync(join(bin, name))) continue;
      try {
        accessSync(join(dir, name), constants.X_OK);
        symlinkSync(join(dir, name), join(bin, name));
      } catch {
        // Not an executable.
      }
    }
  }
  return bin;
}

test('a demo stopped by a missing command says so in a sentence and leaves nothing running', { timeout: 300_000 }, async () => {
  const demo = startDemo(pathWithout('socat'));
  const code = await demo.exited;
  assert.equal(code, 1, demo.output());
  assert.match(demo.output(), /demo: failed: the Runpod simulator needs these commands: socat/);
  assert.doesNotMatch(demo.output(), /^\s+at /m, 'no stack trace');
  // It did get as far as starting a control plane, which it must have stopped.
  assert.match(demo.output(), /starting a local kube-apiserver/);
  await assertNothingLeft(demo);
});

test('a demo interrupted (SIGINT) while its run is going stops everything it started', { timeout: 300_000 }, async () => {
  const demo = startDemo(process.env.PATH ?? '');
  await waitForOutput(demo, /quickstart\s+(Provisioning|Running)/);
  demo.child.kill('SIGINT');
  assert.equal(await demo.exited, 130, demo.output());
  assert.match(demo.output(), /demo: cleaned up/);
  await assertNothingLeft(demo);
});

test('a demo killed outright (SIGKILL) leaves no etcd, kube-apiserver or pod behind', { timeout: 300_000 }, async () => {
  const demo = startDemo(process.env.PATH ?? '');
  await waitForOutput(demo, /Runpod simulator at/);
  assert.ok(leftovers(demo).length >= 2, 'etcd and kube-apiserver are running, marked');
  demo.child.kill('SIGKILL');
  await demo.exited;
  await assertNothingLeft(demo);
});
