// Reflector against a real kube-apiserver (test/support/cluster.ts), RunpodRuns in a fresh namespace.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { CustomObjectsApi, PatchStrategy, Watch, setHeaderOptions, type KubernetesObject } from '@kubernetes/client-node';
import { Reflector, keyHandlers, resourcePath, type WatchFn } from '../../src/kube/reflector.ts';
import { listPage } from '../../src/kube/list.ts';
import { createTestNamespace, testCluster } from '../support/cluster.ts';
import { captureLogger } from './log-capture.ts';
import { rpr, testRun } from './helpers.ts';
import { eventually } from '../support/eventually.ts';

type Obj = KubernetesObject;

interface Recorded {
  events: string[];
  reflector: Reflector<Obj>;
  lines: ReturnType<typeof captureLogger>['lines'];
}

async function api(): Promise<CustomObjectsApi> {
  return (await testCluster()).kubeConfig.makeApiClient(CustomObjectsApi);
}

async function createRun(namespace: string, name: string, labels?: Record<string, string>): Promise<void> {
  await (await api()).createNamespacedCustomObject({ ...rpr, namespace, body: testRun(namespace, name, labels) });
}

async function startReflector(namespace: string, extra: Partial<ConstructorParameters<typeof Reflector<Obj>>[0]> = {}): Promise<Recorded> {
  const { kubeConfig } = await testCluster();
  const { log, lines } = captureLogger();
  const events: string[] = [];
  const reflector = new Reflector<Obj>({
    kubeConfig,
    path: resourcePath({ ...rpr, namespace }),
    log,
    backoff: { initialMs: 20, maxMs: 200 },
    handlers: {
      onAdd: (o) => events.push(`add ${o.metadata?.name}`),
      onUpdate: (old, o) => events.push(`${old === o ? 'resync' : 'update'} ${o.metadata?.name}`),
      onDelete: (o) => events.push(`delete ${o.metadata?.name}`),
    },
    ...extra,
  });
  reflector.start();
  started.push(reflector);
  return { events, reflector, lines };
}

// Stopped after every test, so that a failing test cannot leave a watch open (and the process alive).
const started: Reflector<Obj>[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((r) => r.stop()));
});

const noisy = (lines: Recorded['lines']) => lines.filter((l) => l.level === 'warn' || l.level === 'error');

