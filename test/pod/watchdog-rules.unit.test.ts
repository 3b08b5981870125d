// The watchdog's rules without a pod: watchdog.sh sourced under the name that defines its functions and
// runs nothing, its state set as a tick would find it, then `decide` (which rule deletes the pod now, if
// any) in both shells. The pod tests (pods, price-and-grace, clock) show the same rules acting on real pods.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SHELLS, shellArgv } from './helpers.ts';

const WATCHDOG = new URL('../../src/pod/watchdog.sh', import.meta.url).pathname;
const NOW = 1_800_000_000;

interface Tick {
  /** The create env (RUNPOD_OPERATOR_*) the watchdog started with. */
  env?: Record<string, string>;
  /** Shell variables as the watchdog holds them at this tick (its clock, price, what it has seen). */
  vars?: Record<string, string | number>;
  /** Files of the pod's state directory (protocol.md). */
  files?: Record<string, string>;
}

/** The rule and reason decide chose, and what it logged on the way. */
interface Verdict { rule: string; reason: string; log: string[] }

function decideIn(shell: (typeof SHELLS)[number], tick: Tick): Verdict {
  const state = mkdtempSync(join(tmpdir(), 'watchdog-rules-'));
  try {
    for (const [name, text] of Object.entries(tick.files ?? {})) writeFileSync(join(state, name), `${text}\n`);
    const vars = { NOW, RUNPOD_NOW: NOW, START: NOW - 60, START_R: NOW - 60, ...tick.vars };
    const script = [
      `. '${WATCHDOG}'`,
      ...Object.entries(vars).map(([name, value]) => `${name}='${value}'`),
      'decide',
      'printf "%s\\n%s\\n" "$RULE" "$REASON"',
    ].join('\n');
    const [command, ...args] = shellArgv(shell);
    const result = spawnSync(command ?? 'sh', [...args, '-c', script, 'runpod-operator-watchdog-rules'], {
      encoding: 'utf8',
      // Not a socket on stdin: bash would take itself for a shell sshd started and read ~/.bashrc.
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', RUNPOD_OPERATOR_STATE_DIR: state, ...tick.env },
      timeout: 10_000,
    });
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stderr, '', 'sourcing defines functions and runs nothing: it prints nothing');
    const lines = result.stdout.split('\n').slice(0, -1);
    const [rule = '', reason = ''] = lines.slice(-2);
    return { rule, reason, log: lines.slice(0, -2) };
  } finally {
    rmSync(state, { recursive: true, force: true });
  }
}

const started = { 'job.started': String(NOW - 30) };
const ended = { ...started, 'job.exit': '0', 'job.ended': String(NOW - 100) };

interface Case { name: string; tick: Tick; rule: string; reason?: RegExp; log?: RegExp }

