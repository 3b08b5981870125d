// The direct path (issue 11 §2) with real parts only: a simulated pod that reaches a real SeaweedFS
// through the simulator's network.forward, a real SSH connection to it (host key pinned), and
// uploadFromPod presigning per file and per part while the pod's curl does the PUTs.
import { after, before, describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  GetObjectCommand, HeadObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command, S3Client,
} from '@aws-sdk/client-s3';
import { PARALLEL_BATCHES, uploadFromPod, type DirectOutcome } from '../../src/results/s3-direct.ts';
import { alreadyStored, PARALLEL_HEADS, verifyObjects } from '../../src/results/s3-verify.ts';
import { resultKey, type S3Target } from '../../src/results/s3-target.ts';
import { connectPinned, type SshConnection } from '../../src/ssh/connect.ts';
import { execChecked } from '../../src/ssh/exec.ts';
import { computeManifest, type ManifestFile } from '../../src/ssh/manifest.ts';
import { shellQuote } from '../../src/ssh/shell.ts';
import { startSimulator, type RunningSimulator } from '../runpod-sim/server.ts';
import { ACCOUNT_KEY, cleanUp, createPod, keys, sshPort } from '../pod/helpers.ts';
import { startCountingProxy, type CountingProxy } from './counting-proxy.ts';
import { startObjectStore, type ObjectStore } from './seaweedfs.ts';
import { eventually } from '../support/eventually.ts';

const BUCKET = 'direct-results';
const MIB = 1024 * 1024;
const EXPIRES = 300;

