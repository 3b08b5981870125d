import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRateLimit, parseRateLimitPolicy, parseRetryAfter } from '../../src/runpod/rate-limit-headers.ts';
import { type CallPriority, type Permit, RateLimitWaitTimeout, RateLimiter, rateLimiterForKey } from '../../src/runpod/rate-limiter.ts';
import { FakeClock, settle } from './fake-clock.ts';

// The header values are the ones API-NOTES §3 records from the v2 spec.
const RATE_LIMIT = '"minute";r=0;t=12, "hour";r=2800;t=1812, "day";r=49500;t=45012';
const POLICY = '"minute";q=60;w=60, "hour";q=3000;w=3600, "day";q=50000;w=86400';

void describe('rate-limit headers', () => {
  void it('parses RateLimit windows', () => {
    assert.deepEqual(parseRateLimit(RATE_LIMIT), [
      { name: 'minute', remaining: 0, resetMs: 12_000 },
      { name: 'hour', remaining: 2800, resetMs: 1_812_000 },
      { name: 'day', remaining: 49500, resetMs: 45_012_000 },
    ]);
  });

  void it('parses RateLimit-Policy windows', () => {
    assert.deepEqual(parseRateLimitPolicy(POLICY), [
      { name: 'minute', quota: 60, windowMs: 60_000 },
      { name: 'hour', quota: 3000, windowMs: 3_600_000 },
      { name: 'day', quota: 50000, windowMs: 86_400_000 },
    ]);
  });

  void it('tolerates tokens, spacing, unknown parameters and garbage', () => {
    assert.deepEqual(parseRateLimit('default;r=5;t=1;x="a,b"'), [{ name: 'default', remaining: 5, resetMs: 1000 }]);
    assert.deepEqual(parseRateLimit('"minute";r=-1;t=5, "hour";t=3, ,'), []);
    assert.deepEqual(parseRateLimit(undefined), []);
    assert.deepEqual(parseRateLimitPolicy('"minute";q=60;w=0'), []);
  });

  void it('parses Retry-After as seconds or as a date', () => {
    const now = Date.parse('2026-08-20T06:16:19Z');
    assert.equal(parseRetryAfter('12', now), 12_000);
    assert.equal(parseRetryAfter('0.5', now), 500);
    assert.equal(parseRetryAfter('Thu, 20 Aug 2026 06:16:29 GMT', now), 10_000);
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter('-3', now), undefined);
    assert.equal(parseRetryAfter(undefined, now), undefined);
  });
});

function recorder(limiter: RateLimiter) {
  const order: string[] = [];
  const permits: Permit[] = [];
  const ask = (priority: CallPriority, label: string): Promise<void> =>
    limiter.acquire(priority).then((permit) => {
      order.push(label);
      permits.push(permit);
    });
  return { order, permits, ask };
}

/** One answered request, so the limiter leaves its before-the-first-answer mode. */
async function warm(limiter: RateLimiter): Promise<void> {
  (await limiter.acquire('delete')).complete({});
}

