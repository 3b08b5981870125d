// Leader election against a real kube-apiserver: short timings, one Lease per test namespace.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { CoordinationV1Api, V1MicroTime } from '@kubernetes/client-node';
import { isConflict } from '../../src/kube/errors.ts';
import { LeaderElector, type LeaderElectorOptions } from '../../src/kube/leader.ts';
import { createTestNamespace, testCluster } from '../support/cluster.ts';
import { captureLogger } from './log-capture.ts';
import { eventually } from '../support/eventually.ts';

const timings = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 250 };

interface Candidate {
  elector: LeaderElector;
  started: number;
  lost: number;
  signal?: AbortSignal;
}

// Stopped after every test, so that a failing test cannot leave an elector renewing (and the process alive).
const candidates: Candidate[] = [];
afterEach(async () => {
  await Promise.all(candidates.splice(0).map((c) => c.elector.stop()));
});

async function candidate(namespace: string, identity: string, extra: Partial<LeaderElectorOptions> = {}): Promise<Candidate> {
  const { kubeConfig } = await testCluster();
  const c: Candidate = { elector: undefined as unknown as LeaderElector, started: 0, lost: 0 };
  c.elector = new LeaderElector({
    kubeConfig, logger: captureLogger().log, namespace, name: 'leader', identity, ...timings,
    onStartedLeading: (signal) => {
      c.started++;
      c.signal = signal;
    },
    onStoppedLeading: () => void c.lost++,
    ...extra,
  });
  candidates.push(c);
  return c;
}

async function readLease(namespace: string) {
  const { kubeConfig } = await testCluster();
  return kubeConfig.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace, name: 'leader' });
}

void test('two candidates: exactly one leads; the other takes over at once after a graceful release', async () => {
  const ns = await createTestNamespace('leader-two');
  // A lease far longer than the test waits: b can only get in through the release.
  const long = { leaseDurationMs: 60_000 };
  const a = await candidate(ns, 'a', long);
  const b = await candidate(ns, 'b', long);
  a.elector.start();
  await eventually('a leads', () => a.elector.isLeader());
  b.elector.start();
  await eventually('b has seen a as the holder', () => b.elector.leader() === 'a');
  await delay(1000);
  assert.equal(a.elector.isLeader(), true);
  assert.equal(b.elector.isLeader(), false);
  assert.equal(b.started, 0);

  const held = await readLease(ns);
  assert.equal(held.spec?.holderIdentity, 'a');
  assert.equal(held.spec?.leaseDurationSeconds, 60);
  assert.match(String(held.spec?.renewTime), /\.\d{6}Z$/, 'MicroTime with microseconds (a string on read)');

  await a.elector.stop();
  assert.equal(a.signal?.aborted, true, "a's work was told to stop");
  assert.equal(a.lost, 0, 'a graceful stop is not a loss');
  const free = await readLease(ns);
  assert.ok(free.spec?.holderIdentity === '' || free.spec?.holderIdentity === 'b', 'released (or already taken by b)');
  await eventually('b leads (well before the 60 s lease could expire)', () => b.elector.isLeader(), 20_000);
  const taken = await readLease(ns);
  assert.equal(taken.spec?.holderIdentity, 'b');
  assert.equal(taken.spec?.leaseTransitions, 1);
  await b.elector.stop();
});

void test('stop() waits for the leader work to wind down, renewing meanwhile, then releases', async () => {
  const ns = await createTestNamespace('leader-drain');
  let finishWork!: () => void;
  const a = await candidate(ns, 'a', {
    onStartedLeading: (signal) => new Promise<void>((resolve) => {
      signal.addEventListener('abort', () => { finishWork = resolve; }, { once: true });
    }),
  });
  const b = await candidate(ns, 'b');
  a.elector.start();
  await eventually('a leads', () => a.elector.isLeader());
  b.elector.start();
  let stopped = false;
  const stopping = a.elector.stop().then(() => (stopped = true));
  await eventually('a was told to stop', () => finishWork !== undefined);
  await delay(timings.leaseDurationMs + 500); // longer than the lease: only renewals keep b out
  assert.equal(stopped, false);
  assert.equal(b.elector.isLeader(), false, 'a still renews while its work winds down');
  assert.equal((await readLease(ns)).spec?.holderIdentity, 'a');
  finishWork();
  await stopping;
  await eventually('b leads', () => b.elector.isLeader());
  await b.elector.stop();
});