describe('uploadFromPod: the pod uploads its own results with presigned URLs', () => {
  let store: ObjectStore;
  let s3: S3Client;
  let sim: RunningSimulator;
  let conn: SshConnection;
  let proxy: CountingProxy;
  let run = 0;

  before(async () => {
    store = await startObjectStore();
    s3 = store.client();
    await store.createBucket(BUCKET);
    proxy = await startCountingProxy(store.endpoint, 500);
    // The same port inside the pod: the presigned URL signs its host:port.
    const port = Number(new URL(store.endpoint).port);
    sim = await startSimulator({
      apiKeys: [ACCOUNT_KEY],
      config: {
        gpuTypes: [{ id: 'NVIDIA A40', displayName: 'A40', memoryInGb: 48, pricePerHour: 0.4, stock: { 'EU-RO-1': 8 } }],
        rateLimits: { enabled: false },
        network: { forward: [{ podPort: port, hostPort: port }, { podPort: proxy.port, hostPort: proxy.port }] },
      },
    });
    const k = await keys();
    const id = await createPod(sim, { name: 's3-direct', shell: 'dash', keys: k });
    const sshdPort = await sshPort(sim, id);
    conn = await eventually('the pod\'s sshd', () => connectPinned({
      host: '127.0.0.1', port: sshdPort, username: 'root', privateKey: readFileSync(k.clientKeyPath, 'utf8'), hostPublicKey: k.hostPublic, readyTimeoutMs: 10_000,
    }).catch(() => undefined), 60_000, 300);
  });

  after(async () => {
    conn?.close();
    if (sim) {
      await cleanUp(sim);
      await sim.stop();
    }
    s3?.destroy();
    await proxy?.stop();
    await store?.stop();
  });

  /** A fresh results directory on the pod, filled by `script` (run in it), and its manifest. */
  async function results(script: string): Promise<{ dir: string; files: ManifestFile[]; target: S3Target }> {
    run += 1;
    const dir = `/root/results-${run}`;
    await execChecked(conn, `mkdir -p ${dir} && cd ${dir} && ${script}`, 'making the results', { timeoutMs: 60_000 });
    const { files } = await computeManifest(conn, dir, { timeoutMs: 60_000 });
    return { dir, files, target: { client: s3, bucket: BUCKET, keyPrefix: `ns/run-${run}/uid-${run}/` } };
  }
  const onPod = (command: string): Promise<unknown> => execChecked(conn, command, 'a change on the pod', { timeoutMs: 60_000 });
  const b64 = (hex: string): string => Buffer.from(hex, 'hex').toString('base64');
  const storedBytes = async (key: string): Promise<Buffer> => {
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    return Buffer.from(await got.Body?.transformToByteArray() ?? []);
  };
  const objectsUnder = async (target: S3Target): Promise<string[]> =>
    ((await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: target.keyPrefix }))).Contents ?? []).map((object) => object.Key ?? '');
  const pendingUploads = async (target: S3Target): Promise<number> =>
    ((await s3.send(new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: target.keyPrefix }))).Uploads ?? []).length;
  /** No outcome may carry a URL, a signature or the store's access key. */
  const assertClean = (outcome: DirectOutcome): void => {
    const text = JSON.stringify(outcome);
    assert.doesNotMatch(text, /X-Amz-|https?:\/\//i);
    assert.ok(!text.includes(store.accessKeyId), text);
  };

  test('small files, odd names included, are stored with their metadata sha256 and their checksum', async () => {
    const { dir, files, target } = await results([
      'printf "result bytes\\n" > a.txt',
      'mkdir "sub dir" && head -c 100000 /dev/urandom > "sub dir/b c.bin"',
      ': > empty',
      'printf glob > "[x]{y}*"',
      'printf dash > -n',
    ].join(' && '));
    assert.equal(files.length, 5);
    const outcome = await uploadFromPod(conn, dir, files, target, { expiresInSeconds: EXPIRES });
    assert.deepEqual(outcome, { kind: 'uploaded', files: 5, bytes: files.reduce((sum, file) => sum + file.size, 0) });
    for (const file of files) {
      const key = resultKey(target, file.path);
      const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key, ChecksumMode: 'ENABLED' }));
      assert.equal(head.Metadata?.sha256, file.sha256, file.path);
      assert.equal(head.ChecksumSHA256, b64(file.sha256), file.path);
      assert.equal(head.ContentLength, file.size, file.path);
      assert.equal(createHash('sha256').update(await storedBytes(key)).digest('hex'), file.sha256, file.path);
    }
    assert.equal((await objectsUnder(target)).length, 5);
  });

  test('a file larger than the part size goes multipart: its bytes, metadata and composite checksum', async () => {
    const { dir, files, target } = await results('head -c 12582912 /dev/urandom > big.bin && printf small > small.txt');
    const big = files.find((file) => file.path === 'big.bin');
    assert.ok(big);
    const outcome = await uploadFromPod(conn, dir, files, target, { expiresInSeconds: EXPIRES, partSizeBytes: 5 * MIB });
    assert.deepEqual(outcome, { kind: 'uploaded', files: 2, bytes: big.size + 5 });
    const key = resultKey(target, 'big.bin');
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key, ChecksumMode: 'ENABLED' }));
    assert.equal(head.Metadata?.sha256, big.sha256);
    assert.equal(head.ContentLength, 12 * MIB);
    // 5 + 5 + 2 MiB: three parts, each checked by the store against the digest the pod computed.
    assert.match(head.ChecksumSHA256 ?? '', /-3$/);
    assert.equal(head.ChecksumType, 'COMPOSITE');
    assert.equal(createHash('sha256').update(await storedBytes(key)).digest('hex'), big.sha256);
    assert.equal(await pendingUploads(target), 0);
    // A retry (the first try's read-back failed: a store may answer an object's old state for a moment after
    // its upload) sends them no more, and still knows the pod sent them: the run's path stays direct.
    assert.deepEqual([...await alreadyStored(target, files)].sort(), [['big.bin', 'direct'], ['small.txt', 'direct']]);
  });

  test('several files: the pod\'s PUTs go a few upload commands at once, the read-back HEADs a bounded few at once', async () => {
    // URLs valid for 4 s make a batch at most 2 MiB (what 4 s at the slowest rate allows, shared by the
    // batches at once): one file of 1.5 MiB per batch, six batches. The relay holds each answer 500 ms,
    // so batches that run side by side are seen in flight together.
    const { dir, files, target } = await results('for i in 1 2 3 4 5 6; do head -c 1572864 /dev/urandom > f$i; done');
    const counted = new S3Client({
      endpoint: proxy.endpoint, region: store.region, forcePathStyle: true,
      credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
    });
    try {
      proxy.reset();
      const outcome = await uploadFromPod(conn, dir, files, { ...target, client: counted }, { expiresInSeconds: 4 });
      const puts = proxy.maxInFlight('PUT');
      assert.ok(puts > 1 && puts <= PARALLEL_BATCHES, `PUTs in flight at once: ${puts} (bound ${PARALLEL_BATCHES})`);
      assert.deepEqual(outcome, { kind: 'uploaded', files: 6, bytes: 6 * 1572864 });
      assert.equal(proxy.count('PUT'), 6);
      proxy.reset();
      assert.deepEqual(await verifyObjects({ ...target, client: counted }, files), { missing: [], different: [], extra: [] });
      assert.equal(proxy.count('HEAD'), 6);
      const heads = proxy.maxInFlight('HEAD');
      assert.ok(heads > 1 && heads <= PARALLEL_HEADS, `HEADs in flight at once: ${heads} (bound ${PARALLEL_HEADS})`);
    } finally {
      counted.destroy();
    }
  });

  test('a file changed on the pod after the manifest: failed (BadDigest), nothing stored under its key', async () => {
    const { dir, files, target } = await results('printf "the bytes of the manifest" > first.txt && printf "as manifested" > "changed file.txt"');
    await onPod(`printf "other bytes, same size" > ${shellQuote(`${dir}/changed file.txt`)}`);
    // The unchanged file first: its bytes go through, so the refusal is the changed file's own.
    const ordered = [...files].sort((a, b) => (a.path === 'first.txt' ? -1 : b.path === 'first.txt' ? 1 : 0));
    const outcome = await uploadFromPod(conn, dir, ordered, target, { expiresInSeconds: EXPIRES });
    assertClean(outcome);
    assert.deepEqual(outcome, { kind: 'failed', message: 'the store refused changed file.txt (HTTP 400 BadDigest)' });
    const first = files.find((file) => file.path === 'first.txt');
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: resultKey(target, 'first.txt'), ChecksumMode: 'ENABLED' }));
    assert.equal(head.ChecksumSHA256, b64(first?.sha256 ?? ''));
    await assert.rejects(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: resultKey(target, 'changed file.txt') })), { name: 'NotFound' });
  });

  test('a large file changed after the manifest: failed before any part is sent, no upload left open', async () => {
    // Zeros, so the X written into it always changes it (over random bytes, 1 run in 256 found an X there already).
    const { dir, files, target } = await results('head -c 11534336 /dev/zero > big.bin');
    await onPod(`printf X | dd of=${dir}/big.bin bs=1 seek=7000000 conv=notrunc 2>/dev/null`);
    const outcome = await uploadFromPod(conn, dir, files, target, { expiresInSeconds: EXPIRES, partSizeBytes: 5 * MIB });
    assertClean(outcome);
    assert.deepEqual(outcome, { kind: 'failed', message: 'big.bin changed on the pod since the manifest was taken' });
    assert.deepEqual(await objectsUnder(target), []);
    assert.equal(await pendingUploads(target), 0);
  });

  test('a part changed between its hash and its upload: failed (BadDigest), the multipart upload aborted', async () => {
    // Zeros, as above: over random bytes 1 run in 256 found an X at that offset already, so nothing changed.
    const { dir, files, target } = await results('head -c 12582912 /dev/zero > big.bin');
    // The change lands once the controller has created the upload, i.e. after the pod hashed the parts.
    const client = store.client();
    client.middlewareStack.add((next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName === 'CreateMultipartUploadCommand') await onPod(`printf X | dd of=${dir}/big.bin bs=1 seek=11000000 conv=notrunc 2>/dev/null`);
      return result;
    }, { step: 'initialize', name: 'changeAfterCreate' });
    try {
      const outcome = await uploadFromPod(conn, dir, files, { ...target, client }, { expiresInSeconds: EXPIRES, partSizeBytes: 5 * MIB });
      assertClean(outcome);
      assert.deepEqual(outcome, { kind: 'failed', message: 'the store refused part 3 of big.bin (HTTP 400 BadDigest)' });
    } finally {
      client.destroy();
    }
    assert.deepEqual(await objectsUnder(target), []);
    assert.equal(await pendingUploads(target), 0);
  });

  test('aborted while a large file is under way: rejects, and the multipart upload is aborted', async () => {
    const { dir, files, target } = await results('head -c 12582912 /dev/urandom > big.bin');
    const stop = new AbortController();
    const client = store.client();
    client.middlewareStack.add((next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName === 'CreateMultipartUploadCommand') stop.abort(new Error('the run was deleted'));
      return result;
    }, { step: 'initialize', name: 'abortAfterCreate' });
    try {
      await assert.rejects(uploadFromPod(conn, dir, files, { ...target, client }, { expiresInSeconds: EXPIRES, partSizeBytes: 5 * MIB, signal: stop.signal }), { message: 'aborted' });
    } finally {
      client.destroy();
    }
    assert.deepEqual(await objectsUnder(target), []);
    assert.equal(await pendingUploads(target), 0);
  });

  test('a store the pod cannot reach (no forward to its port): unreachable, so the caller streams', async () => {
    const { dir, files, target } = await results('printf "never sent" > a.txt');
    // The same store seen through a port nothing forwards into the pod: the controller could sign for it, the pod cannot connect.
    const unforwarded = new S3Client({
      endpoint: `http://127.0.0.1:${Number(new URL(store.endpoint).port) + 1}`, region: store.region, forcePathStyle: true,
      credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
    });
    try {
      const outcome = await uploadFromPod(conn, dir, files, { ...target, client: unforwarded }, { expiresInSeconds: EXPIRES });
      assertClean(outcome);
      assert.deepEqual(outcome, { kind: 'unreachable', message: 'the pod cannot reach the object store (curl exit 7 uploading a.txt)' });
    } finally {
      unforwarded.destroy();
    }
    assert.deepEqual(await objectsUnder(target), []);
  });

  test('an expired URL: failed, naming the file and the store\'s code', async () => {
    const { dir, files, target } = await results('printf "too late" > late.txt');
    // The controller's clock an hour behind: its URLs (valid for 60 s) are long expired when the pod uses them.
    mock.timers.enable({ apis: ['Date'], now: Date.now() - 3600_000 });
    let outcome: DirectOutcome;
    try {
      outcome = await uploadFromPod(conn, dir, files, target, { expiresInSeconds: 60 });
    } finally {
      mock.timers.reset();
    }
    assertClean(outcome);
    assert.deepEqual(outcome, { kind: 'failed', message: 'the store refused late.txt (HTTP 403 AccessDenied)' });
    assert.deepEqual(await objectsUnder(target), []);
  });
});
