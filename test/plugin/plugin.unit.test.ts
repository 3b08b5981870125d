// kubectl-runpod without a cluster: its arguments as kubectl's habits want them (one sentence and a
// non-zero exit on bad input, --help), and the cost table computed from runs' status alone.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import type { RunpodRun } from '../../src/api/runpodrun.ts';
import { main } from '../../src/plugin/main.ts';
import { costTable, formatCostTable } from '../../src/plugin/runs.ts';
import { parseSums } from '../../src/plugin/results.ts';
import { RUNPOD_API_URL_ENV } from '../../src/plugin/env.ts';
import { runpodApiUrl } from '../../src/plugin/system-logs.ts';
import { envName } from '../../src/config.ts';
import { connectAgainWhileReset } from '../../src/plugin/pod.ts';
import { HostKeyMismatchError, SshAuthError, SshError } from '../../src/ssh/index.ts';

async function plugin(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const [out, err] = [new PassThrough(), new PassThrough()];
  const chunks = { out: [] as Buffer[], err: [] as Buffer[] };
  out.on('data', (chunk: Buffer) => chunks.out.push(chunk));
  err.on('data', (chunk: Buffer) => chunks.err.push(chunk));
  const code = await main(argv, out, err);
  return { code, out: Buffer.concat(chunks.out).toString(), err: Buffer.concat(chunks.err).toString() };
}

void test('--help prints every command; no command prints it on stderr and fails', async () => {
  const help = await plugin('--help');
  assert.equal(help.code, 0);
  for (const command of ['logs RUN', 'logs RUN --source system', 'ssh RUN', 'cost', 'cancel RUN', 'keep RUN']) assert.ok(help.out.includes(`kubectl runpod ${command}`), command);
  for (const flag of ['--source', '--since', '--runpod-api-url']) assert.ok(help.out.includes(flag), flag);
  const none = await plugin();
  assert.deepEqual([none.code, none.out], [1, '']);
  assert.match(none.err, /^kubectl runpod: /);
});

void test('bad input is one sentence and exit 1, before any cluster is asked', async () => {
  const cases: [string[], string][] = [
    [['logs'], 'error: kubectl runpod logs needs the run\'s name: kubectl runpod logs RUN\n'],
    [['ssh', 'r', 'ls'], 'error: unexpected argument "ls" (a remote command goes after --)\n'],
    [['cost', 'r'], 'error: unexpected argument "r": kubectl runpod cost takes no run\n'],
    [['logs', 'r', '--tail', 'ten'], 'error: --tail must be a number of lines (or -1 for all), not "ten"\n'],
    [['cost', '--since', 'a week'], 'error: --since must be a duration such as 90m, 12h or 7d, not "a week"\n'],
    [['frobnicate'], 'error: unknown command "frobnicate"; see kubectl runpod --help\n'],
    [['logs', 'r', '--bogus'], 'error: Unknown option \'--bogus\'; see kubectl runpod --help\n'],
    [['logs', 'r', '--kubeconfig', '/nonexistent/kubeconfig'], ''],
  ];
  for (const [argv, said] of cases) {
    const { code, out, err } = await plugin(...argv);
    assert.equal(code, 1, argv.join(' '));
    assert.equal(out, '');
    if (said) assert.equal(err, said);
    else assert.match(err, /^error: cannot read the kubeconfig \/nonexistent\/kubeconfig: /);
    assert.equal(err.split('\n').length, 2, err);
  }
});

void test('logs: a bad --source, --since or --runpod-api-url is one sentence and exit 2, before any cluster is asked', async () => {
  const cases: [string[], string][] = [
    [['logs', 'r', '--source', 'pod'], 'error: --source must be job or system, not "pod"\n'],
    [['logs', 'r', '--since', '10m'], 'error: --since applies to --source system only: the job\'s log lines carry no timestamps\n'],
    [['logs', 'r', '--source', 'job', '--since', '10m'], 'error: --since applies to --source system only: the job\'s log lines carry no timestamps\n'],
    [['logs', 'r', '--source', 'system', '--since', 'an hour'], 'error: --since must be a duration such as 90m, 12h or 7d, not "an hour"\n'],
    [['logs', 'r', '--source', 'system', '--runpod-api-url', 'http://api.example.com/v2'], 'error: --runpod-api-url must be https (http only to this machine), not "http://api.example.com/v2"\n'],
    [['logs', 'r', '--source', 'system', '--runpod-api-url', 'runpod'], 'error: --runpod-api-url must be a URL such as https://api.runpod.io/v2, not "runpod"\n'],
  ];
  for (const [argv, said] of cases) {
    const { code, out, err } = await plugin(...argv, '--kubeconfig', '/nonexistent/kubeconfig');
    assert.deepEqual([code, out, err], [2, '', said], argv.join(' '));
  }
});