void test('a holder that vanishes without releasing is replaced only after the lease expires', async () => {
  const ns = await createTestNamespace('leader-expire');
  const a = await candidate(ns, 'a', { releaseOnCancel: false });
  const b = await candidate(ns, 'b');
  a.elector.start();
  await eventually('a leads', () => a.elector.isLeader());
  b.elector.start();
  await eventually('b has seen a', () => b.elector.leader() === 'a');
  await a.elector.stop(); // no release: as if a crashed
  const gone = Date.now();
  assert.equal((await readLease(ns)).spec?.holderIdentity, 'a');
  await eventually('b leads', () => b.elector.isLeader(), 15_000);
  assert.ok(Date.now() - gone >= timings.leaseDurationMs - 2 * timings.retryPeriodMs * 2.2 - 100, 'b waited for the lease to expire');
  const lease = await readLease(ns);
  assert.equal(lease.spec?.holderIdentity, 'b');
  assert.equal(lease.spec?.leaseTransitions, 1);
  await b.elector.stop();
});

void test('a leader whose lease is taken from it stops leading (signal aborted, onStoppedLeading)', async () => {
  const ns = await createTestNamespace('leader-lost');
  const a = await candidate(ns, 'a');
  a.elector.start();
  await eventually('a leads', () => a.elector.isLeader());
  const { kubeConfig } = await testCluster();
  const api = kubeConfig.makeApiClient(CoordinationV1Api);
  await eventually('the intruder took the lease', async () => {
    const lease = await readLease(ns);
    try {
      await api.replaceNamespacedLease({
        namespace: ns, name: 'leader',
        body: { ...lease, spec: { ...lease.spec, holderIdentity: 'intruder', leaseDurationSeconds: 3600, renewTime: new V1MicroTime(), acquireTime: new V1MicroTime() } },
      });
      return true;
    } catch (err) {
      if (isConflict(err)) return false; // a renewed in between
      throw err;
    }
  });
  await eventually('a lost', () => a.lost === 1, 10_000);
  assert.equal(a.elector.isLeader(), false);
  assert.equal(a.signal?.aborted, true);
  assert.equal((await readLease(ns)).spec?.holderIdentity, 'intruder', 'a did not release what it no longer held');
  await a.elector.stop();
});

void test('a leader that reads another holder in the Lease stops at once, not at its renew deadline', async () => {
  const ns = await createTestNamespace('leader-seen');
  // A renew deadline far beyond the wait below: only seeing the other holder can end the leadership in time.
  const a = await candidate(ns, 'a', { leaseDurationMs: 60_000, renewDeadlineMs: 45_000, retryPeriodMs: 250 });
  a.elector.start();
  await eventually('a leads', () => a.elector.isLeader());
  const { kubeConfig } = await testCluster();
  const api = kubeConfig.makeApiClient(CoordinationV1Api);
  await eventually('the intruder took the lease', async () => {
    const lease = await readLease(ns);
    try {
      await api.replaceNamespacedLease({
        namespace: ns, name: 'leader',
        body: { ...lease, spec: { ...lease.spec, holderIdentity: 'intruder', leaseDurationSeconds: 3600, renewTime: new V1MicroTime(), acquireTime: new V1MicroTime() } },
      });
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  });
  await eventually('a stopped leading after its next read', () => a.lost === 1, 15_000);
  assert.equal(a.signal?.aborted, true, "a's work was aborted");
  assert.equal(a.elector.isLeader(), false);
  await a.elector.stop();
});

void test('a candidate watching the Lease takes it as soon as it is released, not at its next retry', async () => {
  const ns = await createTestNamespace('leader-watch');
  const slow = { leaseDurationMs: 60_000, renewDeadlineMs: 20_000, retryPeriodMs: 10_000 };
  const a = await candidate(ns, 'a', { ...slow, retryPeriodMs: 250 });
  const b = await candidate(ns, 'b', slow);
  a.elector.start();
  await eventually('a leads', () => a.elector.isLeader());
  b.elector.start();
  await eventually('b has seen a as the holder', () => b.elector.leader() === 'a');
  await a.elector.stop();
  // b's next try is 10-22 s away: only the watch can bring it in within this bound.
  await eventually('b leads', () => b.elector.isLeader(), 6_000);
  await b.elector.stop();
});
