// The create call's args and env, and the protocol's names kept in step with the scripts and the doc.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { IMAGE_REQUIREMENTS, POD_ENV, POD_FILES, podPath } from '../../src/pod/protocol.ts';
import { BOOTSTRAP_SCRIPT, WATCHDOG_SCRIPT, minifyScript, renderPodArgs, renderPodEnv, type PodEnvInput } from '../../src/pod/render.ts';
import { parseSpec, type RunpodRun } from '../../src/api/runpodrun.ts';
import { buildCreatePodRequest } from '../../src/run/act/pod-request.ts';
import { generateRunKeys } from '../../src/ssh/index.ts';
import { splitArgs } from '../runpod-sim/argv.ts';
import { SHELLS, run } from './helpers.ts';

const source = (name: string): string => readFileSync(new URL(`../../src/pod/${name}`, import.meta.url), 'utf8');

const HOST_KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----\n';
const CLIENT_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBt2n1Zs0aCVm+vZg0nUbdJ6rSY5C6qA2kJq8Y0mC7h5 rpo-client';

function input(overrides: Record<string, unknown> = {}): PodEnvInput {
  return {
    clusterId: '5f0c1a2b-0000-4000-8000-000000000001',
    scope: 'namespace/ml',
    runUid: '9d3c2b1a-0000-4000-8000-000000000002',
    attempt: 2,
    apiUrl: 'https://api.runpod.io/v2',
    deadline: 1800000000,
    bootGraceSeconds: 1800,
    retrieveGraceSeconds: 3600,
    keepPod: false,
    hostPrivateKey: HOST_KEY,
    authorizedKey: `${CLIENT_KEY}\n`,
    ...overrides,
  };
}

describe('renderPodEnv', () => {
  test('every marker and limit, the host key base64-encoded, nothing else', () => {
    const env = renderPodEnv(input({ maxCostUsd: '25.00', watchdogPeriodSeconds: 5 }));
    assert.deepEqual(env, {
      RUNPOD_OPERATOR_CLUSTER: '5f0c1a2b-0000-4000-8000-000000000001',
      RUNPOD_OPERATOR_SCOPE: 'namespace/ml',
      RUNPOD_OPERATOR_RUN: '9d3c2b1a-0000-4000-8000-000000000002',
      RUNPOD_OPERATOR_ATTEMPT: '2',
      RUNPOD_OPERATOR_API_URL: 'https://api.runpod.io/v2',
      RUNPOD_OPERATOR_DEADLINE: '1800000000',
      RUNPOD_OPERATOR_MAX_COST_USD: '25.00',
      RUNPOD_OPERATOR_BOOT_GRACE: '1800',
      RUNPOD_OPERATOR_RETRIEVE_GRACE: '3600',
      RUNPOD_OPERATOR_VERDICT_BOUND: '300',
      RUNPOD_OPERATOR_KEEP_POD: '0',
      // The run's own directory, named by its UID (runs sharing a network volume never meet).
      RUNPOD_OPERATOR_RUN_DIR: '/workspace/runpod-operator/9d3c2b1a-0000-4000-8000-000000000002',
      // The pod's state on its container disk, never on a volume another pod mounts.
      RUNPOD_OPERATOR_STATE_DIR: '/var/lib/runpod-operator/9d3c2b1a-0000-4000-8000-000000000002',
      RUNPOD_OPERATOR_HOST_KEY: Buffer.from(HOST_KEY).toString('base64'),
      RUNPOD_OPERATOR_AUTHORIZED_KEY: CLIENT_KEY,
      RUNPOD_OPERATOR_WATCHDOG_PERIOD: '5',
      RUNPOD_OPERATOR_BOOTSTRAP: Buffer.from(BOOTSTRAP_SCRIPT).toString('base64'),
      RUNPOD_OPERATOR_WATCHDOG: Buffer.from(WATCHDOG_SCRIPT).toString('base64'),
    });
    assert.deepEqual(Object.keys(env).sort(), Object.values(POD_ENV).sort());
  });

  test('optional settings are left out; a Date deadline becomes unix seconds; keepPod is 1', () => {
    const env = renderPodEnv(input({ deadline: new Date('2027-01-01T00:00:00.900Z'), keepPod: true, runDir: '/workspace/data/runs/abc' }));
    assert.equal(env.RUNPOD_OPERATOR_DEADLINE, '1798761600');
    assert.equal(env.RUNPOD_OPERATOR_KEEP_POD, '1');
    assert.equal(env.RUNPOD_OPERATOR_RUN_DIR, '/workspace/data/runs/abc');
    assert.equal('RUNPOD_OPERATOR_MAX_COST_USD' in env, false);
    assert.equal('RUNPOD_OPERATOR_WATCHDOG_PERIOD' in env, false);
  });

  test('no API key, no job secret, nothing unknown gets in; bad values are refused by name', () => {
    const bad: [string, Record<string, unknown>][] = [
      ['apiKey', { apiKey: 'rpa_ACCOUNTKEY' }],
      ['env', { env: { HF_TOKEN: 'secret' } }],
      ['apiUrl', { apiUrl: 'ftp://api.runpod.io/v2' }],
      ['apiUrl', { apiUrl: 'not a url' }],
      ['deadline', { deadline: -5 }],
      ['deadline', { deadline: 1.5 }],
      ['maxCostUsd', { maxCostUsd: 'ten dollars' }],
      ['maxCostUsd', { maxCostUsd: '1e3' }],
      ['bootGraceSeconds', { bootGraceSeconds: 0 }],
      ['retrieveGraceSeconds', { retrieveGraceSeconds: -1 }],
      ['watchdogPeriodSeconds', { watchdogPeriodSeconds: 0 }],
      ['attempt', { attempt: 0 }],
      ['clusterId', { clusterId: 'has space' }],
      ['scope', { scope: '' }],
      ['runUid', { runUid: '' }],
      ['runDir', { runDir: 'relative/dir' }],
      ['runDir', { runDir: '/workspace/../etc' }],
      ['hostPrivateKey', { hostPrivateKey: 'ssh-ed25519 AAAA public-not-private' }],
      ['authorizedKey', { authorizedKey: `command="rm -rf /" ${CLIENT_KEY}` }],
      ['authorizedKey', { authorizedKey: `${CLIENT_KEY}\n${CLIENT_KEY}` }],
      ['authorizedKey', { authorizedKey: 'not a key' }],
    ];
    for (const [field, overrides] of bad) {
      assert.throws(() => renderPodEnv(input(overrides)), (error: Error) => error.message.includes(field), `${field}: ${JSON.stringify(overrides)}`);
    }
    assert.equal(renderPodEnv(input({ maxCostUsd: 2.5 })).RUNPOD_OPERATOR_MAX_COST_USD, '2.5');
  });
});

