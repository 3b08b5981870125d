// A run's whole life end to end: the job on a real (simulated) pod, results verified into the store,
// the pod deleted; the watchdog's guarantees with the controller stopped. Every test ends with the
// leak check (world.stop()).
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { simPods } from '../runpod-sim/client.ts';
import { kubectl } from '../support/kubectl.ts';
import { hasCondition, runManifest, testApiKey, withWorld } from '../support/operator.ts';
import { consistently, eventually } from '../support/eventually.ts';

const job = (script: string, spec: Record<string, unknown> = {}) => ({ job: { command: ['sh', '-c', script] }, results: { path: 'output' }, ...spec });
const ended = (run: { status?: { phase?: string } }) => run.status?.phase === 'Succeeded' || run.status?.phase === 'Failed';
/** The simulator's pods, once none is alive: with the controller stopped, only the watchdog deletes. */
const watchdogDeleted = (adminUrl: string) => eventually('the watchdog to delete the pod', async () => {
  const pods = await simPods(adminUrl);
  return !pods.some((pod) => pod.deletedAt === null) && pods;
}, 60_000, 500);

describe('a run\'s life', { concurrency: true }, () => {
  test('success: several result files verified into the store, the pod deleted, secrets nowhere', () =>
    withWorld('success', async (world) => {
      await kubectl(['create', 'secret', 'generic', 'hf', '-n', world.namespace, '--from-literal=token=hf_SECRET_TOKEN_0123456789']);
      await kubectl(['create', 'configmap', 'cfg', '-n', world.namespace, '--from-literal=config.yaml=lr: 0.001']);
      const script = 'mkdir -p output/nested && cp config.yaml output/ && echo "$GREETING" > output/hello.txt'
        + ' && seq 1 5000 > "output/nested/num bers.txt" && test -n "$HF_TOKEN" && echo job done';
      await world.apply(runManifest('success', {
        job: {
          command: ['sh', '-c', script],
          env: [{ name: 'GREETING', value: 'hello world' }, { name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } }],
          files: [{ path: 'config.yaml', configMapKeyRef: { name: 'cfg', key: 'config.yaml' } }],
        },
        results: { path: 'output' },
      }));
      const run = await world.waitForRun('success', 'Succeeded', ended, 90_000);
      assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
      assert.equal(run.status?.job?.exitCode, 0);
      assert.ok(hasCondition(run, 'Complete') && hasCondition(run, 'Ready') && hasCondition(run, 'ResultsRetrieved'));
      assert.equal(run.status?.results?.files, 3);
      const location = run.status?.results?.location ?? '';
      assert.equal(readFileSync(join(location, 'results', 'hello.txt'), 'utf8'), 'hello world\n');
      assert.equal(readFileSync(join(location, 'results', 'config.yaml'), 'utf8'), 'lr: 0.001');
      assert.equal(readFileSync(join(location, 'results', 'nested', 'num bers.txt'), 'utf8').split('\n')[4999], '5000');
      assert.match(readFileSync(join(location, 'job.log'), 'utf8'), /job done/);
      assert.ok(!readdirSync(join(location, '..')).some((name) => name.includes('.partial-')), 'no staging left');
      const pods = await simPods(world.sim.adminUrl);
      assert.equal(pods.length, 1);
      assert.ok(pods[0]?.deletedAt, 'the pod is deleted once the results are verified');
      assert.equal(run.status?.pod?.state, 'Deleted');
      // Secrets: not in the status, the events, the controller's logs or the pod's create env.
      const events = await kubectl(['get', 'events.events.k8s.io', '-n', world.namespace, '-o', 'json']);
      for (const [where, text] of [['status', JSON.stringify(run)], ['events', events.stdout], ['logs', world.logLines.join('\n')], ['create env', JSON.stringify(pods[0]?.env)]] as const) {
        assert.ok(!text.includes('hf_SECRET_TOKEN_0123456789'), `the job secret is in the ${where}`);
        assert.ok(!text.includes(testApiKey), `the Runpod key is in the ${where}`);
      }
      assert.match(events.stdout, /Succeeded/);
      await world.deleteRun('success');
    }));

  test('exit code 3: Failed/JobFailed with the code, results still retrieved', () =>
    withWorld('exit3', async (world) => {
      await world.apply(runManifest('exit3', job('mkdir -p output && echo partial > output/p.txt && echo failing >&2 && exit 3')));
      const run = await world.waitForRun('exit3', 'Failed', ended, 90_000);
      assert.equal(run.status?.reason, 'JobFailed');
      assert.equal(run.status?.job?.exitCode, 3);
      assert.match(run.status?.message ?? '', /code 3/);
      assert.equal(run.status?.results?.files, 1);
      assert.ok(hasCondition(run, 'Failed') && hasCondition(run, 'Stalled'));
      const events = await kubectl(['get', 'events.events.k8s.io', '-n', world.namespace, '-o', 'json']);
      assert.match(events.stdout, /exited with code 3; last lines of its log:\\nfailing/, 'the log tail is in an event');
      await world.deleteRun('exit3');
    }));

  test('a result file changing after the manifest: not retrieved, the pod kept, retried until verified', () =>
    withWorld('unverified', async (world) => {
      // The job exits while a detached writer keeps appending to a result for 20 s: long enough that the
      // first retrieval meets it on a loaded machine (6 s was not, with the suite's files side by side).
      // Ten lines a second (a busy loop here starved the other pods of the machine), to a file of 5 MB:
      // hashing and downloading it take longer than the gap between two appends, so no try can fall
      // between two of them (on a quiet machine a small file's whole try did, and verified at once).
      const writer = 'end=$(($(date +%s) + 20)); while [ $(date +%s) -lt $end ]; do echo line >> output/growing.txt; sleep 0.1; done; echo done >> output/growing.txt';
      await world.apply(runManifest('unverified', job(`mkdir -p output && yes line | head -n 1000000 > output/growing.txt && (setsid sh -c '${writer}' >/dev/null 2>&1 &) && sleep 0.5`)));
      const unverified = await world.waitForRun('unverified', 'ResultsUnverified', (r) => r.status?.reason === 'ResultsUnverified' || ended(r), 90_000);
      assert.equal(unverified.status?.reason, 'ResultsUnverified', 'the changing file must be caught');
      const alive = (await simPods(world.sim.adminUrl)).filter((pod) => pod.deletedAt === null);
      assert.equal(alive.length, 1, 'the pod stays while results are unverified');
      const run = await world.waitForRun('unverified', 'Succeeded', ended, 120_000);
      assert.equal(run.status?.phase, 'Succeeded');
      // A retry may fall between two appends: what is verified is one consistent state of the file, the
      // final one or an earlier one, never a torn line.
      const lines = readFileSync(join(run.status?.results?.location ?? '', 'results', 'growing.txt'), 'utf8').split('\n');
      assert.equal(lines.pop(), '', 'the file ends with a whole line');
      if (lines.at(-1) === 'done') lines.pop();
      assert.ok(lines.length >= 1_000_000 && lines.every((line) => line === 'line'), 'a whole state of the file');
      await world.deleteRun('unverified');
    }));

  test('keepPod keeps the pod after success; deleting the run removes it', () =>
    withWorld('keep', async (world) => {
      await world.apply(runManifest('keep', job('mkdir -p output && echo kept > output/k.txt', { keepPod: true })));
      const run = await world.waitForRun('keep', 'Succeeded', ended, 90_000);
      assert.equal(run.status?.phase, 'Succeeded');
      await consistently('the kept pod alive', async () => (await simPods(world.sim.adminUrl)).filter((pod) => pod.deletedAt === null).length === 1, 3000, 250);
      await world.deleteRun('keep');
      assert.ok((await simPods(world.sim.adminUrl)).every((pod) => pod.deletedBy === 'account'));
    }));

  test('cancel mid-job: the job is stopped, what exists is retrieved, the pod deleted: Failed/Cancelled', () =>
    withWorld('cancel', async (world) => {
      await world.apply(runManifest('cancel', job('mkdir -p output && echo early > output/early.txt && sleep 300')));
      await world.waitForRun('cancel', 'JobRunning', (r) => r.status?.reason === 'JobRunning', 60_000);
      assert.equal((await kubectl(['patch', 'rpr', 'cancel', '-n', world.namespace, '--type', 'merge', '-p', '{"spec":{"cancel":true}}'])).status, 0);
      const run = await world.waitForRun('cancel', 'Cancelled', (r) => r.status?.reason === 'Cancelled' && r.status.pod?.state === 'Deleted', 90_000);
      assert.equal(run.status?.phase, 'Failed');
      assert.ok(existsSync(join(run.status?.results?.location ?? '', 'results', 'early.txt')), 'what existed was retrieved');
      await world.deleteRun('cancel');
    }));

  test('deadline reached with the controller stopped: the watchdog deletes the pod; restarted, the run is DeadlineExceeded', () =>
    withWorld('deadline', async (world) => {
      // 45 s: on a loaded machine (the suite, five files at once) boot, readiness and the watchdog's verdict took over 30.
      await world.apply(runManifest('deadline', job('sleep 600', { limits: { maxRuntimeSeconds: 45, readyTimeoutSeconds: 30 } })));
      await world.waitForRun('deadline', 'JobRunning', (r) => r.status?.reason === 'JobRunning', 60_000);
      await world.stopController();
      const [pod] = await watchdogDeleted(world.sim.adminUrl);
      assert.equal(pod?.deletedBy, 'pod', 'the watchdog deleted its own pod');
      assert.ok(Date.parse(pod?.deletedAt ?? '') - Date.parse(pod?.createdAt ?? '') <= 45_000 + 10_000, 'at the deadline, give or take a watchdog period on a loaded machine');
      await world.startController();
      const run = await world.waitForRun('deadline', 'Failed', ended, 60_000);
      assert.equal(run.status?.reason, 'DeadlineExceeded');
      await world.deleteRun('deadline');
    }, { watchdogPeriod: '1s' }));

  test('no job started within the boot grace (controller stopped): the watchdog deletes the pod', () =>
    withWorld('boot', async (world) => {
      await world.apply(runManifest('boot', job('true', { limits: { maxRuntimeSeconds: 600, bootGraceSeconds: 30, readyTimeoutSeconds: 60 } })));
      await world.waitForRun('boot', 'created', (r) => r.status?.pod?.id !== undefined);
      await world.stopController();
      const [pod] = await watchdogDeleted(world.sim.adminUrl);
      assert.equal(pod?.deletedBy, 'pod');
      await world.startController();
      // The pod was never listed before the stop: the list-lag tolerance (30 s in testTimings), then
      // three 404s 5 s apart and a later list without it, before the controller may call it gone.
      const run = await world.waitForRun('boot', 'Failed', ended, 150_000);
      assert.equal(run.status?.reason, 'BootTimeout');
      await world.deleteRun('boot');
    }, { watchdogPeriod: '1s' }));

  test('cost cap: the pod is deleted once its spend reaches maxCostUsd', () =>
    withWorld('costcap', async (world) => {
      // $36/h: one cent every second.
      await world.apply(runManifest('costcap', job('sleep 600', { gpu: { types: ['NVIDIA H100 80GB HBM3'] }, limits: { maxRuntimeSeconds: 600, maxCostUsd: '0.10' } })));
      const run = await world.waitForRun('costcap', 'Failed', ended, 90_000);
      assert.equal(run.status?.reason, 'CostCapReached', JSON.stringify(run.status));
      await world.waitForRun('costcap', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 30_000);
      await world.deleteRun('costcap');
    }, { watchdogPeriod: '1s', sim: { gpuTypes: [{ id: 'NVIDIA H100 80GB HBM3', displayName: 'H100', memoryInGb: 80, pricePerHour: 36, stock: { 'EU-RO-1': 4 } }] } }));
});
