import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, openSync, readFileSync, readSync, readdirSync, closeSync, rmSync, statSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectPinned, type SshConnection } from '../../src/ssh/connect.ts';
import { isNoSuchFile } from '../../src/ssh/sftp.ts';
import { shellQuote } from '../../src/ssh/shell.ts';
import { ContentMismatchError, downloadFile, uploadFile } from '../../src/ssh/transfer.ts';
import { makeRemoteTempDir, remoteSh, removeRemoteDir } from './remote-dir.ts';
import { startSshd, type TestSshd } from './sshd.ts';

const sha = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

void describe('SFTP transfers over a real sshd', () => {
  let sshd: TestSshd;
  let conn: SshConnection;
  let remote: string;
  let local: string;
  before(async () => {
    sshd = await startSshd();
    conn = await connectPinned(sshd.connectOptions());
    remote = await makeRemoteTempDir(conn);
    local = mkdtempSync(join(tmpdir(), 'rpo-transfer-local-'));
  });
  after(async () => {
    await removeRemoteDir(conn, remote);
    conn.close();
    await sshd.stop();
    rmSync(local, { recursive: true, force: true });
  });

  void describe('uploadFile', () => {
    void it('creates missing parents and gives the file exactly the requested mode', async () => {
      const path = `${remote}/up/a b/c/config.yaml`;
      // A restrictive umask on the pod must not change the mode we asked for.
      await uploadFile(conn, path, 'key: välue\n', 0o640);
      assert.equal(readFileSync(path, 'utf8'), 'key: välue\n');
      assert.equal(statSync(path).mode & 0o7777, 0o640);
      assert.deepEqual(readdirSync(`${remote}/up/a b/c`), ['config.yaml'], 'no temp file is left behind');
    });

    void it('defaults to mode 0600', async () => {
      const path = `${remote}/private.env`;
      await uploadFile(conn, path, Buffer.from('A=1\n'));
      assert.equal(statSync(path).mode & 0o7777, 0o600);
    });

    void it('replaces an existing file by rename: a reader holding the old file never sees a mix', async () => {
      const path = `${remote}/replace.bin`;
      const before = randomBytes(300_000);
      const next = randomBytes(300_000);
      await uploadFile(conn, path, before);
      const oldInode = statSync(path).ino;
      const fd = openSync(path, 'r');
      try {
        await uploadFile(conn, path, next);
        const seen = Buffer.alloc(before.length);
        readSync(fd, seen, 0, seen.length, 0);
        assert.ok(seen.equals(before), 'the open old file is untouched');
      } finally {
        closeSync(fd);
      }
      assert.notEqual(statSync(path).ino, oldInode);
      assert.ok(readFileSync(path).equals(next));
    });

    void it('writes large contents whole', async () => {
      const path = `${remote}/big.bin`;
      const data = randomBytes(3 * 1024 * 1024 + 17);
      await uploadFile(conn, path, data);
      assert.equal(sha(readFileSync(path)), sha(data));
    });

    void it('fails without leaving anything when the target cannot be written', async () => {
      await remoteSh(conn, `mkdir -p ${shellQuote(`${remote}/blocked/target`)}`);
      await assert.rejects(uploadFile(conn, `${remote}/blocked/target`, 'x'));
      assert.deepEqual(readdirSync(`${remote}/blocked`), ['target']);
      await assert.rejects(uploadFile(conn, `${remote}/private.env/below`, 'x'), /not a directory/);
    });
  });

  void describe('downloadFile', () => {
    void it('streams files with odd names and nested paths, hashing what it writes', async () => {
      const files: Record<string, Buffer> = {
        'plain.txt': Buffer.from('plain\n'),
        'with space.bin': randomBytes(200_000),
        'nested/deeper dir/file name.dat': randomBytes(1_000_003),
        'empty': Buffer.alloc(0),
      };
      for (const [path, data] of Object.entries(files)) await uploadFile(conn, `${remote}/dl/${path}`, data, 0o644);
      for (const [path, data] of Object.entries(files)) {
        const target = join(local, 'dl', ...path.split('/'));
        const progress: number[] = [];
        const result = await downloadFile(conn, `${remote}/dl/${path}`, target, { expectedSha256: sha(data), expectedSize: data.length, onProgress: (n) => progress.push(n) });
        assert.deepEqual(result, { bytes: data.length, sha256: sha(data) });
        assert.ok(readFileSync(target).equals(data), path);
        assert.deepEqual([...progress].sort((a, b) => a - b), progress, 'progress only grows');
        if (data.length > 0) assert.equal(progress.at(-1), data.length);
      }
      assert.deepEqual(readdirSync(join(local, 'dl')).sort(), ['empty', 'nested', 'plain.txt', 'with space.bin'], 'no temp files are left');
    });

    void it('leaves nothing at the local path when the hash does not match', async () => {
      await uploadFile(conn, `${remote}/mismatch.txt`, 'actual content');
      const target = join(local, 'mismatch', 'mismatch.txt');
      await assert.rejects(downloadFile(conn, `${remote}/mismatch.txt`, target, { expectedSha256: sha('expected content') }), ContentMismatchError);
      assert.deepEqual(readdirSync(join(local, 'mismatch')), []);
    });

    void it('stops one byte past the expected size, so an endless file cannot fill the disk', async () => {
      await remoteSh(conn, `ln -s /dev/zero ${shellQuote(`${remote}/endless`)}`);
      const target = join(local, 'endless');
      await assert.rejects(downloadFile(conn, `${remote}/endless`, target, { expectedSize: 5_000_000, expectedSha256: sha('') }), (err: unknown) => {
        assert.ok(err instanceof ContentMismatchError);
        assert.equal(err.bytes, 5_000_001);
        assert.match(err.message, /larger than the expected 5000000 bytes/);
        return true;
      });
      assert.equal(existsSync(target), false);
    });

    void it('growing: takes a file still appended to as its first expectedSize bytes', async () => {
      const first = 'line 1\nline 2\n';
      await uploadFile(conn, `${remote}/growing.log`, `${first}line 3, written after the size was read\n`);
      const target = join(local, 'growing.log');
      const result = await downloadFile(conn, `${remote}/growing.log`, target, { expectedSize: first.length, expectedSha256: sha(first), growing: true });
      assert.deepEqual(result, { bytes: first.length, sha256: sha(first) });
      assert.equal(readFileSync(target, 'utf8'), first);
    });

    void it('reports a missing remote file as such', async () => {
      await assert.rejects(downloadFile(conn, `${remote}/no such file`, join(local, 'x')), (err: unknown) => isNoSuchFile(err));
      assert.equal(existsSync(join(local, 'x')), false);
    });

    void it('with resume, continues from the partial an interrupted try kept, and starts over when that partial is stale', async () => {
      const data = randomBytes(3_000_000);
      await uploadFile(conn, `${remote}/resume.bin`, data, 0o644);
      const dir = join(local, 'resume');
      const target = join(dir, 'resume.bin');
      const controller = new AbortController();
      await assert.rejects(downloadFile(conn, `${remote}/resume.bin`, target, {
        resume: true, signal: controller.signal,
        onProgress: (n) => {
          if (n > 1_000_000) controller.abort();
        },
      }));
      const kept = statSync(join(dir, '.resume.bin.part')).size;
      assert.ok(kept > 0 && kept < data.length, `the interrupted try kept ${kept} bytes`);
      const progress: number[] = [];
      const expected = { expectedSha256: sha(data), expectedSize: data.length };
      assert.deepEqual(await downloadFile(conn, `${remote}/resume.bin`, target, { ...expected, resume: true, onProgress: (n) => progress.push(n) }), { bytes: data.length, sha256: sha(data) });
      assert.ok((progress[0] ?? 0) > kept, 'the second try started from the kept bytes');
      assert.ok(readFileSync(target).equals(data));
      assert.deepEqual(readdirSync(dir), ['resume.bin']);

      // A partial that is not the start of the content (the file changed since) is not trusted.
      writeFileSync(join(dir, '.again.bin.part'), randomBytes(500_000));
      assert.deepEqual(await downloadFile(conn, `${remote}/resume.bin`, join(dir, 'again.bin'), { ...expected, resume: true }), { bytes: data.length, sha256: sha(data) });
      assert.ok(readFileSync(join(dir, 'again.bin')).equals(data));
      assert.deepEqual(readdirSync(dir).sort(), ['again.bin', 'resume.bin']);
    });

    void it('stops when aborted and leaves no partial file', async () => {
      await remoteSh(conn, `head -c 20000000 /dev/zero > ${shellQuote(`${remote}/abort.bin`)}`);
      const controller = new AbortController();
      const target = join(local, 'abort', 'abort.bin');
      await assert.rejects(
        downloadFile(conn, `${remote}/abort.bin`, target, {
          signal: controller.signal,
          onProgress: (n) => {
            if (n > 1_000_000) controller.abort();
          },
        }),
        (err: unknown) => err instanceof Error && (err as { kind?: string }).kind === 'aborted',
      );
      assert.deepEqual(readdirSync(join(local, 'abort')), []);
      // The connection survives an aborted transfer.
      assert.equal(await remoteSh(conn, 'echo ok'), 'ok\n');
    });
  });
});
