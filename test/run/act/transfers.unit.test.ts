// The transfer pool on a fake clock: at most K at once, earliest due first (FIFO among equals), abort,
// each outcome handed back once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TransferPool, type TransferJob } from '../../../src/run/act/transfers.ts';
import { FakeClock, settle } from '../../kube/fake-clock.ts';

/** A job the test ends by hand; it records when it started and rejects when aborted. */
class ManualJob {
  started = false;
  signal: AbortSignal | undefined;
  #resolve: ((value: string) => void) | undefined;
  #reject: ((error: unknown) => void) | undefined;
  progress: (() => void) | undefined;
  readonly job: TransferJob<string> = (signal, progress) => {
    this.started = true;
    this.signal = signal;
    this.progress = progress;
    return new Promise<string>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    });
  };

  finish(value: string): void { this.#resolve?.(value); }
  fail(error: Error): void { this.#reject?.(error); }
}

function pool(maxConcurrent: number, clock = new FakeClock()): { transfers: TransferPool<string>; settled: string[]; clock: FakeClock } {
  const settled: string[] = [];
  return { transfers: new TransferPool<string>({ maxConcurrent, clock, onSettled: (key) => settled.push(key) }), settled, clock };
}

test('at most maxConcurrent transfers run; the rest wait and say how many are ahead', async () => {
  const { transfers } = pool(2);
  const jobs = [new ManualJob(), new ManualJob(), new ManualJob(), new ManualJob()];
  jobs.forEach((job, i) => transfers.start(`u${i}`, `ns/r${i}`, job.job));
  assert.deepEqual(jobs.map((job) => job.started), [true, true, false, false]);
  assert.deepEqual(transfers.stats(), { running: 2, queued: 2 });
  assert.equal(transfers.look('u2')?.state, 'queued');
  assert.deepEqual(transfers.look('u2'), { state: 'queued', ahead: 2, sinceMs: 0 });
  assert.deepEqual(transfers.look('u3'), { state: 'queued', ahead: 3, sinceMs: 0 });
  jobs[1]!.finish('b');
  await settle();
  assert.deepEqual(jobs.map((job) => job.started), [true, true, true, false], 'a freed slot goes to the first in line');
  assert.deepEqual(transfers.stats(), { running: 2, queued: 1 });
  assert.deepEqual(transfers.look('u3'), { state: 'queued', ahead: 2, sinceMs: 0 });
});

test('queued transfers start in the order they were queued (FIFO)', async () => {
  const { transfers } = pool(1);
  const order: string[] = [];
  const jobs = ['a', 'b', 'c', 'd'].map((name) => ({ name, manual: new ManualJob() }));
  for (const { name, manual } of jobs) transfers.start(name, `ns/${name}`, (signal, progress) => { order.push(name); return manual.job(signal, progress); });
  for (const { name, manual } of jobs) {
    assert.deepEqual(order, jobs.slice(0, order.length).map((job) => job.name));
    assert.equal(order.at(-1), name);
    manual.finish(name);
    await settle();
  }
  assert.deepEqual(order, ['a', 'b', 'c', 'd']);
});

test('a transfer due sooner goes first: its results are lost at that time (the pod\'s deadline or retrieve grace)', async () => {
  // Chaos seed 24 (N=100): after a restart eight retrievals waited for two slots in the order they
  // were asked for, and the one whose keepPod deadline came first was still in line when it passed.
  const { transfers } = pool(1);
  const order: string[] = [];
  const jobs = new Map(['busy', 'late', 'soon', 'undated', 'sooner'].map((name) => [name, new ManualJob()]));
  const start = (name: string, dueAt?: number) => transfers.start(name, `ns/${name}`, (signal, progress) => { order.push(name); return jobs.get(name)!.job(signal, progress); }, dueAt);
  start('busy', 1_000);
  start('late', 90_000);
  start('soon', 30_000);
  start('undated');
  start('sooner', 20_000);
  assert.deepEqual(transfers.look('late'), { state: 'queued', ahead: 3, sinceMs: 0 }, 'the running one, sooner and soon are ahead');
  assert.deepEqual(transfers.look('undated'), { state: 'queued', ahead: 4, sinceMs: 0 }, 'a transfer with no due time goes last');
  for (const name of ['busy', 'sooner', 'soon', 'late', 'undated']) {
    assert.equal(order.at(-1), name);
    jobs.get(name)!.finish(name);
    await settle();
  }
  assert.deepEqual(order, ['busy', 'sooner', 'soon', 'late', 'undated']);
});

test('the outcome is handed back once, the run is asked for once, and a second start before the take changes nothing', async () => {
  const { transfers, settled, clock } = pool(1);
  const job = new ManualJob();
  transfers.start('u', 'ns/r', job.job);
  clock.advance(90_000);
  assert.deepEqual(transfers.look('u'), { state: 'running', sinceMs: 90_000 }, 'the clock says how long it has run');
  const again = new ManualJob();
  transfers.start('u', 'ns/r', again.job);
  assert.equal(again.started, false, 'one transfer per run');
  assert.equal(transfers.take('u'), undefined, 'nothing to take while it runs');
  job.finish('done');
  await settle();
  assert.deepEqual(settled, ['ns/r']);
  transfers.start('u', 'ns/r', again.job);
  assert.equal(again.started, false, 'a settled outcome not yet taken is not overwritten');
  assert.deepEqual(transfers.take('u'), { ok: true, value: 'done' });
  assert.equal(transfers.take('u'), undefined, 'handed back once');
  assert.equal(transfers.look('u'), undefined);
});

test('a failed transfer hands back its error', async () => {
  const { transfers, settled } = pool(1);
  const job = new ManualJob();
  transfers.start('u', 'ns/r', job.job);
  job.fail(new Error('connection lost'));
  await settle();
  assert.deepEqual(settled, ['ns/r']);
  const outcome = transfers.take('u');
  assert.equal(outcome?.ok, false);
  assert.match(String(outcome && !outcome.ok ? outcome.error : ''), /connection lost/);
});

test('abort: a running transfer sees its signal, its slot goes to the next, and nobody is asked to take it', async () => {
  const { transfers, settled } = pool(1);
  const first = new ManualJob();
  const second = new ManualJob();
  transfers.start('a', 'ns/a', first.job);
  transfers.start('b', 'ns/b', second.job);
  transfers.abort('a', 'the pod is being deleted');
  assert.equal(first.signal?.aborted, true);
  await settle();
  assert.match(String((first.signal?.reason as Error).message), /the pod is being deleted/);
  assert.equal(transfers.look('a'), undefined);
  assert.equal(second.started, true);
  assert.deepEqual(settled, [], 'an aborted transfer is not handed back');
  transfers.abort('b', 'x');
  transfers.abort('nothing', 'x');
  await settle();
  assert.deepEqual(transfers.stats(), { running: 0, queued: 0 });
});

test('abort gives the slot back at once, even when the job is slow to wind down', async () => {
  const { transfers } = pool(1);
  const stubborn = new ManualJob();
  const next = new ManualJob();
  transfers.start('a', 'ns/a', (signal, progress) => stubborn.job(new AbortController().signal, progress).finally(() => signal.throwIfAborted()));
  transfers.start('b', 'ns/b', next.job);
  transfers.abort('a', 'the pod is being deleted');
  assert.equal(next.started, true, 'the next transfer did not wait for the aborted one to end');
  stubborn.finish('late');
  await settle();
  assert.deepEqual(transfers.stats(), { running: 1, queued: 0 }, 'the late end frees no second slot');
  assert.equal(transfers.look('a'), undefined);
});

test('abort of a queued transfer: it never starts', async () => {
  const { transfers } = pool(1);
  const first = new ManualJob();
  const queued = new ManualJob();
  transfers.start('a', 'ns/a', first.job);
  transfers.start('b', 'ns/b', queued.job);
  transfers.abort('b', 'run deleted');
  first.finish('ok');
  await settle();
  assert.equal(queued.started, false);
});

test('abortAll (shutdown): every transfer is aborted, waited for, and nothing starts afterwards', async () => {
  const { transfers, settled } = pool(2);
  const jobs = [new ManualJob(), new ManualJob(), new ManualJob()];
  jobs.forEach((job, i) => transfers.start(`u${i}`, `ns/r${i}`, job.job));
  await transfers.abortAll('shutting down');
  assert.deepEqual(jobs.map((job) => job.signal?.aborted ?? 'never started'), [true, true, 'never started']);
  assert.deepEqual(transfers.stats(), { running: 0, queued: 0 });
  assert.deepEqual(settled, []);
  assert.throws(() => transfers.start('late', 'ns/late', new ManualJob().job), /shut down/);
});

test('running transfers show in flight with how long since they last moved (the health check\'s stuck-worker test)', () => {
  const { transfers, clock } = pool(1);
  const running = new ManualJob();
  transfers.start('a', 'ns/a', running.job);
  transfers.start('b', 'ns/b', new ManualJob().job);
  clock.advance(60_000);
  running.progress?.();
  clock.advance(5000);
  assert.deepEqual(transfers.inFlight(), [{ key: 'ns/a', runningMs: 65_000, idleMs: 5000 }], 'only the running one: a queued one is not stuck');
});

test('maxConcurrent must be a positive integer', () => {
  for (const bad of [0, -1, 1.5, Number.NaN]) {
    assert.throws(() => new TransferPool<string>({ maxConcurrent: bad, onSettled: () => undefined }), /maxConcurrent must be a positive integer/);
  }
});
