// An aborted or cut-off download over a slow link must end at once: not after the reads already
// in flight (up to 2 MiB) have trickled in, and not never because a request went out on a closed
// channel. The bound is wide (5 s against a link that needs 16 s to drain what is in flight).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectPinned, type SshConnection } from '../../src/ssh/connect.ts';
import { SshError } from '../../src/ssh/errors.ts';
import { computeManifest } from '../../src/ssh/manifest.ts';
import { retrieveDirectory } from '../../src/ssh/retrieve.ts';
import { shellQuote } from '../../src/ssh/shell.ts';
import { downloadFile } from '../../src/ssh/transfer.ts';
import { makeRemoteTempDir, remoteSh, removeRemoteDir } from './remote-dir.ts';
import { startSlowProxy, type SlowProxy } from './slow-proxy.ts';
import { startSshd, type TestSshd } from './sshd.ts';

const LINK_BYTES_PER_SECOND = 128 * 1024;
const FILE_SIZE = 16 * 1024 * 1024;
const STOP_AFTER = 256 * 1024;
const BOUND_MS = 5_000;
// More than a whole try can carry at the link's rate (TRY_MS x 128 KiB/s = 384 KiB): only a
// retrieval that keeps what earlier tries fetched can ever finish it.
const RESUME_FILE = 768 * 1024;
const TRY_MS = 3_000;

/** The promise's outcome, or a failure if it is still pending after `ms`. */
async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<PromiseSettledResult<T>> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<'pending'>((resolve) => {
    timer = setTimeout(() => resolve('pending'), ms);
  });
  const settled = promise.then(
    (value): PromiseSettledResult<T> => ({ status: 'fulfilled', value }),
    (reason: unknown): PromiseSettledResult<T> => ({ status: 'rejected', reason }),
  );
  try {
    const first = await Promise.race([settled, pending]);
    assert.notEqual(first, 'pending', `still pending ${ms} ms after the transfer was stopped`);
    return first as PromiseSettledResult<T>;
  } finally {
    clearTimeout(timer);
  }
}

function failureKind(result: PromiseSettledResult<unknown>): string | undefined {
  if (result.status !== 'rejected') assert.fail('the stopped transfer succeeded');
  const reason: unknown = result.reason;
  assert.ok(reason instanceof SshError, `not an SshError: ${String(reason)}`);
  return reason.kind;
}