void test('lists, then sees create, update and delete; stop() is quiet', async () => {
  const ns = await createTestNamespace('refl-basic');
  await createRun(ns, 'before');
  const { events, reflector, lines } = await startReflector(ns, { resyncMs: 0 });
  await reflector.waitForSync();
  assert.equal(reflector.hasSynced(), true);
  assert.deepEqual(events, ['add before']);
  assert.ok(reflector.get(`${ns}/before`));
  assert.equal(reflector.get(`${ns}/before`)?.metadata?.managedFields, undefined, 'managedFields dropped');

  await createRun(ns, 'after');
  await eventually('add after', () => events.includes('add after'));
  await (await api()).patchNamespacedCustomObject(
    { ...rpr, namespace: ns, name: 'after', body: { spec: { keepPod: true } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  await eventually('update after', () => events.includes('update after'));
  assert.equal((reflector.get(`${ns}/after`) as { spec?: { keepPod?: boolean } }).spec?.keepPod, true);
  await (await api()).deleteNamespacedCustomObject({ ...rpr, namespace: ns, name: 'before' });
  await eventually('delete before', () => events.includes('delete before'));
  assert.deepEqual(reflector.keys(), [`${ns}/after`]);

  await reflector.stop();
  assert.deepEqual(noisy(lines), [], 'no warning or error, stop included');
});

void test('resync re-delivers every stored object through onUpdate(obj, obj)', async () => {
  const ns = await createTestNamespace('refl-resync');
  await createRun(ns, 'a');
  await createRun(ns, 'b');
  const { events, reflector } = await startReflector(ns, { resyncMs: 200 });
  await reflector.waitForSync();
  await eventually('two resyncs of each', () => events.filter((e) => e === 'resync a').length >= 2 && events.filter((e) => e === 'resync b').length >= 2);
  await reflector.stop();
  const count = events.length;
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(events.length, count, 'no resync after stop');
});

void test('lists in pages (limit + continue)', async () => {
  const ns = await createTestNamespace('refl-pages');
  for (let i = 0; i < 5; i++) await createRun(ns, `r${i}`);
  const { kubeConfig } = await testCluster();
  const first = await listPage(kubeConfig, resourcePath({ ...rpr, namespace: ns }), { limit: 2 });
  assert.equal(first.items.length, 2);
  assert.ok(first.continueToken, 'the server paginates');
  const { reflector } = await startReflector(ns, { pageSize: 2, resyncMs: 0 });
  await reflector.waitForSync();
  assert.deepEqual(reflector.keys().sort(), [0, 1, 2, 3, 4].map((i) => `${ns}/r${i}`));
  await reflector.stop();
});

void test('label selector applies to list and watch', async () => {
  const ns = await createTestNamespace('refl-labels');
  await createRun(ns, 'mine', { team: 'a' });
  await createRun(ns, 'theirs', { team: 'b' });
  const { events, reflector } = await startReflector(ns, { labelSelector: 'team=a', resyncMs: 0 });
  await reflector.waitForSync();
  await createRun(ns, 'mine2', { team: 'a' });
  await createRun(ns, 'theirs2', { team: 'b' });
  await eventually('add mine2', () => events.includes('add mine2'));
  assert.deepEqual(events, ['add mine', 'add mine2']);
  await reflector.stop();
});

/**
 * Wraps the real client-node Watch so a test can break the current stream, hold reconnects back and
 * rewrite the resourceVersion of the next watch (resourceVersion=1 makes the real server answer 410).
 */
class MeddlingWatch {
  readonly real: Watch;
  current: AbortController | undefined;
  hold: Promise<void> | undefined;
  rvOverride: string | undefined;
  watches: string[] = [];

  constructor(real: Watch) {
    this.real = real;
  }

  fn: WatchFn = async (path, query, onEvent, done) => {
    if (this.hold) await this.hold;
    const q = { ...query };
    if (this.rvOverride) {
      q.resourceVersion = this.rvOverride;
      this.rvOverride = undefined;
    }
    this.watches.push(String(q.resourceVersion));
    this.current = await this.real.watch(path, q, onEvent, done);
    return this.current;
  };
}

void test('survives a broken watch (resumes from the last resourceVersion) and a real 410 (relists, emitting deletes)', async () => {
  const ns = await createTestNamespace('refl-410');
  const { kubeConfig } = await testCluster();
  await createRun(ns, 'a');
  await createRun(ns, 'b');
  const meddler = new MeddlingWatch(new Watch(kubeConfig));
  const { events, reflector, lines } = await startReflector(ns, { watch: meddler.fn, resyncMs: 0 });
  await reflector.waitForSync();
  await eventually('watch connected', () => meddler.current !== undefined);

  // 1. Break the stream with an error: the reflector reconnects from where it was.
  const rvBefore = reflector.lastResourceVersion();
  meddler.current?.abort(new Error('network went away'));
  await eventually('reconnected', () => meddler.watches.length === 2);
  assert.equal(meddler.watches[1], rvBefore, 'resumed from the last resourceVersion, no relist');
  assert.ok(noisy(lines).some((l) => String(l.err).includes('network went away')), 'the failure is logged as a warning');
  await createRun(ns, 'c');
  await eventually('add c after reconnect', () => events.includes('add c'));

  // 2. While the watch is down, b is deleted; the next watch starts from a compacted resourceVersion.
  let release!: () => void;
  meddler.hold = new Promise((resolve) => (release = resolve));
  meddler.current?.abort(new Error('down again'));
  await (await api()).deleteNamespacedCustomObject({ ...rpr, namespace: ns, name: 'b' });
  meddler.rvOverride = '1';
  meddler.hold = undefined;
  release();
  await eventually('delete b found by the relist', () => events.includes('delete b'));
  assert.equal(meddler.watches[2], '1');
  assert.ok(lines.some((l) => String(l.msg).includes('410')), 'the 410 was seen as such');
  assert.deepEqual(reflector.keys().sort(), [`${ns}/a`, `${ns}/c`]);
  assert.deepEqual(events.filter((e) => e.startsWith('add')), ['add a', 'add b', 'add c'], 'the relist did not re-add what was known');

  await createRun(ns, 'd');
  await eventually('watching again after the relist', () => events.includes('add d'));
  await reflector.stop();
});

void test('an HTTP 410 on the watch request also relists (through the seam)', async () => {
  const ns = await createTestNamespace('refl-http410');
  const { kubeConfig } = await testCluster();
  await createRun(ns, 'a');
  const real = new Watch(kubeConfig);
  let calls = 0;
  const watch: WatchFn = (path, query, onEvent, done) => {
    calls++;
    if (calls === 1) {
      done(Object.assign(new Error('Gone'), { statusCode: 410 }));
      return Promise.resolve(new AbortController());
    }
    return real.watch(path, query, onEvent, done);
  };
  const { events, reflector, lines } = await startReflector(ns, { watch, resyncMs: 0 });
  await eventually('relisted after the 410', () => lines.some((l) => String(l.msg).includes('410')) && calls >= 2);
  assert.equal(events.filter((e) => e === 'add a').length, 1, 'the relist did not add a twice');
  await createRun(ns, 'b');
  await eventually('add b', () => events.includes('add b'));
  await reflector.stop();
});

void test('a watch that ends cleanly or errors is retried; stop() during a hanging connect returns', async () => {
  const ns = await createTestNamespace('refl-hang');
  const { kubeConfig } = await testCluster();
  let calls = 0;
  const real = new Watch(kubeConfig);
  const watch: WatchFn = (path, query, onEvent, done) => {
    calls++;
    if (calls === 1) {
      done(null); // the server closed the stream
      return Promise.resolve(new AbortController());
    }
    if (calls === 2) {
      done(new TypeError('terminated'));
      return Promise.resolve(new AbortController());
    }
    if (calls === 3) return real.watch(path, query, onEvent, done);
    return new Promise<AbortController>(() => {}); // never connects
  };
  const { reflector, lines } = await startReflector(ns, { watch, resyncMs: 0 });
  await reflector.waitForSync();
  await eventually('third watch', () => calls === 3);
  await createRun(ns, 'x');
  await eventually('x seen', () => reflector.get(`${ns}/x`) !== undefined);
  assert.equal(noisy(lines).length, 1, 'the clean close is not a warning; the reset is');
  await reflector.stop();
});

void test('waitForSync rejects when stopped before the first list; keyHandlers passes keys', async () => {
  const { kubeConfig } = await testCluster();
  const { log } = captureLogger();
  const keys: string[] = [];
  const reflector = new Reflector<Obj>({
    kubeConfig,
    path: '/apis/runpod-operator.dev/v1alpha1/namespaces/does-not-matter/nosuchresources',
    log,
    handlers: keyHandlers((k) => keys.push(k)),
    backoff: { initialMs: 10, maxMs: 20 },
  });
  reflector.start();
  started.push(reflector);
  const sync = reflector.waitForSync();
  await new Promise((r) => setTimeout(r, 100));
  await reflector.stop();
  await assert.rejects(sync, /stopped/);
  assert.equal(reflector.hasSynced(), false);

  const ns = await createTestNamespace('refl-keys');
  await createRun(ns, 'k');
  const r2 = new Reflector<Obj>({ kubeConfig, path: resourcePath({ ...rpr, namespace: ns }), log, handlers: keyHandlers((k) => keys.push(k)) });
  r2.start();
  started.push(r2);
  await r2.waitForSync();
  assert.deepEqual(keys, [`${ns}/k`]);
  await r2.stop();
});
