// The kept SSH connections of ready pods: one handshake per pod while it answers, a new one when the
// pod, its endpoint or its keys change or the connection broke, none kept past idleness, a cap, or the term.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import type { Client } from 'ssh2';
import { PodConnections, type PodTarget } from '../../../src/run/ports/pod-connections.ts';
import { SshConnection } from '../../../src/ssh/index.ts';

const keys = { clientPrivateKey: 'client-private', clientPublicKey: 'client-public', hostPrivateKey: 'host-private', hostPublicKey: 'ssh-ed25519 AAAA-1' };
const target = (over: Partial<PodTarget> = {}): PodTarget => ({ podId: 'pod-1', host: '10.0.0.1', port: 2201, keys, ...over });

/** A connection over a fake ssh2 client: `end()` closes it as the real one does. */
function fakeConnection(endpoint: string): SshConnection {
  const client = Object.assign(new EventEmitter(), { end() { client.emit('close'); }, destroy() { client.emit('close'); } });
  return new SshConnection(client as unknown as Client, endpoint, 'SHA256:fake');
}

function world(options: { idleMs?: number; max?: number } = {}) {
  let clock = 0;
  const made: SshConnection[] = [];
  const connections = new PodConnections({
    ...options, now: () => clock,
    connect: ({ host, port }) => {
      const connection = fakeConnection(`${host}:${port}`);
      made.push(connection);
      return Promise.resolve(connection);
    },
  });
  /** One reconcile: take, then give back (as the reconciler does when every step went well). */
  const reconcile = async (uid: string, to = target()) => {
    const taken = await connections.take(uid, to);
    connections.giveBack(uid, to, taken.connection);
    return taken;
  };
  return { connections, made, reconcile, advance: (ms: number) => { clock += ms; } };
}

void test('reconciles of a ready pod share one handshake while the connection stays open', async () => {
  const w = world();
  const first = await w.reconcile('run-a');
  const later = [await w.reconcile('run-a'), await w.reconcile('run-a')];
  assert.equal(first.reused, false);
  assert.deepEqual(later.map((taken) => [taken.reused, taken.connection === first.connection]), [[true, true], [true, true]]);
  assert.equal(w.made.length, 1);
  assert.equal(first.connection.closed, false);
});

void test('another pod, endpoint or host key is another connection; the old one is closed', async () => {
  for (const changed of [{ podId: 'pod-2' }, { port: 2202 }, { host: '10.0.0.9' }, { keys: { ...keys, hostPublicKey: 'ssh-ed25519 AAAA-2' } }]) {
    const w = world();
    const first = await w.reconcile('run-a');
    const next = await w.reconcile('run-a', target(changed));
    assert.equal(next.reused, false, JSON.stringify(changed));
    assert.equal(first.connection.closed, true, JSON.stringify(changed));
    assert.equal(w.made.length, 2);
  }
});

void test('a connection that broke (the pod went, a keepalive missed) is made afresh; one not given back is not kept', async () => {
  const w = world();
  const first = await w.reconcile('run-a');
  first.connection.client.emit('close');
  const second = await w.connections.take('run-a', target());
  assert.equal(second.reused, false);
  // A step failed over it: the reconciler closes it instead of giving it back.
  second.connection.close();
  const third = await w.connections.take('run-a', target());
  assert.equal(third.reused, false);
  assert.equal(w.made.length, 3);
  w.connections.giveBack('run-a', target(), second.connection);
  assert.equal(w.connections.size, 0, 'a closed connection is never kept');
});

void test('runs never share a connection, and release closes the run\'s own', async () => {
  const w = world();
  const a = await w.reconcile('run-a');
  const b = await w.reconcile('run-b');
  assert.notEqual(a.connection, b.connection);
  w.connections.release('run-a');
  assert.deepEqual([a.connection.closed, b.connection.closed, w.connections.size], [true, false, 1]);
});

void test('a connection idle longer than idleMs is closed at the next take; at most max are kept, the least recently used goes', async () => {
  const w = world({ idleMs: 60_000, max: 2 });
  const a = await w.reconcile('run-a');
  w.advance(30_000);
  const b = await w.reconcile('run-b');
  w.advance(31_000);
  await w.reconcile('run-b');
  assert.deepEqual([a.connection.closed, b.connection.closed], [true, false], 'run-a idle 61 s, run-b 31 s');

  const c = await w.reconcile('run-c');
  await w.reconcile('run-b');
  const d = await w.reconcile('run-d');
  assert.deepEqual([c.connection.closed, b.connection.closed, d.connection.closed, w.connections.size], [true, false, false, 2]);
});

void test('closeAll ends the term: every kept connection closed, and none kept after', async () => {
  const w = world();
  const a = await w.reconcile('run-a');
  const inFlight = await w.connections.take('run-b', target({ podId: 'pod-b' }));
  w.connections.closeAll();
  w.connections.giveBack('run-b', target({ podId: 'pod-b' }), inFlight.connection);
  assert.deepEqual([a.connection.closed, inFlight.connection.closed, w.connections.size], [true, true, 0]);
});
