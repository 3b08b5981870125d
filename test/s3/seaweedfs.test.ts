// What the results store will rely on, checked against the real store the tests use (SeaweedFS): the
// store itself rejects bytes that differ from a signed x-amz-checksum-sha256, on a plain PUT, on a
// presigned PUT sent by curl (as a pod will), and on each part of a presigned multipart upload; and
// HeadObject with checksum mode returns the checksum the controller confirms against the manifest.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  CompleteMultipartUploadCommand, CreateMultipartUploadCommand, GetObjectCommand, HeadObjectCommand,
  ListObjectsV2Command, PutObjectCommand, S3Client, UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { startObjectStore, type ObjectStore } from './seaweedfs.ts';

const run = promisify(execFile);
const BUCKET = 'results';
const CHECKSUM_HEADER = 'x-amz-checksum-sha256';
/** Signed as a header (not hoisted into the query), so the uploader must send exactly this checksum. */
const SIGN_CHECKSUM = { expiresIn: 300, unhoistableHeaders: new Set([CHECKSUM_HEADER]) };

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('base64');

interface CurlAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** PUTs a file with curl, as a pod does: `curl -T file -H ... URL`. */
async function curlPut(dir: string, url: string, body: Buffer, headers: Record<string, string>): Promise<CurlAnswer> {
  const name = randomBytes(4).toString('hex');
  const [file, out, head] = ['body', 'out', 'head'].map((part) => join(dir, `${name}.${part}`)) as [string, string, string];
  writeFileSync(file, body);
  const { stdout } = await run('curl', [
    '-sS', '-T', file, '-o', out, '-D', head, '-w', '%{http_code}',
    ...Object.entries(headers).flatMap(([key, value]) => ['-H', `${key}: ${value}`]), url,
  ]);
  const parsed: Record<string, string> = {};
  for (const line of readFileSync(head, 'utf8').split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) parsed[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(stdout), headers: parsed, body: readFileSync(out, 'utf8') };
}

async function download(s3: S3Client, key: string): Promise<Buffer> {
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return Buffer.from(await got.Body?.transformToByteArray() ?? []);
}

