// The job commands run here for real (no pod needed): each under dash and bash --posix, in a run
// directory of their own, with real setsid sessions, signals and files.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  cancelJobCommand, jobEnvFile, markRetrievedCommand, parseAck, parseCancelOutput, parseStartOutput,
  renewRetrieveGraceCommand, setKeepCommand, startJobCommand, writeJobEnvCommand,
} from '../../src/pod/job.ts';
import { parsePodState, podStateCommand, type PodState } from '../../src/pod/state.ts';
import { SHELLS, run, runShell, shellArgv } from './helpers.ts';
import { eventually, EVENTUALLY_MS } from '../support/eventually.ts';

const HOSTILE = [
  'two words',
  "it's",
  'a "quoted" word',
  '$(touch /tmp/rpo-pwned)',
  '`touch /tmp/rpo-pwned`',
  '${HOME}',
  'line one\nline two',
  'back\\slash',
  '-n',
  '',
  ' leading and trailing ',
  '*',
  ';|&<>',
  'ünïcødé ✓',
];

const roots: string[] = [];

function runDir(): string {
  const root = mkdtempSync(join(tmpdir(), 'rpo-job-'));
  roots.push(root);
  const dir = join(root, 'run dir with space');
  mkdirSync(dir, { recursive: true });
  mkdirSync(stateOf(dir), { recursive: true });
  return dir;
}

/** The state directory of a run directory made by runDir() (on a pod: the container's disk, apart from the run directory). */
function stateOf(dir: string): string {
  return join(dirname(dir), 'state dir');
}

/**
 * Where the supervisor copies job.log in these tests (on a pod: PID 1's stdout; here that would be the
 * machine's own init's).
 */
function consoleOf(dir: string): string {
  return join(dirname(dir), 'console');
}