void describe('a transfer stopped over a slow link', () => {
  let sshd: TestSshd;
  let proxy: SlowProxy;
  let conn: SshConnection;
  let remote: string;
  let local: string;
  before(async () => {
    sshd = await startSshd();
    proxy = await startSlowProxy(sshd, LINK_BYTES_PER_SECOND);
    conn = await connectPinned(sshd.connectOptions());
    remote = await makeRemoteTempDir(conn, 'rpo-slow');
    local = mkdtempSync(join(tmpdir(), 'rpo-slow-local-'));
    await remoteSh(conn, `mkdir -p ${shellQuote(`${remote}/out`)} && head -c ${FILE_SIZE} /dev/urandom > ${shellQuote(`${remote}/out/big.bin`)}`);
    await remoteSh(conn, `mkdir -p ${shellQuote(`${remote}/resume/sub`)} && head -c ${RESUME_FILE} /dev/urandom > ${shellQuote(`${remote}/resume/sub/model.bin`)}`
      + ` && head -c 1000 /dev/urandom > ${shellQuote(`${remote}/resume/small.txt`)} && ln -s sub/model.bin ${shellQuote(`${remote}/resume/latest`)}`);
  });
  after(async () => {
    await removeRemoteDir(conn, remote);
    conn.close();
    await proxy.close();
    await sshd.stop();
    rmSync(local, { recursive: true, force: true });
  });

  const slowConnection = (): Promise<SshConnection> => connectPinned(sshd.connectOptions({ host: proxy.host, port: proxy.port }));

  void it('rejects at once when its signal aborts, and removes the partial file', async () => {
    const slow = await slowConnection();
    try {
      const controller = new AbortController();
      const dir = join(local, 'abort');
      const download = downloadFile(slow, `${remote}/out/big.bin`, join(dir, 'big.bin'), {
        signal: controller.signal,
        onProgress: (bytes) => {
          if (bytes > STOP_AFTER) controller.abort();
        },
      });
      await new Promise<void>((resolve) => controller.signal.addEventListener('abort', () => resolve(), { once: true }));
      assert.equal(failureKind(await settledWithin(download, BOUND_MS)), 'aborted');
      assert.deepEqual(readdirSync(dir), []);
    } finally {
      slow.destroy();
    }
  });

  void it('rejects at once when its connection is destroyed, and removes the partial file', async () => {
    const slow = await slowConnection();
    let destroyed!: () => void;
    const whenDestroyed = new Promise<void>((resolve) => {
      destroyed = resolve;
    });
    const dir = join(local, 'destroy');
    const download = downloadFile(slow, `${remote}/out/big.bin`, join(dir, 'big.bin'), {
      onProgress: (bytes) => {
        if (bytes > STOP_AFTER && !slow.closed) {
          slow.destroy();
          destroyed();
        }
      },
    });
    await whenDestroyed;
    assert.equal(failureKind(await settledWithin(download, BOUND_MS)), 'closed');
    assert.deepEqual(readdirSync(dir), []);
  });

  void it('ends a whole retrieval at once when aborted and its connection destroyed (as the transfer pool does)', async () => {
    const slow = await slowConnection();
    const controller = new AbortController();
    controller.signal.addEventListener('abort', () => slow.destroy(), { once: true });
    const manifest = await computeManifest(conn, `${remote}/out`, { timeoutMs: 60_000 });
    const dir = join(local, 'retrieve');
    const retrieval = retrieveDirectory(slow, `${remote}/out`, dir, manifest, {
      signal: controller.signal,
      onProgress: (progress) => {
        if (progress.bytes > STOP_AFTER) controller.abort();
      },
    });
    await new Promise<void>((resolve) => controller.signal.addEventListener('abort', () => resolve(), { once: true }));
    assert.equal(failureKind(await settledWithin(retrieval, BOUND_MS)), 'aborted');
    assert.deepEqual(readdirSync(dir), []);
  });

  void it('resumes a retrieval that each try is cut short of finishing, fetching only what earlier tries left', async () => {
    // As a leader killed every few seconds: each try gets TRY_MS of a slow link, then is aborted.
    const manifest = await computeManifest(conn, `${remote}/resume`, { timeoutMs: 60_000 });
    const dir = join(local, 'resume');
    let tries = 0;
    let result: Awaited<ReturnType<typeof retrieveDirectory>> | undefined;
    while (tries < 10 && !result) {
      tries += 1;
      const slow = await slowConnection();
      const controller = new AbortController();
      controller.signal.addEventListener('abort', () => slow.destroy(), { once: true });
      const timer = setTimeout(() => controller.abort(), TRY_MS);
      try {
        result = await retrieveDirectory(slow, `${remote}/resume`, dir, manifest, { signal: controller.signal, resume: true });
      } catch (error) {
        assert.ok(error instanceof SshError && error.kind === 'aborted', `try ${tries}: ${String(error)}`);
      } finally {
        clearTimeout(timer);
        slow.destroy();
      }
    }
    assert.deepEqual(result, { ok: true, files: 3, bytes: RESUME_FILE + 1000 }, `after ${tries} tries`);
    assert.ok(tries >= 2, 'the first try was cut short');
    const sha = (data: Buffer): string => createHash('sha256').update(data).digest('hex');
    assert.equal(sha(readFileSync(join(dir, 'sub', 'model.bin'))), manifest.files.find((file) => file.path === 'sub/model.bin')?.sha256);
    assert.deepEqual(readdirSync(join(dir, 'sub')), ['model.bin'], 'no partial file is left once complete');
    assert.deepEqual(readdirSync(dir).sort(), ['latest', 'small.txt', 'sub']);
  });
});
