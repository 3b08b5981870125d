// The controller's command line as a newcomer meets it, through the real process: --help lists the
// flags and exits 0; bad input is one sentence on stderr and exit 2; a start that cannot reach its
// cluster is one sentence and exit 1. Never a stack trace.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freePort } from '../envtest/harness.ts';

const main = new URL('../../src/main.ts', import.meta.url).pathname;
const controller = (args: string[], env: NodeJS.ProcessEnv = {}) => {
  const result = spawnSync(process.execPath, [main, ...args], { encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH, HOME: tmpdir(), ...env } });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
};
const noTrace = (text: string) => assert.doesNotMatch(text, /^\s+at .+:\d+:\d+\)?$/m, `a stack trace:\n${text}`);

void test('--help and -h: every flag with its env variable, exit 0', () => {
  for (const flag of ['--help', '-h']) {
    const { code, stdout } = controller([flag, '--bogus']);
    assert.equal(code, 0, flag);
    assert.match(stdout, /^Usage: node src\/main\.ts \[flags\]/m);
    assert.match(stdout, /--poll-interval\n.+\(default 10s\)\n\s+env RUNPOD_OPERATOR_POLL_INTERVAL/);
  }
});

void test('an unknown flag, a bad value, a missing kubeconfig: one sentence, exit 2', () => {
  const cases: [string[], RegExp][] = [
    [['--bogus'], /^unknown flag '--bogus' \(--help lists the flags\)\n$/],
    [['--poll-interval', 'soon'], /^invalid configuration: --poll-interval \(RUNPOD_OPERATOR_POLL_INTERVAL\): must be a duration/],
    [['--kubeconfig', '/nonexistent/kubeconfig'], /^invalid configuration: --kubeconfig \(RUNPOD_OPERATOR_KUBECONFIG\): cannot read \/nonexistent\/kubeconfig: no such file\n$/],
  ];
  for (const [args, said] of cases) {
    const { code, stderr } = controller(args);
    assert.equal(code, 2, args.join(' '));
    assert.match(stderr, said);
    assert.equal(stderr.trim().split('\n').length, 1, stderr);
  }
});

void test('a cluster that does not answer: "cannot start", one sentence on stderr, exit 1', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rpo-cli-'));
  try {
    const kubeconfig = join(dir, 'kubeconfig');
    const port = await freePort();
    writeFileSync(kubeconfig, [
      'apiVersion: v1', 'kind: Config', 'current-context: c',
      'clusters: [{name: c, cluster: {server: "https://127.0.0.1:' + String(port) + '", insecure-skip-tls-verify: true}}]',
      'users: [{name: u, user: {token: t}}]', 'contexts: [{name: c, context: {cluster: c, user: u}}]', '',
    ].join('\n'));
    const { code, stderr } = controller(['--kubeconfig', kubeconfig, '--metrics-bind-address', '0', '--health-probe-bind-address', '0']);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /^runpod-operator: cannot start: .*ECONNREFUSED/);
    assert.equal(stderr.trim().split('\n').length, 1, stderr);
    noTrace(stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