describe('renderPodArgs', () => {
  for (const shell of ['sh', ...SHELLS] as const) {
    test(`one line that Runpod splits into ${shell}, -c and a stub; the stub parses and decodes the bootstrap`, async () => {
      const args = renderPodArgs({ shell });
      assert.doesNotMatch(args, /[\n\r]/, 'one line');
      assert.ok(args.length < 1024, `args are ${args.length} bytes`);
      const words = splitArgs(args);
      const stub = words.at(-1) ?? '';
      // The first word is a program (never a builtin such as exec), and the stub is one word.
      assert.deepEqual(words, [...shell.split(' '), '-c', stub]);
      assert.equal(args, `${shell} -c '${stub}'`, 'the stub needs no quoting beyond its single quotes');
      const checked = await run([...shell.split(' '), '-n', '-c', stub]);
      assert.equal(checked.code, 0, checked.stderr);
      // What the stub decodes is the bootstrap, byte for byte (printed instead of exec'd).
      const decoded = await run([...shell.split(' '), '-c', stub.replace(/&&exec .*$/, '&&printf %s "$b"')], {
        env: { ...process.env, ...renderPodEnv(input()) },
      });
      assert.equal(decoded.stdout, BOOTSTRAP_SCRIPT, decoded.stderr);
    });
  }

  test('an unknown shell is refused', () => {
    assert.throws(() => renderPodArgs({ shell: 'zsh' as never }));
  });

  test('the whole create body (a real run\'s, with real keys) stays small: about 35 KB, args under 1 KB', () => {
    const verdict = parseSpec({
      credentials: { secretName: 'runpod' }, image: 'axolotlai/axolotl-cloud:0.19.0', gpu: { types: ['NVIDIA GeForce RTX 4090'] },
      job: { command: ['python', 'train.py'] }, limits: { maxRuntimeSeconds: 21600, maxCostUsd: '25.00' },
    });
    assert.ok(verdict.ok);
    const keys = generateRunKeys('finetune-qwen');
    const run = { metadata: { name: 'finetune-qwen', namespace: 'ml', uid: '9d3c2b1a-0000-4000-8000-000000000002' } } as RunpodRun;
    const body = buildCreatePodRequest({
      run, spec: verdict.spec, attemptName: 'finetune-qwen-1', attemptNumber: 1, gpuType: 'NVIDIA GeForce RTX 4090',
      sshKeys: { clientPrivateKey: keys.client.privateKey, clientPublicKey: keys.client.publicKey, hostPrivateKey: keys.host.privateKey, hostPublicKey: keys.host.publicKey },
      clusterId: '5f0c1a2b-0000-4000-8000-000000000001', scope: 'cluster-wide', runpodApiUrl: 'https://api.runpod.io/v2', watchdogPeriodMs: 10_000, now: new Date(),
    });
    const bytes = Buffer.byteLength(JSON.stringify(body));
    // Measured: 34547 bytes in all, nearly all of it the two base64 scripts (22263 before the watchdog
    // learned Retry-After, Runpod's clock, unknown prices and renewed graces). Runpod documents no
    // limit; this bound catches growth nobody meant.
    assert.ok(bytes < 40 * 1024, `the create body is ${bytes} bytes`);
    assert.ok(Buffer.byteLength(body.args ?? '') < 1024, `args are ${body.args?.length} bytes`);
    assert.doesNotMatch(body.args ?? '', /\n/);
  });
});

