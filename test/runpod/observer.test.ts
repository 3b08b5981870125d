// The shared pod list's schedule: a burst of refreshSoon() calls (creates and deletes of many runs)
// brings the next list closer, never pushes it away.
import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { createLogger } from '../../src/log.ts';
import type { RunpodClient } from '../../src/runpod/client.ts';
import { PodObserver } from '../../src/runpod/observer.ts';

test('refreshSoon during a burst lists within a fifth of the interval of the first call, whatever follows', async () => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  try {
    let lists = 0;
    const client = { listPods: () => { lists += 1; return Promise.resolve([]); } } as unknown as RunpodClient;
    const observer = new PodObserver({ client, clusterId: 'c', pollIntervalMs: 10_000, logger: createLogger('silent'), onChange: () => {} });
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
    const observer = new PodObserver({ client, clusterId: 'c', pollIntervalMs: 1000, logger: createLogger('silent'), onChange: () => {} });
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
  const observer = new PodObserver({ client, clusterId: 'c', pollIntervalMs: 600_000, logger: createLogger('silent'), onChange: (uids) => changes.push(uids) });
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

async function flush(): Promise<void> {
  for (let i = 0; i < 5; i += 1) await Promise.resolve();
}
