import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkQueue } from '../../src/kube/queue.ts';
import { FakeClock, settle } from './fake-clock.ts';

function newQueue(opts: ConstructorParameters<typeof WorkQueue>[0] = {}): { q: WorkQueue; clock: FakeClock } {
  const clock = new FakeClock();
  return { q: new WorkQueue({ clock, ...opts }), clock };
}

/** Takes a key that must be ready now (a pending get() would register a waiter and steal a later key). */
async function take(q: WorkQueue): Promise<string> {
  assert.ok(q.len() > 0, 'a key should be ready');
  const key = await q.get();
  assert.ok(key !== undefined);
  return key;
}

void test('hands keys out in FIFO order', async () => {
  const { q } = newQueue();
  q.add('a');
  q.add('b');
  q.add('c');
  assert.deepEqual([await take(q), await take(q), await take(q)], ['a', 'b', 'c']);
  assert.equal(q.len(), 0);
});

void test('de-duplicates a key that is already waiting', async () => {
  const { q } = newQueue();
  q.add('a');
  q.add('b');
  q.add('a');
  assert.equal(q.len(), 2);
  assert.deepEqual([await take(q), await take(q)], ['a', 'b']);
});

void test('never hands a key being processed to a second worker; re-queues it at done()', async () => {
  const { q } = newQueue();
  q.add('a');
  const first = await take(q);
  q.add('a');
  q.add('a');
  assert.equal(q.len(), 0, 'a is processing: not handed out again yet');
  let second: string | undefined;
  void q.get().then((k) => (second = k));
  await settle();
  assert.equal(second, undefined);
  q.done(first);
  await settle();
  assert.equal(second, 'a', 'handed out again, once, after done');
  assert.equal(q.len(), 0);
});

void test('done() without a new add does not re-queue', async () => {
  const { q } = newQueue();
  q.add('a');
  q.done(await take(q));
  assert.equal(q.len(), 0);
  assert.equal(q.processingLen(), 0);
});

void test('a waiting get() is served by the next add, waiters in order', async () => {
  const { q } = newQueue();
  const got: (string | undefined)[] = [];
  void q.get().then((k) => got.push(k));
  void q.get().then((k) => got.push(k));
  await settle();
  assert.deepEqual(got, []);
  q.add('x');
  q.add('y');
  await settle();
  assert.deepEqual(got, ['x', 'y']);
});

void test('other keys flow while one key is processing', async () => {
  const { q } = newQueue();
  q.add('a');
  q.add('b');
  const a = await take(q);
  q.add(a);
  assert.equal(await take(q), 'b');
  q.done('b');
  assert.equal(q.len(), 0);
  q.done(a);
  assert.equal(await take(q), 'a');
});

void test('addAfter adds the key only once its time has come', async () => {
  const { q, clock } = newQueue();
  q.addAfter('a', 1000);
  assert.equal(q.len(), 0);
  assert.equal(q.delayedLen(), 1);
  clock.advance(999);
  assert.equal(q.len(), 0);
  clock.advance(1);
  assert.equal(q.len(), 1);
  assert.equal(q.delayedLen(), 0);
  assert.equal(await take(q), 'a');
});

void test('addAfter keeps the earlier time of a pending entry', () => {
  const { q, clock } = newQueue();
  q.addAfter('a', 500);
  q.addAfter('a', 2000);
  clock.advance(500);
  assert.equal(q.len(), 1, 'the later addAfter did not postpone it');

  const { q: q2, clock: clock2 } = newQueue();
  q2.addAfter('a', 2000);
  q2.addAfter('a', 500);
  clock2.advance(500);
  assert.equal(q2.len(), 1, 'the earlier addAfter brought it forward');
  clock2.advance(5000);
  assert.equal(q2.len(), 1, 'and the superseded entry does not fire a second time');
  assert.equal(q2.delayedLen(), 0);
});

void test('addAfter with zero or negative delay adds at once', () => {
  const { q } = newQueue();
  q.addAfter('a', 0);
  q.addAfter('b', -5);
  assert.equal(q.len(), 2);
});