after(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

for (const shell of SHELLS) {
  describe(`job commands under ${shell}`, () => {
    const state = async (dir: string): Promise<PodState> => {
      const result = await runShell(shell, podStateCommand({ stateDir: stateOf(dir), logTailBytes: 4096 }));
      assert.equal(result.code, 0, result.stderr);
      return parsePodState(result.stdout);
    };
    const ended = (dir: string): Promise<PodState> =>
      eventually('the job to end', async () => {
        const current = await state(dir);
        return current.job.status === 'exited' ? current : undefined;
      });

    test('the supervisor records the pid, start, end, exit code 3 and the log, detached from the caller', async () => {
      const dir = runDir();
      assert.deepEqual((await state(dir)).job, { status: 'none', startedAt: null, endedAt: null, exitCode: null, pid: null, cancelled: false });
      // It ends when the test says so (a file in its directory): under load, a fixed sleep may end before the first look.
      const command = ['sh', '-c', 'echo "to stdout in $(pwd)"; echo to stderr >&2; while [ ! -e release ]; do sleep 0.1; done; exit 3'];
      const before = Math.floor(Date.now() / 1000);
      const started = await runShell(shell, startJobCommand({ runDir: dir, stateDir: stateOf(dir), console: consoleOf(dir), command, shell }));
      assert.equal(started.code, 0, started.stderr);
      const start = parseStartOutput(started.stdout);
      assert.equal(start.outcome, 'started');
      assert.ok(start.outcome === 'started' && start.startedAt >= before);

      const running = await state(dir);
      assert.ok(['starting', 'running'].includes(running.job.status), running.job.status);
      writeFileSync(join(dir, 'release'), '');
      const done = await ended(dir);
      assert.equal(done.job.exitCode, 3);
      assert.ok(done.job.startedAt !== null && done.job.endedAt !== null && done.job.endedAt >= done.job.startedAt);
      assert.ok(done.job.pid !== null && done.job.pid > 1);
      assert.equal(done.job.cancelled, false);
      assert.equal(done.logTail, `to stdout in ${dir}\nto stderr\n`);
      assert.equal(readFileSync(join(stateOf(dir), 'job.exit'), 'utf8'), '3\n');
      // The job had its own session: its pid is its process group and session id.
      const supervisor = Number(readFileSync(join(stateOf(dir), 'job.supervisor'), 'utf8'));
      assert.notEqual(supervisor, done.job.pid);

      const again = parseStartOutput((await runShell(shell, startJobCommand({ runDir: dir, stateDir: stateOf(dir), console: consoleOf(dir), command, shell }))).stdout);
      assert.deepEqual(again, { outcome: 'already-started' });
    });

    test('the supervisor copies job.log to the console as it grows; job.log stays the job\'s own output, byte for byte', async () => {
      const dir = runDir();
      const log = join(stateOf(dir), 'job.log');
      const script = 'echo first; while [ ! -e go ]; do sleep 1; done; printf "no newline"; echo " then stderr" >&2; ' +
        'i=0; while [ $i -lt 20000 ]; do echo "line $i"; i=$((i + 1)); done';
      await runShell(shell, startJobCommand({ runDir: dir, stateDir: stateOf(dir), console: consoleOf(dir), command: ['sh', '-c', script], shell }));
      await eventually('the first line on the console', () => readOrEmpty(consoleOf(dir)) === 'first\n');
      assert.equal((await state(dir)).job.status, 'running', 'the copy follows the job while it runs');
      writeFileSync(join(dir, 'go'), '');
      const done = await ended(dir);
      assert.equal(done.job.exitCode, 0);
      const lines = Array.from({ length: 20000 }, (_, i) => `line ${i}\n`).join('');
      assert.equal(readOrEmpty(log), `first\nno newline then stderr\n${lines}`);
      await eventually('the whole log on the console', () => readOrEmpty(consoleOf(dir)).length === readOrEmpty(log).length);
      assert.equal(readOrEmpty(consoleOf(dir)), readOrEmpty(log));
      await eventually('the copy to end and remove its chunk and marks', () => ['job.console', 'job.look', 'job.tick'].every((file) => !existsSync(join(stateOf(dir), file))));
    });

    test('the console copy of a quiet job starts one process a second, its sleep: job.log is looked at only when it changed', async () => {
      const dir = runDir();
      const start = startJobCommand({ runDir: dir, stateDir: stateOf(dir), console: consoleOf(dir), command: ['sleep', '300'], shell });
      // In a PID namespace of its own, the PIDs of the copy's `sleep 1`s one after another count what each
      // second starts (the least gap: a look between two may be missed under load, never one too many).
      const namespace = spawn('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child', ...shellArgv(shell), '-c', `${start} >/dev/null; exec sleep 300`], { stdio: 'ignore' });
      try {
        const seen = new Set<number>();
        await eventually('five of the copy\'s sleeps', () => {
          for (const pid of sleepsIn(namespace.pid ?? 0)) seen.add(pid);
          return seen.size >= 5;
        }, EVENTUALLY_MS, 100);
        const pids = [...seen].sort((a, b) => a - b);
        assert.equal(Math.min(...pids.slice(1).map((pid, i) => pid - pids[i]!)), 1, `the copy's sleeps: ${pids.join(' ')}`);
      } finally {
        namespace.kill('SIGKILL');
      }
    });

    test('a clock stepped back after a look does not stall the console copy: what the job writes next still reaches the console', async () => {
      const dir = runDir();
      const script = 'echo first; while [ ! -e go ]; do sleep 1; done; echo second; while [ ! -e done ]; do sleep 1; done';
      await runShell(shell, startJobCommand({ runDir: dir, stateDir: stateOf(dir), console: consoleOf(dir), command: ['sh', '-c', script], shell }));
      await eventually('the first line on the console', () => readOrEmpty(consoleOf(dir)) === 'first\n');
      // The last look as a clock 2 h ahead dated it: every write from now on is older than it.
      const ahead = new Date(Date.now() + 2 * 3600_000);
      utimesSync(join(stateOf(dir), 'job.look'), ahead, ahead);
      writeFileSync(join(dir, 'go'), '');
      try {
        await eventually('the second line on the console while the job runs', () => readOrEmpty(consoleOf(dir)) === 'first\nsecond\n', 20_000);
      } finally {
        writeFileSync(join(dir, 'done'), '');
      }
      assert.equal((await ended(dir)).job.exitCode, 0);
    });

    test('a console that cannot be opened changes nothing: the job runs, job.log holds only its output', async () => {
      const dir = runDir();
      const console = join(dir, 'no such directory', 'console');
      await runShell(shell, startJobCommand({ runDir: dir, stateDir: stateOf(dir), console, command: ['sh', '-c', 'echo out; echo err >&2'], shell }));
      const done = await ended(dir);
      assert.equal(done.job.exitCode, 0);
      assert.equal(readFileSync(join(stateOf(dir), 'job.log'), 'utf8'), 'out\nerr\n');
      await eventually('the copy to end', () => !existsSync(join(stateOf(dir), 'job.console')));
      assert.equal(readFileSync(join(stateOf(dir), 'job.log'), 'utf8'), 'out\nerr\n');
    });

    test('hostile arguments and env values reach the job byte for byte; nothing is evaluated', async () => {
      const dir = runDir();
      rmSync('/tmp/rpo-pwned', { force: true });
      const env: [string, string][] = HOSTILE.map((value, i) => [`HOSTILE_${i}`, value]);
      const wrote = await runShell(shell, writeJobEnvCommand({ stateDir: stateOf(dir) }), { stdin: jobEnvFile(env) });
      assert.equal(parseAck(wrote.stdout, 'runpod-operator-env'), 'ok');
      assert.equal(statSync(join(stateOf(dir), 'job.env')).mode & 0o777, 0o600);
      // The job writes its argv and its env values, NUL-separated, to files.
      const script = 'for a in "$@"; do printf "%s\\0" "$a"; done > args.out; i=0; while [ $i -lt ' + HOSTILE.length +
        ' ]; do eval "printf \'%s\\0\' \\"\\$HOSTILE_$i\\""; i=$((i + 1)); done > env.out';
      const start = await runShell(shell, startJobCommand({ runDir: dir, stateDir: stateOf(dir), console: consoleOf(dir), command: ['sh', '-c', script, 'job', ...HOSTILE], shell }));
      assert.equal(parseStartOutput(start.stdout).outcome, 'started');
      const done = await ended(dir);
      assert.equal(done.job.exitCode, 0, done.logTail);
      const expected = HOSTILE.map((value) => `${value}\0`).join('');
      assert.equal(readFileSync(join(dir, 'args.out'), 'utf8'), expected);
      assert.equal(readFileSync(join(dir, 'env.out'), 'utf8'), expected);
      assert.equal(existsSync('/tmp/rpo-pwned'), false);
    });

    test('the image env is read first and the job env wins; the supervisor keeps its own PATH', async () => {
      const dir = runDir();
      writeFileSync(join(stateOf(dir), 'image.env'), "export FROM_IMAGE='image'\nexport BOTH='image'\n");
      writeFileSync(join(stateOf(dir), 'job.env'), jobEnvFile({ BOTH: 'job', PATH: '/nonexistent' }));
      const command = ['/bin/sh', '-c', 'printf "%s %s %s" "$FROM_IMAGE" "$BOTH" "$PATH" > env.out'];
      assert.equal(parseStartOutput((await runShell(shell, startJobCommand({ runDir: dir, stateDir: stateOf(dir), console: consoleOf(dir), command, shell }))).stdout).outcome, 'started');
      const done = await ended(dir);
      assert.equal(done.job.exitCode, 0);
      assert.equal(readFileSync(join(dir, 'env.out'), 'utf8'), 'image job /nonexistent');
      assert.equal(existsSync(join(stateOf(dir), 'job.env')), false, 'the job\'s secrets leave the disk once its shell read them');
      writeFileSync(join(stateOf(dir), 'job.env'), jobEnvFile({ SECRET: 'rewritten by a controller that restarted' }));
      assert.equal(parseStartOutput((await runShell(shell, startJobCommand({ runDir: dir, stateDir: stateOf(dir), console: consoleOf(dir), command, shell }))).stdout).outcome, 'already-started');
      assert.equal(existsSync(join(stateOf(dir), 'job.env')), false, 'a second start removes a rewritten env too');
    });

    test('a command that does not exist exits 127 with its error in the log', async () => {
      const dir = runDir();
      await runShell(shell, startJobCommand({ runDir: dir, stateDir: stateOf(dir), console: consoleOf(dir), command: ['no-such-command-rpo'], shell }));
      const done = await ended(dir);
      assert.equal(done.job.exitCode, 127);
      assert.match(done.logTail, /no-such-command-rpo/);
    });

    test('cancel: SIGTERM to the job process group (its children too), exit 143 recorded', async () => {
      const dir = runDir();
      const command = ['sh', '-c', 'sleep 300 & echo child $! > child.pid; wait'];
      await runShell(shell, startJobCommand({ runDir: dir, stateDir: stateOf(dir), console: consoleOf(dir), command, shell }));
      await eventually('the job to run', async () => ((await state(dir)).job.status === 'running' && existsSync(join(dir, 'child.pid')) ? true : undefined));
      const child = Number(readFileSync(join(dir, 'child.pid'), 'utf8').split(' ')[1]);
      const cancelled = await runShell(shell, cancelJobCommand({ stateDir: stateOf(dir), graceSeconds: 10, shell }));
      assert.deepEqual(parseCancelOutput(cancelled.stdout), { outcome: 'cancelling' });
      // A second cancel is harmless: still cancelling, or already ended (the job may die at once on TERM).
      assert.ok(['cancelling', 'ended'].includes(parseCancelOutput((await runShell(shell, cancelJobCommand({ stateDir: stateOf(dir), shell }))).stdout).outcome));
      const done = await ended(dir);
      assert.equal(done.job.exitCode, 143);
      assert.equal(done.job.cancelled, true);
      await eventually('the child to go', () => (isAlive(child) ? undefined : true));
      assert.match(done.logTail, /SIGTERM to the job/);
      assert.deepEqual(parseCancelOutput((await runShell(shell, cancelJobCommand({ stateDir: stateOf(dir), shell }))).stdout), { outcome: 'ended' });
    });

    test('cancel: a job that ignores SIGTERM gets SIGKILL after the grace (exit 137)', async () => {
      const dir = runDir();
      const command = ['sh', '-c', "trap '' TERM; echo ready > ready; while :; do sleep 1; done"];
      await runShell(shell, startJobCommand({ runDir: dir, stateDir: stateOf(dir), console: consoleOf(dir), command, shell }));
      await eventually('the job to run', () => (existsSync(join(dir, 'ready')) ? true : undefined));
      parseCancelOutput((await runShell(shell, cancelJobCommand({ stateDir: stateOf(dir), graceSeconds: 1, shell }))).stdout);
      const done = await ended(dir);
      assert.equal(done.job.exitCode, 137);
      assert.match(done.logTail, /SIGKILL to the job after 1 s/);
    });

    test('cancel before the start: nothing to stop, and the start is refused afterwards', async () => {
      const dir = runDir();
      assert.deepEqual(parseCancelOutput((await runShell(shell, cancelJobCommand({ stateDir: stateOf(dir), shell }))).stdout), { outcome: 'not-started' });
      const start = await runShell(shell, startJobCommand({ runDir: dir, stateDir: stateOf(dir), console: consoleOf(dir), command: ['true'], shell }));
      assert.deepEqual(parseStartOutput(start.stdout), { outcome: 'cancelled' });
      assert.equal((await state(dir)).job.status, 'none');
    });

    test('the retrieve grace is renewed on the pod\'s own clock: retrieve.until = its now + the seconds asked', async () => {
      const dir = runDir();
      const before = Math.floor(Date.now() / 1000);
      const renewed = await runShell(shell, renewRetrieveGraceCommand({ stateDir: stateOf(dir), seconds: 120 }));
      const after = Math.floor(Date.now() / 1000);
      const until = Number(parseAck(renewed.stdout, 'runpod-operator-grace'));
      assert.ok(until >= before + 120 && until <= after + 120, `${until} for ${before}..${after}`);
      assert.equal(readFileSync(join(stateOf(dir), 'retrieve.until'), 'utf8'), `${until}\n`);
      assert.throws(() => renewRetrieveGraceCommand({ stateDir: stateOf(dir), seconds: 0 }));
      const missing = await runShell(shell, renewRetrieveGraceCommand({ stateDir: join(dir, 'nope'), seconds: 60 }));
      assert.throws(() => parseAck(missing.stdout, 'runpod-operator-grace'), /no-state-directory/);
    });

    test('retrieved and keep markers; a missing run directory is reported, not an error', async () => {
      const dir = runDir();
      assert.equal(parseAck((await runShell(shell, markRetrievedCommand({ stateDir: stateOf(dir) }))).stdout, 'runpod-operator-retrieved'), 'ok');
      assert.equal(parseAck((await runShell(shell, setKeepCommand({ stateDir: stateOf(dir), keep: true }))).stdout, 'runpod-operator-keep'), '1');
      let current = await state(dir);
      assert.equal(current.retrieved, true);
      assert.equal(current.keep, true);
      assert.equal(parseAck((await runShell(shell, setKeepCommand({ stateDir: stateOf(dir), keep: false }))).stdout, 'runpod-operator-keep'), '0');
      current = await state(dir);
      assert.equal(current.keep, false);
      assert.equal(readFileSync(join(stateOf(dir), 'keep'), 'utf8'), '0\n');

      const missing = join(dir, 'nope');
      assert.equal(parsePodState((await runShell(shell, podStateCommand({ stateDir: missing }))).stdout).runDirMissing, true);
      const start = await runShell(shell, startJobCommand({ runDir: missing, stateDir: stateOf(dir), console: consoleOf(dir), command: ['true'], shell }));
      assert.equal(start.code, 1);
      assert.deepEqual(parseStartOutput(start.stdout), { outcome: 'failed', reason: 'no-run-directory' });
      const mark = await runShell(shell, markRetrievedCommand({ stateDir: missing }));
      assert.throws(() => parseAck(mark.stdout, 'runpod-operator-retrieved'), /no-state-directory/);
    });

    // The controller reads every ready pod this way at each poll: each process it starts costs the pod a
    // fork and an exec (on the simulator's machine, ~5-10 ms of CPU each, for dozens of pods at once).
    test('a poll of a running job whose verdicts are ok starts one process (date), none per file it reads', async () => {
      const dir = runDir();
      const files = { bootstrap: 'ok\n', watchdog: 'ok\n', 'job.started': '1700000000\n', 'job.pid': '7\n', 'job.log': 'step 1\nstep 2\n' };
      for (const [file, text] of Object.entries(files)) writeFileSync(join(stateOf(dir), file), text);
      // In a PID namespace of its own the shell is PID 1 (the supervisor it finds alive) and the PIDs count the
      // processes started: the subshell, what the poll started, then the `cat` (not the last command, so a
      // shell forks it rather than becoming it) prints its own PID.
      writeFileSync(join(stateOf(dir), 'job.supervisor'), '1\n');
      const poll = podStateCommand({ stateDir: stateOf(dir) });
      const result = await run(['unshare', '--pid', '--fork', '--mount-proc', ...shellArgv(shell), '-c', `(${poll}) >poll.out; cat /proc/sys/kernel/ns_last_pid; :`], { cwd: dirname(dir) });
      assert.equal(result.code, 0, result.stderr);
      const state = parsePodState(readFileSync(join(dirname(dir), 'poll.out'), 'utf8'));
      assert.deepEqual([state.bootstrap, state.watchdog, state.job.status, state.job.startedAt], [{ status: 'ok' }, { status: 'ok' }, 'running', 1700000000]);
      assert.equal(Number(result.stdout) - 3, 1, 'processes started by one poll');
    });

    test('verdicts and a lost job read from the files', async () => {
      const dir = runDir();
      writeFileSync(join(stateOf(dir), 'bootstrap'), 'ok\n');
      writeFileSync(join(stateOf(dir), 'watchdog'), 'failed: GET /pods/x: HTTP 401\n');
      writeFileSync(join(stateOf(dir), 'job.started'), '1700000000\n');
      writeFileSync(join(stateOf(dir), 'job.lost'), '1700000100\n');
      const current = await state(dir);
      assert.deepEqual(current.bootstrap, { status: 'ok' });
      assert.deepEqual(current.watchdog, { status: 'failed', reason: 'GET /pods/x: HTTP 401' });
      assert.equal(current.job.status, 'lost');
      assert.equal(current.job.startedAt, 1700000000);
      assert.equal(current.logTail, '');
      // A supervisor that died without an exit code, long after the start: lost too.
      rmSync(join(stateOf(dir), 'job.lost'));
      writeFileSync(join(stateOf(dir), 'job.supervisor'), '999999999\n');
      assert.equal((await state(dir)).job.status, 'lost');
      chmodSync(stateOf(dir), 0o700);
    });
  });
}

