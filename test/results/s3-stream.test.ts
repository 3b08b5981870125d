// The streamed path and the verification against real parts: a real sshd (SFTP reads) and a real
// S3-compatible store (SeaweedFS). A file whose bytes differ from the manifest is refused with
// nothing left in the store (small: before its PutObject; large: its multipart upload aborted); a
// stored file is found again on a retry (resume); the read-back names missing, different and extra.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ListMultipartUploadsCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { FileRefusedError, headObject, PART_SIZE_BYTES, streamFileToS3 } from '../../src/results/s3-stream.ts';
import { resultKey, type S3Target } from '../../src/results/s3-target.ts';
import { alreadyStored, committedObjects, sha256sums, verifyObjects, writeSums } from '../../src/results/s3-verify.ts';
import { connectPinned, SftpSession, type ManifestFile, type SshConnection } from '../../src/ssh/index.ts';
import { startObjectStore, type ObjectStore } from '../s3/seaweedfs.ts';
import { makeRemoteTempDir, removeRemoteDir } from '../ssh/remote-dir.ts';
import { startSshd, type TestSshd } from '../ssh/sshd.ts';

const BUCKET = 'stream';
const sha = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

describe('streaming result files from SFTP into S3', () => {
  let store: ObjectStore;
  let s3: S3Client;
  let sshd: TestSshd;
  let conn: SshConnection;
  let sftp: SftpSession;
  let dir: string;
  let target: S3Target;

  before(async () => {
    [store, sshd] = await Promise.all([startObjectStore(), startSshd()]);
    await store.createBucket(BUCKET);
    s3 = store.client();
    conn = await connectPinned(sshd.connectOptions());
    sftp = await SftpSession.open(conn);
    dir = await makeRemoteTempDir(conn);
    target = { client: s3, bucket: BUCKET, keyPrefix: 'ns/run/uid-1/' };
  });
  after(async () => {
    sftp.end();
    await removeRemoteDir(conn, dir);
    conn.close();
    s3.destroy();
    await Promise.all([sshd.stop(), store.stop()]);
  });

  const put = (path: string, data: Buffer): ManifestFile => {
    writeFileSync(join(dir, path), data);
    return { path, size: data.length, sha256: sha(data) };
  };
  const openUploads = async (): Promise<number> => (await s3.send(new ListMultipartUploadsCommand({ Bucket: BUCKET }))).Uploads?.length ?? 0;

  test('a small and a multipart file are stored with their metadata sha256; the read-back verifies them and a retry finds them stored', async () => {
    const small = put('small.txt', Buffer.from('hello\n'));
    const big = put('big.bin', randomBytes(PART_SIZE_BYTES + 1234));
    const empty = put('empty', Buffer.alloc(0));
    for (const file of [small, big, empty]) await streamFileToS3(sftp, join(dir, file.path), file, target, resultKey(target, file.path));
    const head = await headObject(s3, BUCKET, resultKey(target, 'big.bin'));
    assert.equal(head?.sha256, big.sha256);
    assert.match(head?.checksumSha256 ?? '', /-2$/, 'a multipart object has a composite checksum of its 2 parts');
    assert.equal((await headObject(s3, BUCKET, resultKey(target, 'small.txt')))?.checksumSha256, Buffer.from(small.sha256, 'hex').toString('base64'));
    assert.deepEqual(await verifyObjects(target, [small, big, empty]), { missing: [], different: [], extra: [] });
    assert.deepEqual([...await alreadyStored(target, [small, big, empty])].sort(), [['big.bin', 'controller'], ['empty', 'controller'], ['small.txt', 'controller']]);
  });

  test('bytes that differ from the manifest are refused, nothing is stored, no multipart upload is left open', async () => {
    const small = put('changed.txt', Buffer.from('original\n'));
    writeFileSync(join(dir, 'changed.txt'), 'tampered\n');
    await assert.rejects(streamFileToS3(sftp, join(dir, small.path), small, target, resultKey(target, small.path)),
      (error) => error instanceof FileRefusedError && error.kind === 'different' && /SHA-256 .* differs/.test(error.message));
    assert.equal(await headObject(s3, BUCKET, resultKey(target, small.path)), undefined);

    const data = randomBytes(PART_SIZE_BYTES * 2);
    const big = put('changed.bin', data);
    data[data.length - 1] = (data[data.length - 1] ?? 0) ^ 1;
    writeFileSync(join(dir, 'changed.bin'), data);
    await assert.rejects(streamFileToS3(sftp, join(dir, big.path), big, target, resultKey(target, big.path)),
      (error) => error instanceof FileRefusedError && error.kind === 'different');
    assert.equal(await headObject(s3, BUCKET, resultKey(target, big.path)), undefined, 'the multipart upload was never completed');
    assert.equal(await openUploads(), 0, 'the multipart upload was aborted');

    const grown = put('grown.txt', Buffer.from('12345'));
    writeFileSync(join(dir, 'grown.txt'), '123456');
    await assert.rejects(streamFileToS3(sftp, join(dir, grown.path), grown, target, resultKey(target, grown.path)), /larger than the manifest's 5 bytes/);
    await assert.rejects(streamFileToS3(sftp, join(dir, 'gone'), { path: 'gone', size: 1, sha256: '0'.repeat(64) }, target, resultKey(target, 'gone')),
      (error) => error instanceof FileRefusedError && error.kind === 'missing');
  });

  test('the read-back names what is missing, different (metadata or size) and extra under results/', async () => {
    const other = { ...target, keyPrefix: 'ns/run/uid-2/' };
    const a = put('a.txt', Buffer.from('a\n'));
    const b = put('b.txt', Buffer.from('b\n'));
    await streamFileToS3(sftp, join(dir, a.path), a, other, resultKey(other, a.path));
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: resultKey(other, b.path), Body: 'b\n', Metadata: { sha256: '0'.repeat(64) } }));
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: resultKey(other, 'extra.txt'), Body: 'x' }));
    const c: ManifestFile = { path: 'c.txt', size: 1, sha256: '1'.repeat(64) };
    assert.deepEqual(await verifyObjects(other, [a, b, c]), { missing: ['c.txt'], different: ['b.txt'], extra: ['extra.txt'] });
    assert.deepEqual([...await alreadyStored(other, [a, b, c])], [['a.txt', 'controller']], 'stored exactly, and streamed by the controller');
  });

  test('SHA256SUMS is the commit: absent before, and once written it says the files, bytes and path a later reader adopts', async () => {
    const run = { ...target, keyPrefix: 'ns/run/uid-3/' };
    assert.equal(await committedObjects(run), undefined);
    const files = [put('one.txt', Buffer.from('1\n')), put('two.txt', Buffer.from('22\n'))];
    await writeSums(run, files, 'controller');
    const committed = await committedObjects(run);
    assert.deepEqual(committed && { files: committed.files, bytes: committed.bytes, path: committed.path }, { files: 2, bytes: 5, path: 'controller' });
    assert.ok(committed?.committedAt instanceof Date);
  });

  test('SHA256SUMS is sorted by path, in sha256sum -c format, escaping a name as GNU sha256sum does', () => {
    const file = (path: string): ManifestFile => ({ path, size: 0, sha256: 'a'.repeat(64) });
    assert.equal(sha256sums([file('z'), file('a b'), file('new\nline')]).toString('utf8'),
      `${'a'.repeat(64)}  results/a b\n\\${'a'.repeat(64)}  results/new\\nline\n${'a'.repeat(64)}  results/z\n`);
  });
});
