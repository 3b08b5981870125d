import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { SshConnection, connectPinned } from '../../src/ssh/connect.ts';
import { HostKeyMismatchError, SshAuthError, SshError, isNotReadyYet } from '../../src/ssh/errors.ts';
import { exec } from '../../src/ssh/exec.ts';
import { fingerprint, generateKeyPair } from '../../src/ssh/keys.ts';
import { startSshd, type TestSshd } from './sshd.ts';

void describe('connectPinned against a real sshd', () => {
  let sshd: TestSshd;
  before(async () => {
    sshd = await startSshd();
  });
  after(async () => {
    await sshd.stop();
  });

  void it('connects when the server presents the pinned host key', async () => {
    const conn = await connectPinned(sshd.connectOptions());
    try {
      assert.ok(conn instanceof SshConnection);
      assert.equal(conn.hostKeyFingerprint, fingerprint(sshd.hostKey.publicKey));
      const result = await exec(conn, 'echo pinned', { timeoutMs: 10_000 });
      assert.equal(result.stdout.toString(), 'pinned\n');
    } finally {
      conn.close();
    }
  });

  void it('refuses a server with another host key, naming both fingerprints, before authenticating', async () => {
    const pinned = generateKeyPair('some-other-pod');
    const logBefore = sshd.log().split('Accepted publickey').length;
    const err = await connectPinned(sshd.connectOptions({ hostPublicKey: pinned.publicKey })).then(
      () => assert.fail('connected to a server with the wrong host key'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof HostKeyMismatchError, String(err));
    assert.equal(err.kind, 'host-key-mismatch');
    assert.equal(err.expectedFingerprint, fingerprint(pinned.publicKey));
    assert.equal(err.presentedFingerprint, fingerprint(sshd.hostKey.publicKey));
    assert.match(err.message, new RegExp(escape(fingerprint(pinned.publicKey))));
    assert.match(err.message, new RegExp(escape(fingerprint(sshd.hostKey.publicKey))));
    assert.equal(isNotReadyYet(err), false);
    // The client key was never offered, so no session (and no command) can have existed.
    assert.equal(sshd.log().split('Accepted publickey').length, logBefore);
  });

  void it('reports a client key the server does not accept as an auth error', async () => {
    const stranger = generateKeyPair('stranger');
    const err = await connectPinned(sshd.connectOptions({ privateKey: stranger.privateKey })).then(
      () => assert.fail('authenticated with a key that is not authorized'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof SshAuthError, String(err));
    assert.equal(err.kind, 'auth-rejected');
    assert.equal(isNotReadyYet(err), false);
  });

  void it('refuses a pinned key that is not a public key line', async () => {
    await assert.rejects(connectPinned(sshd.connectOptions({ hostPublicKey: 'ssh-ed25519 not-base64!' })), TypeError);
  });
});

void describe('connectPinned when nothing usable answers', () => {
  void it('reports a refused connection as "refused" (not ready yet)', async () => {
    const port = await closedPort();
    const err = await failure(connectPinned(options(port, 5_000)));
    assert.equal(err.kind, 'refused');
    assert.ok(isNotReadyYet(err));
  });

  void it('reports a listener that never speaks SSH as "timeout"', async () => {
    const sockets: Socket[] = [];
    const server = await listen((socket) => sockets.push(socket));
    try {
      const err = await failure(connectPinned(options(port(server), 300)));
      assert.equal(err.kind, 'timeout');
      assert.ok(isNotReadyYet(err));
    } finally {
      for (const socket of sockets) socket.destroy();
      await close(server);
    }
  });

  void it('reports a listener that hangs up at once (a relay with no sshd behind it) as "closed"', async () => {
    const server = await listen((socket) => socket.destroy());
    try {
      const err = await failure(connectPinned(options(port(server), 5_000)));
      assert.equal(err.kind, 'closed');
      assert.ok(isNotReadyYet(err));
    } finally {
      await close(server);
    }
  });

  void it('reports a listener that resets at once (the simulator\'s refusal before sshd listens) as "closed"', async () => {
    const server = await listen((socket) => socket.resetAndDestroy());
    try {
      const err = await failure(connectPinned(options(port(server), 5_000)));
      assert.equal(err.kind, 'closed');
      assert.ok(isNotReadyYet(err));
    } finally {
      await close(server);
    }
  });

  void it('stops waiting when its signal is aborted', async () => {
    const sockets: Socket[] = [];
    const server = await listen((socket) => sockets.push(socket));
    const controller = new AbortController();
    try {
      const pending = connectPinned({ ...options(port(server), 60_000), signal: controller.signal });
      controller.abort();
      const err = await failure(pending);
      assert.equal(err.kind, 'aborted');
    } finally {
      for (const socket of sockets) socket.destroy();
      await close(server);
    }
  });
});

function options(portNumber: number, readyTimeoutMs: number) {
  const host = generateKeyPair('h');
  const client = generateKeyPair('c');
  return { host: '127.0.0.1', port: portNumber, username: 'root', privateKey: client.privateKey, hostPublicKey: host.publicKey, readyTimeoutMs };
}

async function failure(promise: Promise<unknown>): Promise<SshError> {
  const err = await promise.then(
    () => assert.fail('expected a failure'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof SshError, String(err));
  return err;
}

function listen(onConnection: (socket: Socket) => void): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer(onConnection);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

function port(server: Server): number {
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  return address.port;
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

async function closedPort(): Promise<number> {
  const server = await listen(() => undefined);
  const p = port(server);
  await close(server);
  return p;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