const cases: Case[] = [
  { name: 'nothing due: no rule', tick: { env: { RUNPOD_OPERATOR_DEADLINE: String(NOW + 600) } }, rule: '' },
  { name: 'the deadline passed on Runpod\'s clock', tick: { env: { RUNPOD_OPERATOR_DEADLINE: String(NOW - 1) } }, rule: 'deadline', reason: /^the deadline passed \(deadline \d+, now 1800000000 on Runpod's clock/ },
  { name: 'the deadline is on Runpod\'s clock, not the pod\'s (a pod 2 h ahead)', tick: { env: { RUNPOD_OPERATOR_DEADLINE: String(NOW + 600) }, vars: { NOW: NOW + 7200 } }, rule: '' },
  { name: 'a deadline that is no unix time is a config failure', tick: { env: { RUNPOD_OPERATOR_DEADLINE: 'tomorrow' } }, rule: 'config', reason: /not a unix time: tomorrow/ },
  { name: 'the cost cap: 1 $/h for an hour reaches a 1 $ cap', tick: { env: { RUNPOD_OPERATOR_MAX_COST_USD: '1.00' }, vars: { COST: '1.0', CREATED: NOW - 3600 } }, rule: 'cost-cap', reason: /spent about \$1\.0000 at \$1\.0\/h, cap \$1\.00/ },
  { name: 'the cost cap, not yet: half the cap spent', tick: { env: { RUNPOD_OPERATOR_MAX_COST_USD: '1.00' }, vars: { COST: '1.0', CREATED: NOW - 1800 } }, rule: '' },
  { name: 'a price still unknown at the boot grace, under a cost cap', tick: { env: { RUNPOD_OPERATOR_MAX_COST_USD: '1.00', RUNPOD_OPERATOR_BOOT_GRACE: '60' }, vars: { COST: '' }, files: started }, rule: 'price-unknown' },
  { name: 'an unknown price without a cost cap is no rule', tick: { env: { RUNPOD_OPERATOR_BOOT_GRACE: '60' }, vars: { COST: '' }, files: started }, rule: '' },
  { name: 'the deadline comes before the keep file: kept pods are bounded too', tick: { env: { RUNPOD_OPERATOR_DEADLINE: String(NOW - 1) }, files: { ...ended, keep: '1' } }, rule: 'deadline' },
  { name: 'kept (create env) after the job: no retrieve grace', tick: { env: { RUNPOD_OPERATOR_KEEP_POD: '1', RUNPOD_OPERATOR_RETRIEVE_GRACE: '30' }, files: ended }, rule: '' },
  { name: 'a keep file of 0 turns the create env\'s keep off', tick: { env: { RUNPOD_OPERATOR_KEEP_POD: '1', RUNPOD_OPERATOR_RETRIEVE_GRACE: '30' }, files: { ...ended, keep: '0' } }, rule: 'retrieve-grace' },
  { name: 'the results were retrieved', tick: { files: { ...ended, retrieved: '1' } }, rule: 'retrieved' },
  { name: 'the job ended and its results were not retrieved within the grace', tick: { env: { RUNPOD_OPERATOR_RETRIEVE_GRACE: '30' }, files: ended }, rule: 'retrieve-grace', reason: /^the job ended at 1799999900 and its results were not retrieved within 30 s$/ },
  { name: 'within the retrieve grace: no rule', tick: { env: { RUNPOD_OPERATOR_RETRIEVE_GRACE: '3600' }, files: ended }, rule: '' },
  { name: 'the controller extended the retrieve grace (retrieve.until ahead)', tick: { env: { RUNPOD_OPERATOR_RETRIEVE_GRACE: '30' }, files: { ...ended, 'retrieve.until': String(NOW + 60) } }, rule: '', log: /watchdog: the retrieve grace is extended by the controller while the results wait for a transfer \(until 1800000060, renewed as it goes\)$/ },
  { name: 'an extension that has run out', tick: { env: { RUNPOD_OPERATOR_RETRIEVE_GRACE: '30' }, files: { ...ended, 'retrieve.until': String(NOW - 1) } }, rule: 'retrieve-grace' },
  // A step of the pod's clock between the end's writing and the tick that first sees it: the step was
  // learned (CLOCK_SKEW moved by it, chaos seed 1807: 2 h ahead) but job.ended holds the old clock. The
  // end is not before the last tick that saw the job running, nor before the watchdog's start.
  { name: 'an end written before a 2 h step ahead, first seen after it: the grace counts from the last tick that saw the job running', tick: { env: { RUNPOD_OPERATOR_RETRIEVE_GRACE: '3600' }, files: { ...started, 'job.exit': '0', 'job.ended': String(NOW - 5) }, vars: { NOW: NOW + 7200, CLOCK_SKEW: -7202, RUNPOD_NOW: NOW - 2, SEEN_JOB: 1, RUNNING_R: NOW - 12 } }, rule: '' },
  { name: 'the same end past its grace on Runpod\'s clock: deleted', tick: { env: { RUNPOD_OPERATOR_RETRIEVE_GRACE: '30' }, files: { ...started, 'job.exit': '0', 'job.ended': String(NOW - 5) }, vars: { NOW: NOW + 7200 + 60, CLOCK_SKEW: -7202, RUNPOD_NOW: NOW + 58, SEEN_JOB: 1, RUNNING_R: NOW - 12 } }, rule: 'retrieve-grace' },
  { name: 'a watchdog that never saw the job running (restarted after its end) does not grant the grace again', tick: { env: { RUNPOD_OPERATOR_RETRIEVE_GRACE: '30' }, files: { ...started, 'job.exit': '0', 'job.ended': String(NOW - 40) }, vars: { START: NOW - 5, START_R: NOW - 5 } }, rule: 'retrieve-grace' },
  { name: 'no job within the boot grace', tick: { env: { RUNPOD_OPERATOR_BOOT_GRACE: '60' } }, rule: 'boot-grace', reason: /^no job started within 60 s/ },
  { name: 'the boot grace counts on Runpod\'s clock from the start (a pod 2 h behind)', tick: { env: { RUNPOD_OPERATOR_BOOT_GRACE: '60' }, vars: { NOW: NOW - 7200, START: NOW - 7200 - 60 } }, rule: 'boot-grace' },
  { name: 'a job that started is not held to the boot grace', tick: { env: { RUNPOD_OPERATOR_BOOT_GRACE: '60' }, files: started, vars: { SEEN_JOB: 1 } }, rule: '' },
  { name: 'a failed bootstrap comes first', tick: { env: { RUNPOD_OPERATOR_BOOT_FAILED: 'sshd did not start', RUNPOD_OPERATOR_DEADLINE: String(NOW - 1) } }, rule: 'bootstrap', reason: /^the bootstrap failed: sshd did not start$/ },
];

for (const shell of SHELLS) {
  describe(`the watchdog's rules, sourced (${shell})`, () => {
    for (const c of cases) {
      test(c.name, () => {
        const verdict = decideIn(shell, c.tick);
        assert.equal(verdict.rule, c.rule, verdict.reason);
        if (c.reason) assert.match(verdict.reason, c.reason);
        if (c.log) assert.match(verdict.log.join('\n'), c.log);
        else assert.deepEqual(verdict.log, []);
      });
    }
  });
}

/** The parts answer_part takes out of a raw answer ($resp: headers, a blank line, the body, the code), as api() takes them ($(...)). */
function answerParts(shell: (typeof SHELLS)[number], resp: string): { headers: string; code: string; body: string } {
  const [command, ...args] = shellArgv(shell);
  const script = `. '${WATCHDOG}'\nresp=$(cat)\nfor p in headers code body; do v=$(answer_part "$p"); printf '%s\\n--%s--\\n' "$v" "$p"; done`;
  const result = spawnSync(command ?? 'sh', [...args, '-c', script, 'runpod-operator-watchdog-rules'], { input: resp, encoding: 'utf8', timeout: 10_000 });
  assert.equal(result.status, 0, result.stderr);
  const [headers = '', code = '', body = ''] = result.stdout.split(/\n--\w+--\n/);
  return { headers, code, body };
}

for (const shell of SHELLS) {
  describe(`the watchdog's reading of an answer (${shell})`, () => {
    test('the last header block, the body (blank lines and all) and the status code', () => {
      const body = '{"id": "abc",\n\n "env": {"K": "v"}}';
      const resp = `HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nDate: Fri, 04 Dec 2026 17:46:36 GMT\r\nRetry-After: 3\r\n\r\n${body}\n200`;
      assert.deepEqual(answerParts(shell, resp), {
        headers: 'HTTP/1.1 100 Continue\n\nHTTP/1.1 200 OK\nDate: Fri, 04 Dec 2026 17:46:36 GMT\nRetry-After: 3',
        code: '200',
        body,
      });
    });
    test('no answer at all: no headers, no body, curl\'s 000', () => {
      assert.deepEqual(answerParts(shell, '\n000'), { headers: '', code: '000', body: '' });
    });
    test('a pod\'s 60 KB answer (its env carries the scripts) is read whole', () => {
      const body = JSON.stringify({ id: 'abc', env: { RUNPOD_OPERATOR_WATCHDOG: 'QUFB'.repeat(15_000) }, costPerHr: 0.69 });
      assert.deepEqual(answerParts(shell, `HTTP/1.1 200 OK\r\n\r\n${body}\n200`), { headers: 'HTTP/1.1 200 OK', code: '200', body });
    });
  });
}