/** The namespace PIDs of the `sleep 1`s in the PID namespace whose `unshare --fork` is `unsharePid`. */
function sleepsIn(unsharePid: number): number[] {
  const init = readOrEmpty(`/proc/${unsharePid}/task/${unsharePid}/children`).trim().split(' ')[0];
  const namespace = init ? readlinkOrEmpty(`/proc/${init}/ns/pid`) : '';
  if (!namespace) return [];
  return readdirSync('/proc').filter((pid) => /^\d+$/.test(pid) && readOrEmpty(`/proc/${pid}/cmdline`) === 'sleep\u00001\u0000' && readlinkOrEmpty(`/proc/${pid}/ns/pid`) === namespace)
    .map((pid) => Number(/^NSpid:.*\s(\d+)$/m.exec(readOrEmpty(`/proc/${pid}/status`))?.[1]))
    .filter((pid) => pid > 0);
}

/** A file's text, or '' while it does not exist (or its process has gone). */
function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function readlinkOrEmpty(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return '';
  }
}

function isAlive(pid: number): boolean {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return !/^State:\s+Z/m.test(status);
  } catch {
    return false;
  }
}

describe('state and output parsing', () => {
  test('a state line parses into typed fields; junk before it is ignored', () => {
    const b64 = (text: string): string => Buffer.from(text).toString('base64');
    const line = `runpod-operator-state v=1 now=1700000500 bootstrap=${b64('ok\n')} watchdog=- job=exited started=1700000000 ended=1700000400 exit=3 pid=42 cancelled=0 retrieved=1 keep=- log=${b64('last line\n')}`;
    assert.deepEqual(parsePodState(`Welcome!\n${line}\n`), {
      runDirMissing: false,
      now: 1700000500,
      clockOffsetSeconds: 0,
      bootstrap: { status: 'ok' },
      watchdog: { status: 'pending' },
      job: { status: 'exited', startedAt: 1700000000, endedAt: 1700000400, exitCode: 3, pid: 42, cancelled: false },
      retrieved: true,
      keep: null,
      deleteFailed: null,
      logTail: 'last line\n',
    });
  });

  test('a failed delete recorded by the watchdog is parsed; an unknown rule is kept as unknown', () => {
    const b64 = (text: string): string => Buffer.from(text).toString('base64');
    const base = 'runpod-operator-state v=1 now=1 bootstrap=- watchdog=- job=none started=- ended=- exit=- pid=- cancelled=0 retrieved=0 keep=-';
    const parsed = parsePodState(`${base} delete=${b64('deadline 1700000000 DELETE: HTTP 403; terminate: HTTP 403; stop: HTTP 403\n')} log=-`);
    assert.deepEqual(parsed.deleteFailed, { rule: 'deadline', at: 1700000000, detail: 'DELETE: HTTP 403; terminate: HTTP 403; stop: HTTP 403' });
    assert.deepEqual(parsePodState(`${base} delete=${b64('moonphase x why')} log=-`).deleteFailed, { rule: 'unknown', at: null, detail: 'why' });
    assert.equal(parsePodState(`${base} delete=- log=-`).deleteFailed, null);
    assert.equal(parsePodState(`${base} log=-`).deleteFailed, null, 'a state line without the field (an older pod)');
  });

  test('malformed state lines are refused', () => {
    assert.throws(() => parsePodState('nothing here'), /no "runpod-operator-state" line/);
    assert.throws(() => parsePodState('runpod-operator-state v=2 now=1'));
    const good = 'runpod-operator-state v=1 now=1 bootstrap=- watchdog=- job=none started=- ended=- exit=- pid=- cancelled=0 retrieved=0 keep=- log=-';
    assert.doesNotThrow(() => parsePodState(good));
    assert.throws(() => parsePodState(good.replace('job=none', 'job=dancing')));
    assert.throws(() => parsePodState(good.replace('exit=-', 'exit=x1')));
    assert.throws(() => parsePodState(good.replace('log=-', 'log=%%%')));
    assert.throws(() => parsePodState(good.replace(' retrieved=0', '')));
  });

  test('start and cancel answers', () => {
    assert.deepEqual(parseStartOutput('runpod-operator-start started 1700000000\n'), { outcome: 'started', startedAt: 1700000000 });
    assert.deepEqual(parseStartOutput('runpod-operator-start failed no-run-directory'), { outcome: 'failed', reason: 'no-run-directory' });
    assert.throws(() => parseStartOutput('runpod-operator-start started soon'));
    assert.deepEqual(parseCancelOutput('x\nrunpod-operator-cancel not-started\n'), { outcome: 'not-started' });
    assert.throws(() => parseCancelOutput('runpod-operator-cancel maybe'));
  });

  test('commands refuse what they cannot quote safely', () => {
    assert.throws(() => startJobCommand({ runDir: '/work/../etc', command: ['true'] }));
    assert.throws(() => startJobCommand({ runDir: 'relative', command: ['true'] }));
    assert.throws(() => startJobCommand({ runDir: '/two\nlines', command: ['true'] }));
    assert.throws(() => startJobCommand({ command: [] }));
    assert.throws(() => startJobCommand({ command: ['a\0b'] }));
    assert.throws(() => startJobCommand({ command: ['true'], shell: 'zsh' as never }));
    assert.throws(() => jobEnvFile({ 'NOT-A-NAME': 'x' }));
    assert.throws(() => jobEnvFile({ A: 'nul\0byte' }));
    assert.equal(jobEnvFile([['A', "it's"], ['B', '']]), "export A='it'\\''s'\nexport B=''\n");
  });
});
