// Status writer and finalizer helpers against a real kube-apiserver and the RunpodRun CRD.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { ConflictError, isConflict } from '../../src/kube/errors.ts';
import { addFinalizer, removeFinalizer } from '../../src/kube/finalizers.ts';
import { changeOf, StatusWriter } from '../../src/kube/status.ts';
import { createTestNamespace, testCluster } from '../support/cluster.ts';
import { rpr, testRun, type TestRun } from './helpers.ts';

async function setup(prefix: string) {
  const ns = await createTestNamespace(prefix);
  const { kubeConfig } = await testCluster();
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const created = (await api.createNamespacedCustomObject({ ...rpr, namespace: ns, body: testRun(ns, 'run') })) as TestRun;
  const get = async () => (await api.getNamespacedCustomObject({ ...rpr, namespace: ns, name: 'run' })) as TestRun;
  return { ns, api, created, get, writer: new StatusWriter({ kubeConfig, resource: rpr }) };
}

const status1 = {
  observedGeneration: 1,
  phase: 'Provisioning',
  reason: 'Provisioning',
  message: 'trying NVIDIA A40',
  attempts: [{ name: 'run-1', gpuType: 'NVIDIA A40', time: '2026-11-29T10:00:00Z', outcome: 'Pending' }],
};

void test('writes the status through /status, then only when it changed', async () => {
  const { created, get, writer } = await setup('status-write');
  const first = await writer.write(created, status1);
  assert.equal(first.written, true);
  assert.deepEqual((await get()).status, status1);
  assert.notEqual(first.object.metadata.resourceVersion, created.metadata.resourceVersion);

  // Same content, other key order, an undefined member: nothing to write.
  const reordered = { attempts: status1.attempts, message: status1.message, reason: status1.reason, phase: status1.phase, observedGeneration: 1, startTime: undefined };
  const second = await writer.write(first.object, reordered);
  assert.equal(second.written, false);
  assert.equal(second.object, first.object);
  assert.equal((await get()).metadata.resourceVersion, first.object.metadata.resourceVersion, 'no write happened');
});

void test('removed fields and array elements are really removed', async () => {
  const { created, get, writer } = await setup('status-remove');
  const { object } = await writer.write(created, status1);
  const next = { observedGeneration: 1, phase: 'Failed', reason: 'NoCapacity', attempts: [] as unknown[] };
  const { written } = await writer.write(object, next);
  assert.equal(written, true);
  const stored = (await get()).status ?? {};
  assert.equal(stored.message, undefined, 'message removed');
  assert.deepEqual(stored.attempts ?? [], [], 'attempts emptied');
  assert.equal(stored.phase, 'Failed');
});

void test('a stale resourceVersion is a ConflictError, and nothing is overwritten', async () => {
  const { api, ns, created, get, writer } = await setup('status-conflict');
  const { object: fresh } = await writer.write(created, status1);
  // Someone else changes the object after we read `fresh`.
  await api.patchNamespacedCustomObject({ ...rpr, namespace: ns, name: 'run', body: { metadata: { labels: { touched: 'yes' } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  await assert.rejects(writer.write(fresh, { ...status1, phase: 'Running' }), (err: unknown) => err instanceof ConflictError && isConflict(err));
  assert.equal((await get()).status?.phase, 'Provisioning');
});

void test('update: a 409 re-reads the object and re-applies the change, keeping the other writer\'s', async () => {
  const { api, ns, created, get, writer } = await setup('status-update');
  const { object: before } = await writer.write(created, status1);
  // What a step learned from `before`: the attempt got its pod.
  const learned = { ...status1, attempts: [{ ...status1.attempts[0], outcome: 'Created', podId: 'pod-1' }] };
  // Between our read and our write, another writer changes the status and the object (a new resourceVersion).
  await api.patchNamespacedCustomObjectStatus({ ...rpr, namespace: ns, name: 'run', body: { status: { message: 'someone else' } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  await api.patchNamespacedCustomObject({ ...rpr, namespace: ns, name: 'run', body: { metadata: { labels: { touched: 'yes' } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  let conflicts = 0;
  const result = await writer.update(before, changeOf(before.status, learned), get, { onConflict: () => conflicts++ });
  assert.equal(conflicts, 1, 'the first write met the 409');
  assert.equal(result.written, true);
  const stored = (await get()).status ?? {};
  assert.deepEqual(stored.attempts, learned.attempts, 'what the step learned is stored');
  assert.equal(stored.message, 'someone else', 'the other writer\'s change is kept');
});

void test('update: gives up with the ConflictError after its attempts', async () => {
  const { api, ns, created, writer } = await setup('status-update-busy');
  const { object: before } = await writer.write(created, status1);
  const bump = async () => {
    await api.patchNamespacedCustomObject({ ...rpr, namespace: ns, name: 'run', body: { metadata: { labels: { n: String(Math.random()).slice(2) } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  };
  await bump();
  // Every re-read returns a copy that is already stale again.
  const staleRead = async () => { const copy = await api.getNamespacedCustomObject({ ...rpr, namespace: ns, name: 'run' }) as TestRun; await bump(); return copy; };
  await assert.rejects(writer.update(before, changeOf(before.status, { ...status1, phase: 'Running' }), staleRead, { attempts: 3 }), ConflictError);
});

void test('refuses to write without a resourceVersion (the precondition is the point)', async () => {
  const { created, writer } = await setup('status-norv');
  await assert.rejects(writer.write({ ...created, metadata: { ...created.metadata, resourceVersion: undefined } }, status1), /resourceVersion/);
});

void test('addFinalizer / removeFinalizer keep other finalizers and detect concurrent edits', async () => {
  const { api, ns, created, get } = await setup('finalizers');
  const f = 'runpod-operator.dev/cleanup';
  const added = await addFinalizer(api, rpr, created, f);
  assert.deepEqual((await get()).metadata.finalizers, [f]);
  assert.equal(await addFinalizer(api, rpr, added, f), added, 'already there: no write');

  // Someone adds their own finalizer; our stale copy must not drop it.
  await api.patchNamespacedCustomObject({ ...rpr, namespace: ns, name: 'run', body: { metadata: { finalizers: [f, 'example.com/other'] } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  await assert.rejects(removeFinalizer(api, rpr, added, f), ConflictError);
  assert.deepEqual((await get()).metadata.finalizers, [f, 'example.com/other']);

  const removed = await removeFinalizer(api, rpr, await get(), f);
  assert.deepEqual(removed?.metadata.finalizers, ['example.com/other']);
  assert.deepEqual((await get()).metadata.finalizers, ['example.com/other']);
});

void test('removing the last finalizer of a deleted object lets it go; again is harmless', async () => {
  const { api, ns, created, get } = await setup('finalizers-delete');
  const f = 'runpod-operator.dev/cleanup';
  await addFinalizer(api, rpr, created, f);
  await api.deleteNamespacedCustomObject({ ...rpr, namespace: ns, name: 'run' });
  const deleting = await get();
  assert.ok((deleting.metadata as { deletionTimestamp?: string }).deletionTimestamp, 'held by the finalizer');
  assert.equal(await addFinalizer(api, rpr, deleting, 'example.com/late'), deleting, 'no new finalizer on a deleting object');
  await removeFinalizer(api, rpr, deleting, f);
  await assert.rejects(get(), (err: unknown) => (err as { code?: number }).code === 404);
  assert.equal(await removeFinalizer(api, rpr, deleting, f), undefined, 'already gone: undefined, no error');
});