describe('the scripts', () => {
  for (const shell of SHELLS) {
    test(`parse under ${shell}, as written and as shipped`, async () => {
      for (const text of [source('bootstrap.sh'), source('watchdog.sh'), BOOTSTRAP_SCRIPT, WATCHDOG_SCRIPT]) {
        const checked = await run([...shell.split(' '), '-n', '-c', text]);
        assert.equal(checked.code, 0, checked.stderr);
      }
    });
  }

  test('have no heredoc and no line the minifier could change the meaning of', () => {
    for (const name of ['bootstrap.sh', 'watchdog.sh']) {
      const text = source(name);
      assert.doesNotMatch(text, /<</, `${name} has a heredoc`);
      // A line inside a multi-line string must not start with # (the minifier drops such lines).
      assert.equal(minifyScript(text).split('\n').some((line) => line.startsWith('#')), false);
    }
    assert.equal(minifyScript('  # comment\n\n  echo  a\n\t fi\n'), 'echo  a\nfi');
  });

  test('read the wall clock only through date (what the simulator\'s clock-skew fault shifts)', () => {
    const otherClocks = [/\bstat\b/, /-(newer|[amc]min|[amc]time)\b/, /\$\{?SECONDS\b/, /\b(systime|strftime)\(/, /\btime\.(time|monotonic)\b|\bdatetime\b/, /printf[^\n]*%\(/];
    const onPod = [source('bootstrap.sh'), source('watchdog.sh'), source('job.ts'),
      readFileSync(new URL('../../src/ssh/manifest.ts', import.meta.url), 'utf8'), readFileSync(new URL('../../src/results/s3-direct.ts', import.meta.url), 'utf8')];
    for (const text of onPod) for (const clock of otherClocks) assert.doesNotMatch(text, clock);
    assert.match(source('watchdog.sh'), /date \+%s/);
    // The host's uptime is no wall clock (no step moves it): the watchdog reads it once, in uptime_s, to see its clock step.
    const uptimeReads = onPod.flatMap((text) => text.match(/\/proc\/uptime/g) ?? []);
    assert.equal(uptimeReads.length, 2, 'the comment naming it and the read in uptime_s');
    assert.match(source('watchdog.sh'), /uptime_s\(\) \{\n {2}UP=''\n {2}u=''\n {2}\{ read -r u _ <\/proc\/uptime; \}/);
  });

  test('the bootstrap checks exactly IMAGE_REQUIREMENTS', () => {
    const listed = /^REQUIRED='([^']*)'$/m.exec(source('bootstrap.sh'))?.[1]?.split(' ');
    assert.deepEqual(listed, [...IMAGE_REQUIREMENTS]);
  });

  test('every protocol file is named in the doc, and every state file the scripts use is a protocol file', () => {
    const doc = source('protocol.md');
    const names = new Set<string>(Object.values(POD_FILES));
    for (const file of names) assert.ok(doc.includes(`\`${file}\``), `${file} is documented`);
    const used = new Set<string>();
    for (const text of [source('bootstrap.sh'), source('watchdog.sh'), source('job.ts')]) {
      for (const match of text.matchAll(/(?:\$POD\/|F\.)([A-Za-z.]+)/g)) used.add(match[1] ?? '');
    }
    const known = new Set([...names].concat(Object.keys(POD_FILES)));
    for (const name of used) {
      const base = name.replace(/\.+$/, '').replace(/\.tmp$/, '');
      assert.ok(known.has(base), `${name} is a protocol file`);
    }
    for (const name of Object.values(POD_ENV)) assert.ok(doc.includes(`\`${name}\``), `${name} is documented`);
    assert.equal(podPath('/var/lib/runpod-operator/u1', 'jobExit'), '/var/lib/runpod-operator/u1/job.exit');
  });
});
