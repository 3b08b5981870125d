import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { connectPinned, type SshConnection } from '../../src/ssh/connect.ts';
import { ManifestError, computeManifest, parseManifest, type Manifest } from '../../src/ssh/manifest.ts';
import { retrieveDirectory, type RetrieveProgress } from '../../src/ssh/retrieve.ts';
import { shellQuote } from '../../src/ssh/shell.ts';
import { uploadFile } from '../../src/ssh/transfer.ts';
import { makeRemoteTempDir, remoteSh, removeRemoteDir } from './remote-dir.ts';
import { startSshd, type TestSshd } from './sshd.ts';

const sha = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

const RESULTS: Record<string, Buffer> = {
  'model.safetensors': randomBytes(2_500_000),
  'config.json': Buffer.from('{"a": 1}\n'),
  'with space.txt': Buffer.from('spaced out\n'),
  'checkpoint-1/optimizer state.pt': randomBytes(700_001),
  'checkpoint-1/nested/deep/leaf': Buffer.from('leaf'),
  'empty': Buffer.alloc(0),
  '..dots are fine': Buffer.from('a name, not a parent'),
  '.hidden/...': Buffer.from('three dots'),
};

void describe('retrieveDirectory over a real sshd', () => {
  let sshd: TestSshd;
  let conn: SshConnection;
  let remoteRoot: string;
  let localRoot: string;
  let remote: string;
  let local: string;
  let n = 0;

  before(async () => {
    sshd = await startSshd();
    conn = await connectPinned(sshd.connectOptions());
    remoteRoot = await makeRemoteTempDir(conn, 'rpo-retrieve');
    localRoot = mkdtempSync(join(tmpdir(), 'rpo-retrieve-local-'));
  });
  after(async () => {
    await removeRemoteDir(conn, remoteRoot);
    conn.close();
    await sshd.stop();
    rmSync(localRoot, { recursive: true, force: true });
  });
  beforeEach(async () => {
    n += 1;
    remote = `${remoteRoot}/run-${n}/output`;
    local = join(localRoot, `run-${n}`);
    for (const [path, data] of Object.entries(RESULTS)) await uploadFile(conn, `${remote}/${path}`, data, 0o644);
  });

  const manifestNow = (): Promise<Manifest> => computeManifest(conn, remote, { timeoutMs: 60_000 });

  void it('downloads every file, verifies it and counts files and bytes', async () => {
    const manifest = await manifestNow();
    assert.equal(manifest.files.length, Object.keys(RESULTS).length);
    const progress: RetrieveProgress[] = [];
    const result = await retrieveDirectory(conn, remote, local, manifest, { onProgress: (p) => progress.push(p) });
    const totalBytes = Object.values(RESULTS).reduce((sum, b) => sum + b.length, 0);
    assert.deepEqual(result, { ok: true, files: Object.keys(RESULTS).length, bytes: totalBytes });
    for (const [path, data] of Object.entries(RESULTS)) assert.ok(readFileSync(join(local, ...path.split('/'))).equals(data), path);
    assert.deepEqual(progress.at(-1), { files: 8, totalFiles: 8, bytes: totalBytes, totalBytes });
  });

  void it('retrieves an empty results directory as zero files', async () => {
    const empty = `${remoteRoot}/run-${n}/empty-output`;
    await remoteSh(conn, `mkdir -p ${shellQuote(empty)}`);
    const manifest = await computeManifest(conn, empty, { timeoutMs: 60_000 });
    assert.deepEqual(await retrieveDirectory(conn, empty, local, manifest), { ok: true, files: 0, bytes: 0 });
  });

  void it('reports a results directory that does not exist', async () => {
    await assert.rejects(computeManifest(conn, `${remoteRoot}/nothing-here`, { timeoutMs: 60_000 }), (err: unknown) => err instanceof ManifestError && /does not exist/.test(err.message));
  });

  void it('detects a file changed after the manifest was made (same size), and does not keep it', async () => {
    const manifest = await manifestNow();
    const changed = Buffer.from(RESULTS['config.json'] ?? '');
    changed[2] = 'b'.charCodeAt(0);
    await uploadFile(conn, `${remote}/config.json`, changed, 0o644);
    const result = await retrieveDirectory(conn, remote, local, manifest);
    assert.deepEqual(result, { ok: false, files: 7, bytes: result.bytes, missing: [], different: ['config.json'], extra: [], refused: [] });
    assert.equal(existsSync(join(local, 'config.json')), false);
  });

  void it('detects a file that grew after the manifest was made', async () => {
    const manifest = await manifestNow();
    await remoteSh(conn, `printf more >> ${shellQuote(`${remote}/with space.txt`)}`);
    const result = await retrieveDirectory(conn, remote, local, manifest);
    assert.equal(result.ok, false);
    assert.ok(!result.ok && result.different.includes('with space.txt'));
  });

  void it('detects a file deleted after the manifest was made', async () => {
    const manifest = await manifestNow();
    await remoteSh(conn, `rm ${shellQuote(`${remote}/checkpoint-1/nested/deep/leaf`)}`);
    const result = await retrieveDirectory(conn, remote, local, manifest);
    assert.ok(!result.ok);
    assert.deepEqual([result.missing, result.different, result.extra], [['checkpoint-1/nested/deep/leaf'], [], []]);
  });

  void it('detects a file added on the pod after the manifest was made (extra)', async () => {
    const manifest = await manifestNow();
    await uploadFile(conn, `${remote}/late arrival.log`, 'written after the manifest');
    const result = await retrieveDirectory(conn, remote, local, manifest);
    assert.ok(!result.ok);
    assert.deepEqual([result.missing, result.different, result.extra], [[], [], ['late arrival.log']]);
  });

  void it('detects a local file the manifest does not list (extra)', async () => {
    const manifest = await manifestNow();
    mkdirSync(join(local, 'checkpoint-1'), { recursive: true });
    writeFileSync(join(local, 'checkpoint-1', 'stale'), 'left from elsewhere');
    const result = await retrieveDirectory(conn, remote, local, manifest);
    assert.ok(!result.ok);
    assert.deepEqual([result.missing, result.different, result.extra], [[], [], ['checkpoint-1/stale']]);
  });

  void it('stores a symlink inside the result set as the same link, never following it', async () => {
    await remoteSh(conn, `ln -s checkpoint-1 ${shellQuote(`${remote}/latest`)} && ln -s '../config.json' ${shellQuote(`${remote}/checkpoint-1/config link`)}`);
    const manifest = await manifestNow();
    const links = [...manifest.links ?? []].sort((a, b) => a.path.localeCompare(b.path));
    assert.deepEqual(links, [{ path: 'checkpoint-1/config link', target: '../config.json' }, { path: 'latest', target: 'checkpoint-1' }]);
    const result = await retrieveDirectory(conn, remote, local, manifest);
    assert.deepEqual(result, { ok: true, files: Object.keys(RESULTS).length + 2, bytes: Object.values(RESULTS).reduce((sum, b) => sum + b.length, 0) });
    assert.ok(lstatSync(join(local, 'latest')).isSymbolicLink());
    assert.equal(readlinkSync(join(local, 'latest')), 'checkpoint-1');
    assert.equal(readlinkSync(join(local, 'checkpoint-1', 'config link')), '../config.json');
  });

  void it('refuses by name a symlink that leaves the result set, storing and following nothing', async () => {
    await remoteSh(conn, `ln -s /etc/passwd ${shellQuote(`${remote}/passwd link`)} && ln -s ../../.. ${shellQuote(`${remote}/checkpoint-1/up`)}`);
    const manifest = await manifestNow();
    assert.equal(manifest.links?.length, 2, 'every symlink is a file of the result set');
    const result = await retrieveDirectory(conn, remote, local, manifest);
    assert.ok(!result.ok, 'never "verified" while a symlink is left out');
    assert.deepEqual(result.refused, ['checkpoint-1/up -> ../../..: points outside the results directory', 'passwd link -> /etc/passwd: points to an absolute path']);
    assert.deepEqual([result.missing, result.different, result.extra], [[], [], []]);
    assert.equal(existsSync(join(local, 'passwd link')), false);
    assert.equal(existsSync(join(local, 'checkpoint-1', 'up')), false);
  });

  void it('names a FIFO in the results (not retrievable) instead of leaving it out', async () => {
    await remoteSh(conn, `mkfifo ${shellQuote(`${remote}/a pipe`)}`);
    const result = await retrieveDirectory(conn, remote, local, await manifestNow());
    assert.ok(!result.ok);
    assert.deepEqual(result.extra, ['a pipe']);
  });

  void it('refuses a results directory that is itself a symlink (it would be followed)', async () => {
    const linked = `${remoteRoot}/run-${n}/linked-output`;
    await remoteSh(conn, `ln -s output ${shellQuote(linked)}`);
    await assert.rejects(computeManifest(conn, linked, { timeoutMs: 60_000 }), (err: unknown) => err instanceof ManifestError && /is a symlink/.test(err.message));
  });

  void it('refuses a manifest whose paths leave the results directory, writing nothing', async () => {
    const escape = join(localRoot, `escaped-${n}`);
    const hostile = { files: [{ path: `../escaped-${n}`, size: 4, sha256: sha('leaf') }] };
    await assert.rejects(retrieveDirectory(conn, remote, local, hostile), ManifestError);
    for (const path of ['/etc/passwd', 'a/../../b', './x', 'a//b']) {
      await assert.rejects(retrieveDirectory(conn, remote, local, { files: [{ path, size: 1, sha256: sha('x') }] }), ManifestError, path);
    }
    assert.throws(() => parseManifest(Buffer.from(`${sha('leaf')} 4 ../escaped-${n}\0`)), ManifestError);
    assert.equal(existsSync(escape), false);
    assert.equal(existsSync(local), false, 'nothing was created');
  });
});
