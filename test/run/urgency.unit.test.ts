// Which run goes first when many are ready: the table of urgencyOf, then the measured defect it
// fixes. After a restart the reflector's first list queued every run in name order, and a worker
// reached the run whose results waited on a billing pod only after every ended run before it (chaos
// seed 24, N=100: leader terms of 10-18 s never reached it; its pod hit the deadline, results lost).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RunpodRun } from '../../src/api/runpodrun.ts';
import type { RunpodRunStatus } from '../../src/api/status.ts';
import { Controller } from '../../src/kube/controller.ts';
import { createLogger } from '../../src/log.ts';
import { URGENCY, urgencyOf } from '../../src/run/urgency.ts';
import { at, t0 } from './fixture.ts';

const spec = { credentials: { secretName: 'runpod' }, image: 'img', gpu: { types: ['A'] }, job: { command: ['true'] }, limits: { maxRuntimeSeconds: 600 } };
const livePod = { id: 'p1', name: 'r-1', state: 'RUNNING', deadline: at(600).toISOString() };
const gonePod = { ...livePod, state: 'Deleted' };

function run(name: string, status: RunpodRunStatus | undefined, extra: { cancel?: boolean; deleting?: boolean } = {}): RunpodRun {
  return {
    apiVersion: 'runpod-operator.dev/v1alpha1', kind: 'RunpodRun',
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, ...(extra.deleting ? { deletionTimestamp: t0.toISOString() } : {}) },
    spec: { ...spec, ...(extra.cancel ? { cancel: true } : {}) },
    ...(status ? { status } : {}),
  };
}

const rows: [string, RunpodRun | undefined, number][] = [
  ['a run no longer in the store (its finalizer done)', undefined, URGENCY.working],
  ['a new run', run('r', undefined), URGENCY.working],
  ['provisioning, nothing sent', run('r', { phase: 'Provisioning' }), URGENCY.working],
  ['a create recorded, its answer not yet in', run('r', { phase: 'Provisioning', attempts: [{ name: 'r-1', gpuType: 'A', time: t0.toISOString(), outcome: 'Pending' }] }), URGENCY.billing],
  ['a create whose answer was lost', run('r', { phase: 'Provisioning', attempts: [{ name: 'r-1', gpuType: 'A', time: t0.toISOString(), outcome: 'Ambiguous' }] }), URGENCY.billing],
  ['a job running on a live pod', run('r', { phase: 'Running', pod: livePod, job: { startedAt: t0.toISOString() } }), URGENCY.working],
  ['the job over, results not yet in', run('r', { phase: 'Retrieving', pod: livePod, job: { startedAt: t0.toISOString(), finishedAt: t0.toISOString() } }), URGENCY.billing],
  ['a live pod past its deadline', run('r', { phase: 'Running', pod: { ...livePod, deadline: at(-1).toISOString() } }), URGENCY.billing],
  ['a live pod of a cancelled run', run('r', { phase: 'Running', pod: livePod }, { cancel: true }), URGENCY.billing],
  ['a live pod of a deleted run', run('r', { phase: 'Running', pod: livePod }, { deleting: true }), URGENCY.billing],
  ['ended, its pod still being deleted', run('r', { phase: 'Failed', pod: { ...livePod, state: 'Deleting' } }), URGENCY.billing],
  ['ended, its pod confirmed gone', run('r', { phase: 'Succeeded', pod: gonePod }), URGENCY.settled],
  ['ended before any pod', run('r', { phase: 'Failed', reason: 'InvalidSpec' }), URGENCY.settled],
  ['ended and deleted: its finalizer has work', run('r', { phase: 'Succeeded', pod: gonePod }, { deleting: true }), URGENCY.working],
];

for (const [name, subject, expected] of rows) {
  test(`urgency: ${name}`, () => assert.equal(urgencyOf(subject, t0), expected));
}

test('after a restart, the run whose results wait on its pod is reconciled before the ended runs listed ahead of it', async () => {
  const store = new Map<string, RunpodRun>();
  for (let i = 0; i < 50; i++) store.set(`ns/a-${String(i).padStart(2, '0')}`, run(`a-${i}`, { phase: 'Succeeded', pod: gonePod }));
  store.set('ns/m-running', run('m-running', { phase: 'Running', pod: livePod, job: { startedAt: t0.toISOString() } }));
  store.set('ns/z-results', run('z-results', { phase: 'Retrieving', pod: livePod, job: { startedAt: t0.toISOString(), finishedAt: t0.toISOString() } }));
  const order: string[] = [];
  const controller = new Controller({
    name: 'runs', log: createLogger('silent'), maxConcurrentReconciles: 1,
    reconcile: (key) => { order.push(key); return Promise.resolve(); },
    priorityOf: (key) => urgencyOf(store.get(key), t0),
  });
  // As the reflector's first list does: every run, in name order, before a worker takes one.
  for (const key of [...store.keys()].sort()) controller.enqueue(key);
  controller.start();
  while (order.length < store.size) await new Promise((resolve) => setImmediate(resolve));
  await controller.stop();
  assert.deepEqual(order.slice(0, 3), ['ns/z-results', 'ns/m-running', 'ns/a-00']);
});
