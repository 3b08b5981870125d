// The shared pod list over pages, through the real client and HTTP: a list is one snapshot only when
// every page was read; a page that fails (or cannot be followed) leaves the last whole snapshot in
// place, so no pod of a later page ever looks gone. Its time is when the first page was asked for.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createLogger } from '../../src/log.ts';
import { createRunpodClient } from '../../src/runpod/client.ts';
import { PodObserver } from '../../src/runpod/observer.ts';
import { FakeClock } from './fake-clock.ts';
import { type FixtureServer, type Received, type Reply, startFixtureServer } from './fixture-server.ts';
import { runOfPod } from '../../src/run/ownership.ts';
import { eventually } from '../support/eventually.ts';

const pod = (id: string, run: string) => ({ id, name: id, status: 'RUNNING', env: { RUNPOD_OPERATOR_CLUSTER: 'c', RUNPOD_OPERATOR_RUN: run } });
const PAGE_1 = { pods: [pod('pod-a', 'uid-a')], pagination: { hasNextPage: true, nextCursor: 'c2' } };
const PAGE_2 = { pods: [pod('pod-b', 'uid-b')], pagination: { hasNextPage: false, nextCursor: null } };
const FAILURE = { title: 'Internal Server Error', status: 500, detail: 'boom' };

let server: FixtureServer;
/** How the second page (and the first) are answered now. */
let answer: (req: Received) => Reply;
const firstPageAskedAt: number[] = [];

before(async () => {
  server = await startFixtureServer((req) => {
    if (!req.url.includes('cursor=')) firstPageAskedAt.push(Date.now());
    return answer(req);
  });
});
after(() => server.stop());

const whole = (req: Received): Reply => ({ status: 200, body: req.url.includes('cursor=c2') ? PAGE_2 : PAGE_1 });

test('a page that fails, or says more follow without a cursor, leaves the last whole snapshot: no pod of a later page looks gone', async () => {
  const clock = new FakeClock();
  const client = createRunpodClient({
    apiKey: 'rpa_PAGED_LIST_TEST_KEY_0123', baseUrl: server.baseUrl, logger: createLogger('silent'),
    retry: { readAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 },
  });
  const changes: string[][] = [];
  const logLines: string[] = [];
  const logger = createLogger('warn', { write: (line: string) => { logLines.push(line); } });
  const observer = new PodObserver({ client, runOf: runOfPod('c'), pollIntervalMs: 10_000, logger, onChange: (uids) => changes.push(uids), clock });
  const failedLists = () => logLines.filter((line) => line.includes('listing pods failed')).length;
  const lists = () => server.received.filter((r) => !r.url.includes('cursor=')).length;
  try {
    answer = whole;
    const before = Date.now();
    observer.start();
    await eventually('the first list is published', () => observer.snapshot !== undefined);
    const first = observer.snapshot;
    assert.deepEqual([...(first?.byRun.keys() ?? [])].sort(), ['uid-a', 'uid-b'], 'both pages are in the snapshot');
    const askedAt = firstPageAskedAt.at(-1) ?? 0;
    assert.ok(first && first.listedAt.getTime() >= before && first.listedAt.getTime() <= askedAt,
      'the snapshot is dated when its first page was asked for (a later page may show later state)');
    assert.deepEqual(changes, [['uid-a', 'uid-b']]);

    // The second page fails every attempt: the list is unusable, not shorter.
    answer = (req) => (req.url.includes('cursor=') ? { status: 500, body: FAILURE } : whole(req));
    const listed = lists();
    await clock.advance(12_000);
    await eventually('the next list ended', () => lists() > listed && (failedLists() > 0 || observer.snapshot !== first));
    assert.equal(observer.snapshot, first, 'the whole snapshot stays');

    // The first page says more follow and gives no cursor to follow: no list either.
    answer = () => ({ status: 200, body: { pods: [pod('pod-a', 'uid-a')], pagination: { hasNextPage: true, nextCursor: null } } });
    const tried = failedLists();
    await clock.advance(12_000);
    await eventually('the next list ended', () => failedLists() > tried || observer.snapshot !== first);
    assert.equal(observer.snapshot, first, 'a list that cannot be completed is no list');
    assert.deepEqual(observer.snapshot?.byRun.get('uid-b')?.map((p) => p.id), ['pod-b'], 'the pod of page 2 is still seen');
    assert.deepEqual(changes, [['uid-a', 'uid-b']], 'no run was told its pods changed');

    // Whole again, and the second page no longer shows pod-b: now it is gone.
    answer = (req) => ({ status: 200, body: req.url.includes('cursor=c2') ? { ...PAGE_2, pods: [] } : PAGE_1 });
    await clock.advance(12_000);
    await eventually('a whole list is published again', () => observer.snapshot !== first);
    assert.deepEqual([...(observer.snapshot?.byRun.keys() ?? [])], ['uid-a']);
    assert.deepEqual(changes.at(-1), ['uid-b']);
  } finally {
    observer.stop();
    await client.close();
  }
});