void test('a delayed add of a key already queued still yields one get', async () => {
  const { q, clock } = newQueue();
  q.add('a');
  q.addAfter('a', 100);
  clock.advance(100);
  assert.equal(q.len(), 1);
  await take(q);
  assert.equal(q.len(), 0);
});

void test('delayed keys become ready in order of their times', async () => {
  const { q, clock } = newQueue();
  q.addAfter('c', 300);
  q.addAfter('a', 100);
  q.addAfter('b', 200);
  clock.advance(1000);
  assert.deepEqual([await take(q), await take(q), await take(q)], ['a', 'b', 'c']);
});

void test('many delayed keys with random times come out sorted (heap)', async () => {
  const { q, clock } = newQueue();
  const delays = new Map<string, number>();
  let seed = 42;
  const rand = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let i = 0; i < 300; i++) {
    const key = `k${i % 200}`;
    const ms = 1 + Math.floor(rand() * 10_000);
    delays.set(key, Math.min(delays.get(key) ?? Infinity, ms));
    q.addAfter(key, ms);
  }
  const expected = [...delays.entries()].sort((x, y) => x[1] - y[1] || (x[0] < y[0] ? -1 : 1));
  let last = -1;
  const out: string[] = [];
  for (const [, ms] of expected) {
    if (ms === last) continue;
    clock.advance(ms - Math.max(last, 0));
    last = ms;
    while (q.len() > 0) out.push(await take(q));
    assert.deepEqual(new Set(out.slice(-expected.filter((e) => e[1] === ms).length)), new Set(expected.filter((e) => e[1] === ms).map((e) => e[0])));
  }
  assert.equal(out.length, delays.size);
  assert.equal(q.delayedLen(), 0);
});

void test('addRateLimited backs off exponentially per key, capped; forget resets', async () => {
  const { q, clock } = newQueue({ baseDelayMs: 1000, maxDelayMs: 8000 });
  const expected = [1000, 2000, 4000, 8000, 8000];
  for (const [i, ms] of expected.entries()) {
    q.addRateLimited('a');
    assert.equal(q.numRequeues('a'), i + 1);
    clock.advance(ms - 1);
    assert.equal(q.len(), 0, `retry ${i + 1} not before ${ms} ms`);
    clock.advance(1);
    assert.equal(q.len(), 1, `retry ${i + 1} at ${ms} ms`);
    q.done(await take(q));
  }
  q.forget('a');
  assert.equal(q.numRequeues('a'), 0);
});

void test('backoff is per key', async () => {
  const { q, clock } = newQueue({ baseDelayMs: 1000, maxDelayMs: 60_000 });
  q.addRateLimited('a');
  clock.advance(1000);
  q.done(await take(q));
  q.addRateLimited('a'); // 2 s for a
  q.addRateLimited('b'); // 1 s for b
  clock.advance(1000);
  assert.equal(q.numRequeues('a'), 2);
  assert.equal(q.numRequeues('b'), 1);
  assert.equal(q.len(), 1, 'only b is ready after 1 s');
});

void test('the global token bucket limits a burst of rate-limited keys', () => {
  const { q, clock } = newQueue({ baseDelayMs: 1, maxDelayMs: 1, ratePerSecond: 2, burst: 3 });
  for (let i = 0; i < 7; i++) q.addRateLimited(`k${i}`);
  clock.advance(1);
  assert.equal(q.len(), 3, 'the burst goes through at once');
  clock.advance(499);
  assert.equal(q.len(), 4, 'then one every 500 ms');
  clock.advance(500);
  assert.equal(q.len(), 5);
  clock.advance(1000);
  assert.equal(q.len(), 7);
});

void test('shutDown resolves waiting gets with undefined', async () => {
  const { q } = newQueue();
  const got: (string | undefined)[] = [];
  void q.get().then((k) => got.push(k));
  void q.get().then((k) => got.push(k));
  q.shutDown();
  await settle();
  assert.deepEqual(got, [undefined, undefined]);
  assert.equal(await q.get(), undefined);
});

