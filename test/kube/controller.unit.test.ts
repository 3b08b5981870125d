import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiException } from '@kubernetes/client-node';
import { Controller, TerminalError, type ReconcileContext, type ReconcileResult } from '../../src/kube/controller.ts';
import { ConflictError } from '../../src/kube/errors.ts';
import { WorkQueue } from '../../src/kube/queue.ts';
import { FakeClock, settle } from './fake-clock.ts';
import { captureLogger } from './log-capture.ts';

/** A promise the test resolves by hand, to hold a reconcile in flight. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

function setup(reconcile: (key: string, ctx: ReconcileContext) => Promise<ReconcileResult | undefined>, workers = 1) {
  const clock = new FakeClock();
  const queue = new WorkQueue({ clock, baseDelayMs: 1000, maxDelayMs: 60_000 });
  const { log, lines } = captureLogger();
  const controller = new Controller({ name: 'test', reconcile, log, queue, maxConcurrentReconciles: workers });
  return { clock, queue, controller, lines };
}

void test('reconciles queued keys; a key re-added during its reconcile runs again after, not alongside', async () => {
  const seen: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const hold = gate();
  const { controller } = setup(async (key) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    seen.push(key);
    if (seen.length === 1) await hold.promise;
    inFlight--;
    return undefined;
  }, 4);
  controller.start();
  controller.enqueue('ns/a');
  await settle();
  controller.enqueue('ns/a');
  controller.enqueue('ns/a');
  await settle();
  assert.deepEqual(seen, ['ns/a'], 'not handed to a second worker while in flight');
  hold.open();
  await settle();
  await settle();
  assert.deepEqual(seen, ['ns/a', 'ns/a'], 'the two adds coalesced into one more reconcile');
  assert.equal(maxInFlight, 1);
  await controller.stop();
  assert.equal(controller.stats().reconciles.success, 2);
});

void test('runs up to maxConcurrentReconciles keys at once', async () => {
  const hold = gate();
  let inFlight = 0;
  let maxInFlight = 0;
  const { controller } = setup(async () => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    await hold.promise;
    inFlight--;
    return undefined;
  }, 3);
  controller.start();
  for (let i = 0; i < 10; i++) controller.enqueue(`ns/k${i}`);
  await settle();
  assert.equal(inFlight, 3);
  assert.equal(controller.stats().activeWorkers, 3);
  assert.equal(controller.stats().queueLength, 7);
  hold.open();
  await settle();
  await settle();
  assert.equal(maxInFlight, 3);
  assert.equal(controller.stats().reconciles.success, 10);
  await controller.stop();
});

void test('an error retries with per-key backoff; success forgets the failures', async () => {
  let calls = 0;
  const { controller, queue, clock, lines } = setup(() => {
    calls++;
    return calls <= 2 ? Promise.reject(new Error('boom')) : Promise.resolve(undefined);
  });
  controller.start();
  controller.enqueue('ns/a');
  await settle();
  assert.equal(calls, 1);
  assert.equal(queue.numRequeues('ns/a'), 1);
  clock.advance(999);
  await settle();
  assert.equal(calls, 1);
  clock.advance(1);
  await settle();
  assert.equal(calls, 2);
  assert.equal(queue.numRequeues('ns/a'), 2);
  clock.advance(2000);
  await settle();
  assert.equal(calls, 3);
  assert.equal(queue.numRequeues('ns/a'), 0);
  const errors = lines.filter((l) => l.level === 'error');
  assert.equal(errors.length, 2);
  assert.equal(errors[0]?.err, 'boom');
  assert.deepEqual(controller.stats().reconciles, { success: 1, requeue_after: 0, requeue_rate_limited: 0, error: 2, conflict: 0, terminal_error: 0 });
  await controller.stop();
});

void test('a 409 conflict requeues quietly (no error line) and is counted apart', async () => {
  let calls = 0;
  const conflictBody = JSON.stringify({ kind: 'Status', code: 409, reason: 'Conflict', message: 'the object has been modified' });
  const { controller, clock, lines } = setup(() => {
    calls++;
    if (calls === 1) return Promise.reject(new ApiException(409, 'HTTP-Code: 409', conflictBody, {}));
    if (calls === 2) return Promise.reject(new ConflictError('stale status'));
    return Promise.resolve(undefined);
  });
  controller.start();
  controller.enqueue('ns/a');
  await settle();
  clock.advance(1000);
  await settle();
  clock.advance(2000);
  await settle();
  assert.equal(calls, 3);
  assert.equal(lines.filter((l) => l.level === 'error' || l.level === 'warn').length, 0);
  assert.equal(controller.stats().reconciles.conflict, 2);
  assert.equal(controller.stats().reconciles.error, 0);
  await controller.stop();
});

void test('a TerminalError is logged and not retried', async () => {
  let calls = 0;
  const { controller, queue, clock, lines } = setup(() => {
    calls++;
    throw new TerminalError('spec cannot work'); // a synchronous throw is handled like a rejection
  });
  controller.start();
  controller.enqueue('ns/a');
  await settle();
  clock.advance(3_600_000);
  await settle();
  assert.equal(calls, 1);
  assert.equal(queue.delayedLen(), 0);
  assert.equal(queue.numRequeues('ns/a'), 0);
  assert.equal(lines.filter((l) => l.level === 'error').length, 1);
  assert.equal(controller.stats().reconciles.terminal_error, 1);
  await controller.stop();
});

void test('requeueAfterMs forgets the backoff and comes back after that long', async () => {
  let calls = 0;
  const { controller, queue, clock } = setup(() => {
    calls++;
    return calls === 1 ? Promise.reject(new Error('first fails')) : Promise.resolve({ requeueAfterMs: 30_000 });
  });
  controller.start();
  controller.enqueue('ns/a');
  await settle();
  clock.advance(1000);
  await settle();
  assert.equal(calls, 2);
  assert.equal(queue.numRequeues('ns/a'), 0);
  clock.advance(29_999);
  await settle();
  assert.equal(calls, 2);
  clock.advance(1);
  await settle();
  assert.equal(calls, 3);
  assert.equal(controller.stats().reconciles.requeue_after, 2);
  await controller.stop();
});

void test('requeueRateLimited comes back through the one per-key backoff (shared with errors, capped at atMostMs), reset by a result of another kind', async () => {
  const results: (ReconcileResult | Error)[] = [
    new Error('fails once'), { requeueRateLimited: { atMostMs: 3000 } }, { requeueRateLimited: { atMostMs: 3000 } },
    { requeueRateLimited: { atMostMs: 3000 } }, { requeueAfterMs: 10_000 }, { requeueRateLimited: {} },
  ];
  const at: number[] = [];
  const { controller, queue, clock } = setup(() => {
    at.push(clock.now());
    const next = results.shift();
    return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
  });
  const start = clock.now();
  controller.start();
  controller.enqueue('ns/a');
  for (let i = 0; i < 40; i++) {
    await settle();
    clock.advance(500);
  }
  await settle();
  // The error's 1 s, then 2 s and 4 s (capped to 3 s) of the same backoff, 3 s again; the requeueAfter
  // forgets it, so the next rate-limited requeue starts over at 1 s; the success after it ends the loop.
  assert.deepEqual(at.map((t) => t - start), [0, 1000, 3000, 6000, 9000, 19_000, 20_000]);
  assert.equal(queue.numRequeues('ns/a'), 0);
  assert.equal(controller.stats().reconciles.requeue_rate_limited, 4);
  await controller.stop();
});

void test('each reconcile logs with the namespace, name and its own reconcile id', async () => {
  const ids: string[] = [];
  const { controller, lines } = setup((_key, ctx) => {
    ids.push(ctx.reconcileId);
    ctx.log.info('inside');
    return Promise.resolve(undefined);
  });
  controller.start();
  controller.enqueue('ml/run-1');
  await settle();
  controller.enqueue('ml/run-1');
  await settle();
  const inside = lines.filter((l) => l.msg === 'inside');
  assert.equal(inside.length, 2);
  for (const [i, l] of inside.entries()) {
    assert.equal(l.namespace, 'ml');
    assert.equal(l.name, 'run-1');
    assert.equal(l.controller, 'test');
    assert.equal(l.reconcileId, ids[i]);
  }
  assert.notEqual(ids[0], ids[1]);
  await controller.stop();
});

void test('stop() waits for in-flight reconciles and takes no further keys', async () => {
  const hold = gate();
  const seen: string[] = [];
  let finished = false;
  const { controller } = setup(async (key) => {
    seen.push(key);
    await hold.promise;
    finished = true;
    return undefined;
  });
  controller.start();
  controller.enqueue('ns/a');
  controller.enqueue('ns/b');
  await settle();
  let stopped = false;
  const stopping = controller.stop().then(() => (stopped = true));
  await settle();
  assert.equal(stopped, false, 'still waiting for ns/a');
  hold.open();
  await stopping;
  assert.equal(finished, true);
  assert.deepEqual(seen, ['ns/a'], 'ns/b was not started after stop');
});

void test('stop({ abort: true }) aborts the signal of in-flight reconciles', async () => {
  let aborted = false;
  const { controller } = setup(async (_key, ctx) => {
    await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
    aborted = ctx.signal.aborted;
    return undefined;
  });
  controller.start();
  controller.enqueue('ns/a');
  await settle();
  await controller.stop({ abort: true });
  assert.equal(aborted, true);
});

void test('stop() before start() and a second start() behave', async () => {
  const { controller } = setup(() => Promise.resolve(undefined));
  controller.start();
  assert.throws(() => controller.start());
  await controller.stop();
  const { controller: c2 } = setup(() => Promise.resolve(undefined));
  await c2.stop();
});

void test('200 keys added three times each in a burst: each reconciled once, never two at once', async () => {
  const perKey = new Map<string, number>();
  const inFlight = new Set<string>();
  let overlap = false;
  const { controller } = setup(async (key) => {
    if (inFlight.has(key)) overlap = true;
    inFlight.add(key);
    perKey.set(key, (perKey.get(key) ?? 0) + 1);
    await settle();
    inFlight.delete(key);
    return undefined;
  }, 8);
  for (let round = 0; round < 3; round++) for (let i = 0; i < 200; i++) controller.enqueue(`ns/run-${i}`);
  controller.start();
  await eventuallySettled(() => controller.stats().reconciles.success === 200 && controller.stats().activeWorkers === 0);
  assert.equal(perKey.size, 200);
  assert.ok([...perKey.values()].every((n) => n === 1), 'the duplicates coalesced');
  assert.equal(overlap, false);
  await controller.stop();
});

async function eventuallySettled(check: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await settle();
  assert.ok(check());
}

void test('a periodic resync re-queues only keys no look is already due for within its period', async () => {
  // A resync queued every run at once: with 500 held, 500 reconciles in one burst (each reading the run
  // and two Secrets), in front of the runs that need a look now, though each had its next poll <= 10 s away.
  const seen: string[] = [];
  const { clock, controller } = setup((key) => {
    seen.push(key);
    if (key === 'ns/polled') return Promise.resolve({ requeueAfterMs: 10_000 });
    if (key === 'ns/far') return Promise.resolve({ requeueAfterMs: 3_600_000 });
    return Promise.resolve(undefined); // ns/settled: nothing scheduled, only an event or a resync brings it back
  });
  controller.start();
  for (const key of ['ns/polled', 'ns/far', 'ns/settled']) controller.enqueue(key);
  await settle();
  assert.deepEqual(seen, ['ns/polled', 'ns/far', 'ns/settled']);
  seen.length = 0;
  for (const key of ['ns/polled', 'ns/far', 'ns/settled']) controller.resync(key, 300_000);
  await settle();
  assert.deepEqual(seen, ['ns/far', 'ns/settled'], 'the polled key waits for its own look, 10 s away');
  clock.advance(10_000);
  await settle();
  assert.deepEqual(seen, ['ns/far', 'ns/settled', 'ns/polled']);
  await controller.stop();
});