describe('SeaweedFS as an S3 results store', () => {
  let store: ObjectStore;
  let s3: S3Client;
  let dir: string;

  before(async () => {
    store = await startObjectStore();
    s3 = store.client();
    await store.createBucket(BUCKET);
    dir = mkdtempSync(join(tmpdir(), 's3-test-'));
  });

  after(async () => {
    s3.destroy();
    await store.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('PutObject with ChecksumSHA256 round-trips, and HeadObject with ChecksumMode ENABLED returns that checksum', async () => {
    const body = randomBytes(100_000);
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'plain/file.bin', Body: body, ChecksumSHA256: sha256(body) }));
    assert.deepEqual(await download(s3, 'plain/file.bin'), body);
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'plain/file.bin', ChecksumMode: 'ENABLED' }));
    assert.equal(head.ChecksumSHA256, sha256(body));
    assert.equal(head.ContentLength, body.length);
    // Not like AWS: AWS answers x-amz-checksum-type FULL_OBJECT for a single-part object; SeaweedFS
    // sends no checksum type for it (a multipart object gets COMPOSITE, as on AWS). Do not rely on it.
    assert.equal(head.ChecksumType, undefined);
  });

  test('the store checks the identity: a wrong secret is refused (403 SignatureDoesNotMatch)', async () => {
    const stranger = new S3Client({
      endpoint: store.endpoint, region: store.region, forcePathStyle: true, maxAttempts: 1,
      credentials: { accessKeyId: store.accessKeyId, secretAccessKey: `${store.secretAccessKey}x` },
    });
    try {
      await assert.rejects(
        stranger.send(new ListObjectsV2Command({ Bucket: BUCKET })),
        (error: Error & { $metadata?: { httpStatusCode?: number } }) => error.name === 'SignatureDoesNotMatch' && error.$metadata?.httpStatusCode === 403,
      );
    } finally {
      stranger.destroy();
    }
  });

  test('PutObject whose ChecksumSHA256 is not its body\'s is rejected (BadDigest) and stores nothing', async () => {
    const body = randomBytes(1000);
    await assert.rejects(
      s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'plain/wrong.bin', Body: body, ChecksumSHA256: sha256(randomBytes(1000)) })),
      // Not like AWS in its words: the message names Content-MD5 even for a SHA-256 mismatch, so only
      // the code (BadDigest, 400, as on AWS) is to be relied on.
      (error: Error & { $metadata?: { httpStatusCode?: number } }) => error.name === 'BadDigest' && error.$metadata?.httpStatusCode === 400
        && error.message === 'The Content-Md5 you specified did not match what we received.',
    );
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'plain/wrong' }));
    assert.equal(listed.KeyCount ?? 0, 0);
  });

  test('a presigned PUT with the checksum signed in: curl with the right bytes succeeds; other bytes get 400 BadDigest; no or another checksum header 403', async () => {
    const body = randomBytes(200_000);
    const checksum = sha256(body);
    const url = await getSignedUrl(s3, new PutObjectCommand({ Bucket: BUCKET, Key: 'presigned/file.bin', ChecksumSHA256: checksum }), SIGN_CHECKSUM);
    const query = new URL(url).searchParams;
    assert.equal(query.get('X-Amz-SignedHeaders'), `host;${CHECKSUM_HEADER}`, 'the checksum is a signed header');
    assert.equal(query.get(CHECKSUM_HEADER), null, 'not a query parameter');

    const tampered = Buffer.from(body);
    tampered[0] = (tampered[0] ?? 0) ^ 0xff;
    const rejected = await curlPut(dir, url, tampered, { [CHECKSUM_HEADER]: checksum });
    assert.equal(rejected.status, 400, rejected.body);
    assert.match(rejected.body, /<Code>BadDigest<\/Code>/);

    // The checksum cannot be left out or changed by the uploader: it is part of the signature.
    const unsigned = await curlPut(dir, url, body, {});
    assert.equal(unsigned.status, 403, unsigned.body);
    assert.match(unsigned.body, /<Code>SignatureDoesNotMatch<\/Code>/);
    const changed = await curlPut(dir, url, tampered, { [CHECKSUM_HEADER]: sha256(tampered) });
    assert.equal(changed.status, 403, changed.body);
    assert.match(changed.body, /<Code>SignatureDoesNotMatch<\/Code>/);
    await assert.rejects(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'presigned/file.bin' })), { name: 'NotFound' });

    const accepted = await curlPut(dir, url, body, { [CHECKSUM_HEADER]: checksum });
    assert.equal(accepted.status, 200, accepted.body);
    assert.deepEqual(await download(s3, 'presigned/file.bin'), body);
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'presigned/file.bin', ChecksumMode: 'ENABLED' }));
    assert.equal(head.ChecksumSHA256, checksum);
  });

  test('the presigner\'s default, the checksum hoisted into the query: SeaweedFS verifies it there too (not relied on)', async () => {
    // AWS is only known to verify a checksum sent as a header, so the product signs it as one
    // (SIGN_CHECKSUM); this records that SeaweedFS would catch a tampered body either way.
    const body = randomBytes(1000);
    const url = await getSignedUrl(s3, new PutObjectCommand({ Bucket: BUCKET, Key: 'presigned/hoisted.bin', ChecksumSHA256: sha256(body) }), { expiresIn: 300 });
    assert.equal(new URL(url).searchParams.get(CHECKSUM_HEADER), sha256(body));
    const rejected = await curlPut(dir, url, randomBytes(1000), {});
    assert.equal(rejected.status, 400, rejected.body);
    assert.match(rejected.body, /<Code>BadDigest<\/Code>/);
    assert.equal((await curlPut(dir, url, body, {})).status, 200);
  });

  test('a presigned URL past its expiry is refused: 403 AccessDenied "Request has expired"', async () => {
    const body = randomBytes(1000);
    const url = await getSignedUrl(s3, new PutObjectCommand({ Bucket: BUCKET, Key: 'presigned/expired.bin', ChecksumSHA256: sha256(body) }), { ...SIGN_CHECKSUM, expiresIn: 1 });
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const answer = await curlPut(dir, url, body, { [CHECKSUM_HEADER]: sha256(body) });
    assert.equal(answer.status, 403, answer.body);
    assert.match(answer.body, /<Code>AccessDenied<\/Code><Message>Request has expired<\/Message>/);
  });

  test('a presigned multipart upload with per-part checksums: a tampered part is refused, the good parts complete', async () => {
    const parts = [randomBytes(5 * 1024 * 1024), randomBytes(5 * 1024 * 1024), randomBytes(1234)];
    const key = 'multipart/large.bin';
    const created = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key, ChecksumAlgorithm: 'SHA256' }));
    const uploadId = created.UploadId;
    assert.ok(uploadId);
    const completed: { PartNumber: number; ETag: string; ChecksumSHA256: string }[] = [];
    for (const [index, part] of parts.entries()) {
      const partNumber = index + 1;
      const checksum = sha256(part);
      const url = await getSignedUrl(s3, new UploadPartCommand({ Bucket: BUCKET, Key: key, UploadId: uploadId, PartNumber: partNumber, ChecksumSHA256: checksum }), SIGN_CHECKSUM);
      if (partNumber === 2) {
        const rejected = await curlPut(dir, url, randomBytes(part.length), { [CHECKSUM_HEADER]: checksum });
        assert.equal(rejected.status, 400, rejected.body);
        assert.match(rejected.body, /<Code>BadDigest<\/Code>/);
      }
      const answer = await curlPut(dir, url, part, { [CHECKSUM_HEADER]: checksum });
      assert.equal(answer.status, 200, answer.body);
      const etag = answer.headers.etag;
      assert.ok(etag, 'UploadPart answers an ETag');
      completed.push({ PartNumber: partNumber, ETag: etag, ChecksumSHA256: checksum });
    }
    await s3.send(new CompleteMultipartUploadCommand({ Bucket: BUCKET, Key: key, UploadId: uploadId, MultipartUpload: { Parts: completed } }));
    const whole = Buffer.concat(parts);
    assert.deepEqual(await download(s3, key), whole);
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key, ChecksumMode: 'ENABLED' }));
    assert.equal(head.ContentLength, whole.length);
    // As AWS: a multipart object's SHA-256 is composite, the SHA-256 of the parts' digests, "-<parts>".
    const composite = createHash('sha256').update(Buffer.concat(parts.map((part) => createHash('sha256').update(part).digest()))).digest('base64');
    assert.equal(head.ChecksumSHA256, `${composite}-${parts.length}`);
    assert.equal(head.ChecksumType, 'COMPOSITE');
  });
});