void test('shutDown drains keys already queued, then returns undefined; ignores new adds', async () => {
  const { q } = newQueue();
  q.add('a');
  q.add('b');
  q.shutDown();
  q.add('c');
  assert.equal(q.isShuttingDown(), true);
  assert.equal(await q.get(), 'a');
  assert.equal(await q.get(), 'b');
  assert.equal(await q.get(), undefined);
});

void test('shutDown drops delayed keys and their timers', () => {
  const { q, clock } = newQueue();
  q.addAfter('a', 100);
  q.addRateLimited('b');
  assert.ok(clock.pendingTimers() > 0);
  q.shutDown();
  assert.equal(clock.pendingTimers(), 0);
  q.addAfter('c', 10);
  clock.advance(10_000);
  assert.equal(q.len(), 0);
  assert.equal(q.delayedLen(), 0);
});

void test('one timer at a time: re-armed for the earliest entry', () => {
  const { q, clock } = newQueue();
  q.addAfter('a', 1000);
  q.addAfter('b', 500);
  q.addAfter('c', 2000);
  assert.equal(clock.pendingTimers(), 1);
  clock.advance(500);
  assert.equal(q.len(), 1);
  assert.equal(clock.pendingTimers(), 1);
  clock.advance(1500);
  assert.equal(q.len(), 3);
  assert.equal(clock.pendingTimers(), 0);
});

void test('the FIFO compacts without losing order over many keys', async () => {
  const { q } = newQueue();
  const n = 5000;
  for (let i = 0; i < n; i++) q.add(`k${i}`);
  for (let i = 0; i < n; i++) {
    assert.equal(await take(q), `k${i}`);
    if (i % 1000 === 0) q.add(`late${i}`);
  }
  assert.deepEqual([await take(q), await take(q)], ['late0', 'late1000']);
});

void test('with priorityOf, the highest priority is handed out first, first in first out within one', async () => {
  const priorities = new Map([['done-1', -1], ['done-2', -1], ['active', 0], ['ending-1', 1], ['ending-2', 1]]);
  const { q } = newQueue({ priorityOf: (key) => priorities.get(key) ?? 0 });
  // The order a reflector's first list adds them in: by name.
  for (const key of ['active', 'done-1', 'done-2', 'ending-1', 'ending-2']) q.add(key);
  assert.equal(q.len(), 5);
  const order: string[] = [];
  while (q.len() > 0) order.push(await take(q));
  assert.deepEqual(order, ['ending-1', 'ending-2', 'active', 'done-1', 'done-2']);
});

void test('a waiting key added again at a higher priority moves up, once; a lower one never moves it down', async () => {
  const priorities = new Map([['a', 0], ['b', 0], ['c', 0]]);
  const { q } = newQueue({ priorityOf: (key) => priorities.get(key) ?? 0 });
  q.add('a');
  q.add('b');
  q.add('c');
  priorities.set('c', 1);
  q.add('c');
  priorities.set('a', -1);
  q.add('a');
  assert.equal(q.len(), 3, 'still three keys');
  assert.deepEqual([await take(q), await take(q), await take(q)], ['c', 'a', 'b']);
  assert.equal(q.len(), 0);
});

void test('a key re-added while processing is queued at its priority when done', async () => {
  const priorities = new Map([['a', 0], ['b', 0]]);
  const { q } = newQueue({ priorityOf: (key) => priorities.get(key) ?? 0 });
  q.add('a');
  q.add('b');
  assert.equal(await take(q), 'a');
  q.add('a');
  priorities.set('a', 1);
  q.done('a');
  assert.deepEqual([await take(q), await take(q)], ['a', 'b']);
});

void test('addUnlessDue adds nothing for a key being processed or waiting, and nothing twice', async () => {
  const { q } = newQueue();
  q.add('busy');
  assert.equal(await take(q), 'busy');
  q.addUnlessDue('busy', 60_000);
  q.done('busy');
  assert.equal(q.len(), 0, 'the look under way was the resync\'s look');
  q.addUnlessDue('idle', 60_000);
  q.addUnlessDue('idle', 60_000);
  assert.equal(q.len(), 1);
});