void test('the Runpod API URL: the flag, else the controller\'s own variable, else Runpod\'s; https, or http to this machine only', () => {
  assert.equal(RUNPOD_API_URL_ENV, envName('runpod-api-url'), 'the plugin honours the variable the controller reads');
  assert.equal(runpodApiUrl(undefined, {}), 'https://api.runpod.io/v2');
  assert.equal(runpodApiUrl(undefined, { [RUNPOD_API_URL_ENV]: 'http://127.0.0.1:8080/v2/' }), 'http://127.0.0.1:8080/v2');
  assert.equal(runpodApiUrl('https://proxy.example/runpod/v2', { [RUNPOD_API_URL_ENV]: 'http://127.0.0.1:1/v2' }), 'https://proxy.example/runpod/v2');
  assert.throws(() => runpodApiUrl(undefined, { [RUNPOD_API_URL_ENV]: 'http://10.0.0.1/v2' }), { message: `${RUNPOD_API_URL_ENV} must be https (http only to this machine), not "http://10.0.0.1/v2"` });
  assert.throws(() => runpodApiUrl('https://user:pw@api.runpod.io/v2'), /without credentials, query or fragment/);
});

const run = (namespace: string, status: Record<string, unknown>): RunpodRun => ({ metadata: { name: 'r', namespace, creationTimestamp: '2026-12-01T00:00:00Z' }, status } as unknown as RunpodRun);

void test('cost: runs, GPU-hours (pod lifetime x GPUs, to now while it lives) and estimated cost per namespace and in total', () => {
  const now = new Date('2026-12-02T12:00:00Z');
  const runs = [
    run('team-a', { startTime: '2026-12-02T08:00:00Z', estimatedCostUsd: '1.38', pod: { createdAt: '2026-12-02T08:00:00Z', deletedAt: '2026-12-02T10:00:00Z', gpuCount: 1 } }),
    run('team-a', { startTime: '2026-12-02T11:00:00Z', estimatedCostUsd: '0.80', pod: { createdAt: '2026-12-02T11:00:00Z', gpuCount: 2 } }),
    run('team-b', { startTime: '2026-12-02T09:00:00Z', phase: 'Failed', reason: 'InvalidSpec' }),
    run('team-b', { startTime: '2026-11-01T00:00:00Z', estimatedCostUsd: '50', pod: { createdAt: '2026-11-01T00:00:00Z', deletedAt: '2026-11-01T01:00:00Z' } }),
  ];
  assert.deepEqual(costTable(runs, now, new Date('2026-12-01T12:00:00Z')), [
    { namespace: 'team-a', runs: 2, gpuHours: 4, costUsd: 2.18 },
    { namespace: 'team-b', runs: 1, gpuHours: 0, costUsd: 0 },
  ]);
  assert.equal(formatCostTable(costTable(runs, now)), [
    'NAMESPACE   RUNS   GPU-HOURS   COST-USD',
    'team-a      2      4.00        2.18',
    'team-b      2      1.00        50.00',
    'TOTAL       4      5.00        52.18',
    '',
  ].join('\n'));
});

void test('results: SHA256SUMS lines as sha256sum writes them (an escaped name too); a path leaving DIR is refused', () => {
  const sha = 'a'.repeat(64);
  assert.deepEqual(parseSums(`${sha}  results/a.txt\n\\${sha}  results/line\\nbreak\\\\x\n`), [
    { sha256: sha, path: 'results/a.txt' },
    { sha256: sha, path: 'results/line\nbreak\\x' },
  ]);
  assert.throws(() => parseSums(`${sha}  ../../etc/passwd\n`), { message: 'SHA256SUMS names "../../etc/passwd", which is refused (path leaves the directory (..))' });
  assert.throws(() => parseSums(`${sha}  /etc/passwd\n`), /refused \(absolute path\)/);
  assert.throws(() => parseSums('not a sum\n'), /SHA256SUMS has a line that is not/);
});

// make test at concurrency 6: `kubectl runpod logs -f` ended at once with "SSH to 127.0.0.1:41543: read
// ECONNRESET" (a busy sshd dropping a new connection), where a person would have it try again.
test('the plugin connects again after a reset or refused connection, but never after a host key or auth refusal', async () => {
  const attempts = (failures: SshError[]) => {
    let calls = 0;
    const connect = (): Promise<string> => {
      const failure = failures[calls++];
      return failure ? Promise.reject(failure) : Promise.resolve('session');
    };
    return { connect, calls: () => calls };
  };
  const reset = attempts([new SshError('closed', 'read ECONNRESET'), new SshError('refused', 'connect ECONNREFUSED')]);
  assert.equal(await connectAgainWhileReset(reset.connect, [1, 1]), 'session');
  assert.equal(reset.calls(), 3);
  const always = attempts([new SshError('closed', 'a'), new SshError('closed', 'b'), new SshError('closed', 'c')]);
  await assert.rejects(connectAgainWhileReset(always.connect, [1, 1]), /c/);
  assert.equal(always.calls(), 3, 'three tries in all');
  for (const error of [new HostKeyMismatchError('SHA256:a', 'SHA256:b', 'h:1'), new SshAuthError('refused key'), new SshError('timeout', 'slow')]) {
    const once = attempts([error]);
    await assert.rejects(connectAgainWhileReset(once.connect, [1, 1]), error);
    assert.equal(once.calls(), 1, error.message);
  }
});