void describe('RateLimiter', () => {
  void it('serves waiting deletes before creates before reads, FIFO within a priority', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ clock });
    await warm(limiter);
    const { order, ask } = recorder(limiter);
    limiter.backOff(1000);
    const all = [ask('read', 'read1'), ask('create', 'create1'), ask('delete', 'delete1'), ask('read', 'read2'), ask('delete', 'delete2'), ask('create', 'create2')];
    await settle();
    assert.deepEqual(order, [], 'nothing is granted during a pause');
    await clock.advance(1000);
    await Promise.all(all);
    assert.deepEqual(order, ['delete1', 'delete2', 'create1', 'create2', 'read1', 'read2']);
  });

  void it('grants one at a time when the budget allows one per window, still by priority', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ clock, defaultPolicy: { quota: 1, windowMs: 1000 }, reserve: { read: 0, create: 0 } });
    await warm(limiter);
    await clock.advance(1000);
    const { order, permits, ask } = recorder(limiter);
    await ask('read', 'first');
    const rest = [ask('read', 'read'), ask('create', 'create'), ask('delete', 'delete')];
    await settle();
    assert.deepEqual(order, ['first']);
    for (const p of permits) p.complete();
    await clock.advance(1000);
    assert.deepEqual(order, ['first', 'delete']);
    await clock.advance(1000);
    assert.deepEqual(order, ['first', 'delete', 'create']);
    await clock.advance(1000);
    await Promise.all(rest);
    assert.deepEqual(order, ['first', 'delete', 'create', 'read']);
  });

  void it('holds a reserve that reads and creates cannot spend but deletes can', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ clock });
    await warm(limiter);
    // minute quota 60: reads keep 6 back, creates 3, deletes none.
    limiter.observe({ 'ratelimit-policy': '"minute";q=60;w=60', ratelimit: '"minute";r=5;t=30' });
    const { order, ask } = recorder(limiter);
    const read = ask('read', 'read');
    await ask('create', 'create');
    await ask('delete', 'delete');
    assert.deepEqual(order, ['create', 'delete']);
    assert.equal(limiter.snapshot().waiting.read, 1);
    await clock.advance(30_000);
    await read;
    assert.deepEqual(order, ['create', 'delete', 'read']);
  });

  void it('follows the RateLimit header: an exhausted window holds everyone until it resets', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ clock });
    const permit = await limiter.acquire('read');
    permit.complete({ ratelimit: RATE_LIMIT, 'ratelimit-policy': POLICY });
    const { order, ask } = recorder(limiter);
    const del = ask('delete', 'delete');
    await clock.advance(11_999);
    assert.deepEqual(order, []);
    await clock.advance(1);
    await del;
    assert.deepEqual(order, ['delete']);
    const names = limiter.snapshot().windows.map((w) => w.name);
    assert.deepEqual(names, ['minute', 'hour', 'day'], 'the server windows replace the default one');
  });

  void it('counts requests still in flight against what the server reports', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ clock });
    await warm(limiter);
    const a = await limiter.acquire('read');
    const b = await limiter.acquire('read');
    a.complete({ ratelimit: '"minute";r=10;t=60', 'ratelimit-policy': '"minute";q=60;w=60' });
    assert.equal(limiter.snapshot().windows[0]?.remaining, 9, 'b may not be counted by the server yet');
    b.complete({ ratelimit: '"minute";r=9;t=59' });
    assert.equal(limiter.snapshot().windows[0]?.remaining, 9);
  });

  void it('after a 429 every caller waits Retry-After, whatever its priority', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ clock });
    await warm(limiter);
    const { order, ask } = recorder(limiter);
    limiter.backOff(5000);
    const waits = [ask('delete', 'delete'), ask('read', 'read')];
    await clock.advance(4999);
    assert.deepEqual(order, []);
    assert.equal(limiter.snapshot().pausedForMs, 1);
    await clock.advance(1);
    await Promise.all(waits);
    assert.deepEqual(order, ['delete', 'read']);
  });

  void it('gives up at once when the known wait exceeds maxWaitMs, and on its deadline otherwise', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ clock });
    limiter.backOff(10_000);
    await assert.rejects(limiter.acquire('read', { maxWaitMs: 5000 }), (err: unknown) => err instanceof RateLimitWaitTimeout && err.retryAfterMs === 10_000);

    const limiter2 = new RateLimiter({ clock, defaultPolicy: { quota: 1, windowMs: 60_000 }, reserve: { read: 0, create: 0 } });
    const held = await limiter2.acquire('delete');
    const deletes = [limiter2.acquire('delete'), limiter2.acquire('delete')];
    const read = limiter2.acquire('read', { maxWaitMs: 70_000 });
    const readOutcome = read.then(
      () => 'granted',
      (err: unknown) => (err instanceof RateLimitWaitTimeout ? 'timed out' : 'other'),
    );
    await clock.advance(60_000);
    (await deletes[0])?.complete();
    await clock.advance(10_000);
    assert.equal(await readOutcome, 'timed out', 'two deletes ahead took both slots');
    held.complete();
    await clock.advance(60_000);
    (await deletes[1])?.complete();
  });

  void it('drops a waiter whose signal aborts', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ clock });
    limiter.backOff(1000);
    const controller = new AbortController();
    const waiting = limiter.acquire('read', { signal: controller.signal });
    controller.abort(new Error('shutting down'));
    await assert.rejects(waiting, /shutting down/);
    assert.equal(limiter.snapshot().waiting.read, 0);
  });

  void it('before the first answer: one request at a time (deletes excepted)', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ clock });
    const { order, permits, ask } = recorder(limiter);
    await ask('read', 'read1');
    const read2 = ask('read', 'read2');
    const create = ask('create', 'create');
    await ask('delete', 'delete');
    assert.deepEqual(order, ['read1', 'delete']);
    permits[0]?.complete({});
    await Promise.all([read2, create]);
    assert.deepEqual(order, ['read1', 'delete', 'create', 'read2'], 'once answered, the budget decides');
  });

  void it('assumes a conservative budget until Runpod describes its own', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter({ clock });
    await warm(limiter);
    const granted: Permit[] = [];
    const { order, ask } = recorder(limiter);
    for (let i = 0; i < 26; i += 1) granted.push(await limiter.acquire('read'));
    const read = ask('read', 'read 27');
    await ask('delete', 'delete');
    assert.deepEqual(order, ['delete'], '30 a minute, 3 kept back from reads');
    await clock.advance(60_000);
    await read;
    for (const p of granted) p.complete();
  });

  void it('is shared per account key', () => {
    assert.equal(rateLimiterForKey('rpa_SHARED_TEST_KEY_1'), rateLimiterForKey('rpa_SHARED_TEST_KEY_1'));
    assert.notEqual(rateLimiterForKey('rpa_SHARED_TEST_KEY_1'), rateLimiterForKey('rpa_SHARED_TEST_KEY_2'));
  });
});
