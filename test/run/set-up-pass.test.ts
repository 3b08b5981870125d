// A new run's set-up steps (finalizer, SSH keys, GPU catalog) and its create are one reconcile, against
// a real kube-apiserver and the simulator: with many runs applied at once, each create waits for one
// turn of the queue, not four; a ready pod's keepPod and its job start are one reconcile too. Each ends with
// the leak check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { finalizer } from '../../src/api/runpodrun.ts';
import { createLogger } from '../../src/log.ts';
import { countRequests, simStats } from '../runpod-sim/client.ts';
import { watchApiRequests } from '../support/api-requests.ts';
import { reconcilerWorld } from './reconciler-world.ts';

const apiKey = 'rpa_SET_UP_PASS_KEY_0123456789ab';

test('one reconcile of a new run adds its finalizer, makes its SSH keys, reads the catalog and sends its create', async () => {
  const world = await reconcilerWorld('set-up-pass', apiKey, { pollIntervalMs: 1000, ambiguousLookupMs: 2000 });
  const { namespace, sim } = world;
  for (const name of ['stepped', 'whole']) await world.createRun(name, { job: { command: ['sleep', '600'] } });
  const { reconciler, accounts } = world.reconciler();
  try {
    // The account's pod list is in: decide creates nothing before one.
    const observer = accounts.get(apiKey).observer;
    for (let wait = 0; wait < 200 && !observer.snapshot; wait++) await delay(50);
    assert.ok(observer.snapshot, 'the account has a pod list');

    // Stepped (as a test may), a reconcile takes one step: the finalizer.
    await reconciler.reconcile(`${namespace}/stepped`, { oneStep: true });
    assert.ok((await world.get('stepped')).metadata.finalizers?.includes(finalizer));
    assert.equal(countRequests(await simStats(sim.adminUrl), 'POST', '/v2/pods'), 0, 'one step: no create yet');

    // What the passes cost the API server (their share of what it serves when many runs arrive at once).
    const requests = watchApiRequests();
    try {
      await reconciler.reconcile(`${namespace}/whole`);
    } finally {
      requests.stop();
    }
    const seen = JSON.stringify(Object.fromEntries(requests.counts));
    // The key's Secret once, the SSH Secret once: after the step that made it, the pass goes on with
    // the keys it wrote, not a read of them.
    assert.equal(requests.of('GET secrets'), 2, `Secrets read: ${seen}`);
    // The run once: after its finalizer, the pass goes on with the run the finalizer's write returned.
    assert.equal(requests.of('GET runpodruns'), 1, `runs read: ${seen}`);
    const run = await world.get('whole');
    assert.ok(run.metadata.finalizers?.includes(finalizer), 'finalizer');
    await world.core.readNamespacedSecret({ namespace, name: 'whole-ssh' });
    assert.equal(countRequests(await simStats(sim.adminUrl), 'POST', '/v2/pods'), 1, 'the create went in the same reconcile');
    assert.ok(run.status?.pod?.id, `the pod is recorded: ${JSON.stringify(run.status)}`);

  } finally {
    await world.close();
  }
});

test('a ready pod\'s keepPod is set and its job started in one reconcile, not one turn of the queue apart', async () => {
  const world = await reconcilerWorld('keep-then-start', apiKey, { pollIntervalMs: 1000, ambiguousLookupMs: 2000 });
  await world.createRun('ready', { job: { command: ['sleep', '600'] } });
  const { reconciler } = world.reconciler();
  // The steps each reconcile took, from its debug lines.
  const calls: string[][] = [];
  const log = createLogger('debug', { write: (line: string) => {
    const { msg, action } = JSON.parse(line) as { msg: string; action?: string };
    if (msg === 'reconcile step' && action) calls.at(-1)?.push(action);
  } });
  try {
    const until = Date.now() + 120_000;
    while (!(await world.get('ready')).status?.job?.startedAt) {
      assert.ok(Date.now() < until, `the job never started: ${JSON.stringify(calls)}`);
      calls.push([]);
      await reconciler.reconcile(`${world.namespace}/ready`, { log });
      await delay(200);
    }
    const keepCall = calls.find((steps) => steps.includes('setKeep'));
    assert.deepEqual(keepCall?.slice(keepCall.indexOf('setKeep')), ['setKeep', 'startJob'], `the reconciles' steps: ${JSON.stringify(calls)}`);
  } finally {
    await world.close();
  }
});
