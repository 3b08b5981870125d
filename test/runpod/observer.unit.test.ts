// The shared pod list's schedule: a burst of refreshSoon() calls (creates and deletes of many runs)
// brings the next list closer, never pushes it away.
import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { createLogger } from '../../src/log.ts';
import type { RunpodClient } from '../../src/runpod/client.ts';
import { RunpodError } from '../../src/runpod/errors.ts';
import { PodObserver } from '../../src/runpod/observer.ts';
import { FakeClock } from './fake-clock.ts';
import { runOfPod } from '../../src/run/ownership.ts';

test('refreshSoon during a burst lists within a fifth of the interval of the first call, whatever follows', async () => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  try {
    let lists = 0;
    const client = { listPods: () => { lists += 1; return Promise.resolve([]); } } as unknown as RunpodClient;
    const observer = new PodObserver({ client, runOf: runOfPod('c'), pollIntervalMs: 10_000, logger: createLogger('silent'), onChange: () => {} });
    observer.start();
    await flush();
    assert.equal(lists, 1, 'the first list at start');
    // A create every 500 ms for 10 s: each asks for a list soon (2 s).
    for (let i = 0; i < 20; i += 1) {
      observer.refreshSoon();
      mock.timers.tick(500);
      await flush();
    }
    assert.ok(lists >= 1 + 4, `a list at least every 2 s of the burst, got ${lists - 1} in 10 s`);
    // Without calls the regular interval (jittered 0.8-1.2) still lists.
    const before = lists;
    mock.timers.tick(12_000);
    await flush();
    assert.ok(lists > before, 'the regular poll goes on');
    observer.stop();
  } finally {
    mock.timers.reset();
  }
});

test('refreshSoon never postpones a list due sooner', async () => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  try {
    let lists = 0;
    const client = { listPods: () => { lists += 1; return Promise.resolve([]); } } as unknown as RunpodClient;
    const observer = new PodObserver({ client, runOf: runOfPod('c'), pollIntervalMs: 1000, logger: createLogger('silent'), onChange: () => {} });
    observer.start();
    await flush();
    // The regular poll is due within 1.2 s; a refresh "soon" (at least 1 s) must not push it later.
    mock.timers.tick(700);
    observer.refreshSoon();
    mock.timers.tick(550);
    await flush();
    assert.equal(lists, 2, 'listed at the regular time');
    observer.stop();
  } finally {
    mock.timers.reset();
  }
});

test('a list offered by another caller is taken when it is newer than the snapshot, and only then', async () => {
  const pod = (id: string) => ({ id, name: id, status: 'RUNNING', env: { RUNPOD_OPERATOR_CLUSTER: 'c', RUNPOD_OPERATOR_RUN: 'uid-1' } });
  let answer: (pods: unknown[]) => void = () => {};
  const client = { listPods: () => new Promise((resolve) => { answer = resolve; }) } as unknown as RunpodClient;
  const changes: string[][] = [];
  const observer = new PodObserver({ client, runOf: runOfPod('c'), pollIntervalMs: 600_000, logger: createLogger('silent'), onChange: (uids) => changes.push(uids) });
  observer.start(); // its own first list is in flight (begun now)
  const offeredAt = new Date(Date.now() + 1000);
  observer.offer(offeredAt, [pod('p2')] as never);
  assert.equal(observer.snapshot?.listedAt, offeredAt);
  assert.deepEqual(observer.snapshot?.byRun.get('uid-1')?.map((p) => p.id), ['p2']);
  assert.deepEqual(changes, [['uid-1']]);
  // The observer's own list began before the offered one: it must not take the snapshot back in time.
  answer([pod('p1')]);
  await flush();
  assert.equal(observer.snapshot?.listedAt, offeredAt);
  assert.deepEqual(observer.snapshot?.byRun.get('uid-1')?.map((p) => p.id), ['p2']);
  observer.offer(new Date(offeredAt.getTime() - 1), [] as never);
  assert.deepEqual(observer.snapshot?.byRun.get('uid-1')?.map((p) => p.id), ['p2'], 'an older offer is not taken either');
  observer.stop();
});

test('refused lists are confirmed only when several in a row span a minute; a snapshot is kept meanwhile; an accepted list starts over', async () => {
  const clock = new FakeClock();
  const pod = { id: 'p1', name: 'r-1', status: 'RUNNING', env: { RUNPOD_OPERATOR_CLUSTER: 'c', RUNPOD_OPERATOR_RUN: 'uid-1' } };
  let answer: 'pods' | 401 | 403 = 401;
  const refusal = (status: 401 | 403) => new RunpodError({ kind: status === 401 ? 'unauthorized' : 'forbidden', operation: 'listPods', status, detail: status === 401 ? 'invalid bearer token' : 'access denied' });
  const client = { listPods: () => (answer === 'pods' ? Promise.resolve([pod]) : Promise.reject(refusal(answer))) } as unknown as RunpodClient;
  const observer = new PodObserver({ client, runOf: runOfPod('c'), pollIntervalMs: 10_000, logger: createLogger('silent'), onChange: () => {}, clock });
  const startedAt = clock.now();
  observer.start();
  await clock.advance(0);
  // A fresh observer's first list refused (a restart, a failover, a rotation): evidence only.
  assert.equal(observer.rejected, true);
  assert.deepEqual(observer.refused, { lists: 1, since: new Date(startedAt), confirmed: false });
  // Many refusals quickly are not a minute of them.
  await clock.advance(40_000);
  assert.ok((observer.refused?.lists ?? 0) >= 3, `several lists: ${JSON.stringify(observer.refused)}`);
  assert.equal(observer.refused?.confirmed, false, 'three refusals within 40 s do not span a minute');
  await clock.advance(40_000);
  assert.equal(observer.refused?.confirmed, true, 'refused lists over more than a minute confirm it');
  // Runpod accepts the key again: everything starts over.
  answer = 'pods';
  await clock.advance(12_000);
  assert.equal(observer.refused, undefined);
  assert.equal(observer.rejected, false);
  assert.deepEqual(observer.snapshot?.byRun.get('uid-1')?.map((p) => p.id), ['p1']);
  // Refused again (403 this time): the snapshot it had is still served, and the count starts from one.
  answer = 403;
  for (let waited = 0; waited < 12_000 && !observer.refused; waited += 500) await clock.advance(500);
  const again = observer.refused as { lists: number; confirmed: boolean } | undefined;
  assert.equal(again?.lists, 1);
  assert.equal(again?.confirmed, false);
  assert.match(observer.forbidden ?? '', /access denied/);
  assert.deepEqual(observer.snapshot?.byRun.get('uid-1')?.map((p) => p.id), ['p1'], 'the last snapshot is kept');
  // A list another caller took (the sweeper's) is an accepted list too.
  observer.offer(new Date(Date.now() + 60_000), [pod] as never);
  assert.equal(observer.refused, undefined);
  observer.stop();
});

async function flush(): Promise<void> {
  for (let i = 0; i < 5; i += 1) await Promise.resolve();
}
