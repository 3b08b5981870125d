// The event recorder against a real kube-apiserver: what it writes, and how it de-duplicates.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CustomObjectsApi, EventsV1Api, type EventsV1Event } from '@kubernetes/client-node';
import { EventRecorder, truncateBytes, type EventRecorderOptions, type Regarding } from '../../src/kube/events.ts';
import { registerSecret } from '../../src/log.ts';
import { createTestNamespace, testCluster } from '../support/cluster.ts';
import { FakeClock } from './fake-clock.ts';
import { captureLogger } from './log-capture.ts';
import { rpr, testRun } from './helpers.ts';

async function setup(prefix: string, extra: Partial<EventRecorderOptions> = {}) {
  const ns = await createTestNamespace(prefix);
  const { kubeConfig } = await testCluster();
  const run = (await kubeConfig.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({ ...rpr, namespace: ns, body: testRun(ns, 'run') })) as Regarding;
  const { log, lines } = captureLogger();
  const clock = new FakeClock();
  const recorder = new EventRecorder({ kubeConfig, logger: log, reportingInstance: 'test-pod-1', clock, ...extra });
  const events = async (): Promise<EventsV1Event[]> =>
    (await kubeConfig.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: ns })).items;
  return { ns, run, recorder, events, lines, clock };
}

void test('creates an events.k8s.io/v1 Event with every required field', async () => {
  const { ns, run, recorder, events } = await setup('events-fields');
  recorder.record(run, { type: 'Normal', reason: 'PodCreated', action: 'CreatePod', note: 'created pod run-1 (NVIDIA A40)' });
  await recorder.flush();
  const [event, ...rest] = await events();
  assert.equal(rest.length, 0);
  assert.ok(event);
  assert.equal(event.reportingController, 'runpod-operator.dev/controller');
  assert.equal(event.reportingInstance, 'test-pod-1');
  assert.equal(event.action, 'CreatePod');
  assert.equal(event.reason, 'PodCreated');
  assert.equal(event.type, 'Normal');
  assert.equal(event.note, 'created pod run-1 (NVIDIA A40)');
  assert.match(String(event.eventTime), /\.\d{6}Z$/, 'eventTime is a MicroTime');
  assert.deepEqual(
    { kind: event.regarding?.kind, apiVersion: event.regarding?.apiVersion, name: event.regarding?.name, namespace: event.regarding?.namespace, uid: event.regarding?.uid },
    { kind: 'RunpodRun', apiVersion: 'runpod-operator.dev/v1alpha1', name: 'run', namespace: ns, uid: run.metadata?.uid },
  );
  assert.match(event.metadata?.name ?? '', /^run\.[0-9a-f]+$/);
  assert.equal(event.series, undefined, 'a single occurrence has no series');
  assert.deepEqual(recorder.stats(), { created: 1, patched: 0, dropped: 0, failed: 0 });
});

void test('repeats become one Event with a series count, patched on a schedule', async () => {
  const { run, recorder, events, clock } = await setup('events-series', { seriesPatchIntervalMs: 5000 });
  const warn = { type: 'Warning', reason: 'NoCapacity', action: 'CreatePod', note: 'no NVIDIA A40 in stock' } as const;
  recorder.record(run, warn);
  await recorder.flush(); // the create is done
  for (let i = 0; i < 4; i++) recorder.record(run, warn);
  assert.equal((await events())[0]?.series, undefined, 'not patched before the interval');
  clock.advance(5000); // the patch falls due
  await recorder.flush();
  let all = await events();
  assert.equal(all.length, 1);
  assert.equal(all[0]?.series?.count, 5);
  assert.match(String(all[0]?.series?.lastObservedTime), /\.\d{6}Z$/);

  recorder.record(run, warn);
  await recorder.flush(); // flush writes a pending series at once
  all = await events();
  assert.equal(all.length, 1);
  assert.equal(all[0]?.series?.count, 6);
  assert.deepEqual(recorder.stats(), { created: 1, patched: 2, dropped: 0, failed: 0 });
  await recorder.close();
});

void test('a different note, reason or object is a different Event; a repeat after the window starts a new one', async () => {
  const { ns, run, recorder, events, clock } = await setup('events-keys', { seriesWindowMs: 60_000 });
  recorder.record(run, { type: 'Normal', reason: 'Provisioning', note: 'trying NVIDIA A40' });
  recorder.record(run, { type: 'Normal', reason: 'Provisioning', note: 'trying NVIDIA L4' });
  recorder.record(run, { type: 'Normal', reason: 'Other', note: 'trying NVIDIA L4' });
  recorder.record({ ...run, metadata: { ...run.metadata, name: 'other', uid: 'uid-2' } }, { type: 'Normal', reason: 'Provisioning', note: 'trying NVIDIA L4' });
  await recorder.flush();
  assert.equal((await events()).length, 4);
  clock.advance(60_000);
  recorder.record(run, { type: 'Normal', reason: 'Provisioning', note: 'trying NVIDIA A40' });
  await recorder.flush();
  assert.equal((await events()).length, 5);
  assert.ok((await events()).every((e) => e.metadata?.namespace === ns));
  await recorder.close();
});

void test('notes are redacted and cut to 1 kB', async () => {
  const { run, recorder, events } = await setup('events-redact');
  registerSecret('rp_FAKEKEY_1234567890abcdef');
  recorder.record(run, { type: 'Warning', reason: 'CredentialsRejected', note: 'Runpod said 401 for key rp_FAKEKEY_1234567890abcdef' });
  recorder.record(run, { type: 'Warning', reason: 'Long', note: 'é'.repeat(3000) });
  await recorder.flush();
  const all = await events();
  const rejected = all.find((e) => e.reason === 'CredentialsRejected');
  assert.equal(rejected?.note, 'Runpod said 401 for key [REDACTED]');
  const long = all.find((e) => e.reason === 'Long');
  assert.ok(long?.note && Buffer.byteLength(long.note) <= 1024 && long.note.endsWith('…'));
});

void test('the token bucket drops what goes over the budget', async () => {
  const { run, recorder, events, clock } = await setup('events-limit', { ratePerSecond: 1, burst: 2 });
  for (let i = 0; i < 5; i++) recorder.record(run, { type: 'Normal', reason: 'Step', note: `step ${i}` });
  await recorder.flush();
  assert.equal((await events()).length, 2);
  assert.equal(recorder.stats().dropped, 3);
  clock.advance(1000);
  recorder.record(run, { type: 'Normal', reason: 'Step', note: 'step 9' });
  await recorder.flush();
  assert.equal((await events()).length, 3);
});

void test('never throws: a bad object or a failing API call is logged and counted', async () => {
  const { recorder, lines } = await setup('events-fail');
  assert.doesNotThrow(() => recorder.record({ metadata: {} }, { type: 'Normal', reason: 'X', note: 'no name' }));
  recorder.record({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'no-such-namespace-here', uid: 'u' } }, { type: 'Normal', reason: 'X', note: 'namespace missing' });
  await recorder.flush();
  assert.equal(recorder.stats().failed, 2);
  assert.equal(lines.filter((l) => l.level === 'warn').length, 2);
});

void test('truncateBytes keeps whole characters', () => {
  assert.equal(truncateBytes('short', 10), 'short');
  const cut = truncateBytes('ab€€€€', 8);
  assert.ok(Buffer.byteLength(cut) <= 8);
  assert.equal(cut, 'ab€…');
});
