// What the runtime reports to its observers (the metrics' source): results in controller-runtime's
// labels, queue adds/retries/hand-outs, and the in-flight reconciles the health check judges.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { Controller, TerminalError, type ReconcileContext } from '../../src/kube/controller.ts';
import type { QueueObserver, ReconcileResultLabel } from '../../src/kube/instrumentation.ts';
import { WorkQueue } from '../../src/kube/queue.ts';
import { FakeClock, settle } from './fake-clock.ts';
import { captureLogger } from './log-capture.ts';

function recordingQueueObserver() {
  const seen = { added: 0, retried: 0, handedOut: [] as number[], finished: [] as number[] };
  const observer: QueueObserver = {
    added: () => void seen.added++,
    retried: () => void seen.retried++,
    handedOut: (s) => void seen.handedOut.push(s),
    finished: (s) => void seen.finished.push(s),
  };
  return { seen, observer };
}

void test('the queue reports adds (not duplicates), time queued, work time and retries', async () => {
  const clock = new FakeClock();
  const { seen, observer } = recordingQueueObserver();
  const q = new WorkQueue({ clock, observer, baseDelayMs: 1000 });
  q.add('a');
  q.add('a');
  q.add('b');
  assert.equal(seen.added, 2, 'a duplicate of a waiting key is no add');
  clock.advance(3000);
  assert.equal(await q.get(), 'a');
  assert.deepEqual(seen.handedOut, [3], 'queued for 3 s by the fake clock');
  clock.advance(500);
  q.done('a');
  assert.deepEqual(seen.finished, [0.5]);
  q.addRateLimited('a');
  assert.equal(seen.retried, 1);
  clock.advance(1000);
  await settle();
  assert.equal(seen.added, 3, 'the retry became an add once its backoff passed');
  q.shutDown();
});

void test('the controller reports each result with controller-runtime\'s label, errors apart', async () => {
  const clock = new FakeClock();
  const results: { result: ReconcileResultLabel; error: string | undefined }[] = [];
  let nowOnce = 0;
  const answers: Record<string, () => Promise<{ requeueAfterMs?: number } | undefined>> = {
    'ns/ok': () => Promise.resolve(undefined),
    // Again at once, once (a requeue loop of pure microtasks would never let the test's timers run).
    'ns/now': () => Promise.resolve(nowOnce++ === 0 ? { requeueAfterMs: 0 } : undefined),
    'ns/later': () => Promise.resolve({ requeueAfterMs: 60_000 }),
    'ns/fail': () => Promise.reject(new Error('boom')),
    'ns/terminal': () => Promise.reject(new TerminalError('no')),
  };
  const controller = new Controller({
    name: 'test', log: captureLogger().log, queue: new WorkQueue({ clock }),
    reconcile: (key) => (answers[key] as () => Promise<{ requeueAfterMs?: number } | undefined>)(),
    observer: { reconciled: (result, _seconds, error) => void results.push({ result, error }) },
  });
  controller.start();
  for (const key of Object.keys(answers)) controller.enqueue(key);
  for (let i = 0; i < 20 && results.length < 6; i++) await settle();
  await controller.stop();
  assert.deepEqual(results, [
    { result: 'success', error: undefined },
    { result: 'requeue', error: undefined },
    { result: 'requeue_after', error: undefined },
    { result: 'error', error: 'retried' },
    { result: 'error', error: 'terminal' },
    { result: 'success', error: undefined },
  ]);
});

void test('inFlight() shows a blocked reconcile growing idle, and progress() resets its idle time', async () => {
  let ctxOf: ReconcileContext | undefined;
  let release!: () => void;
  const controller = new Controller({
    name: 'test', log: captureLogger().log,
    reconcile: (_key, ctx) => new Promise((resolve) => {
      ctxOf = ctx;
      release = () => resolve(undefined);
    }),
  });
  controller.start();
  controller.enqueue('ns/blocked');
  // Counted from when the reconcile began, which a loaded machine may start late.
  while (!ctxOf) await delay(5);
  await delay(120);
  const [blocked] = controller.inFlight();
  assert.equal(blocked?.key, 'ns/blocked');
  assert.ok(blocked.idleMs >= 100, `idle ${blocked.idleMs} ms`);
  ctxOf?.progress();
  const [after] = controller.inFlight();
  assert.ok((after?.idleMs ?? Infinity) < blocked.idleMs, 'progress reset the idle time');
  assert.ok((after?.runningMs ?? 0) >= blocked.runningMs, 'but not the running time');
  release();
  await controller.stop();
  assert.deepEqual(controller.inFlight(), []);
});
