// Results delivered to a real S3-compatible store (SeaweedFS), by the pod itself when it reaches the
// store (presigned URLs), else streamed through the controller: the
// objects, job.log and SHA256SUMS are there and `sha256sum -c` passes on a download; a missing
// credentials Secret is a status the run waits in, not a crash; a store that is down keeps the pod
// within the retrieve grace, then the run fails ResultsUnverified with the pod deleted. The S3 secret
// key is never in the controller's log, the events or the status. Every test ends with the leak check.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createHash } from 'node:crypto';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { resultKey } from '../../src/results/s3-target.ts';
import { committedObjects, writeSums } from '../../src/results/s3-verify.ts';
import { countRequests, simPods, simStats } from '../runpod-sim/client.ts';
import { startObjectStore, type ObjectStore } from '../s3/seaweedfs.ts';
import { kubectl } from '../support/kubectl.ts';
import { runManifest, startWorld, unsuppressed, withWorld, type World } from '../support/operator.ts';

const BUCKET = 'ml-results';

/** Every object under `prefix`, written below `dir` by its key relative to the prefix. */
async function download(s3: S3Client, prefix: string, dir: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix, ContinuationToken: token }));
    for (const object of page.Contents ?? []) if (object.Key) keys.push(object.Key);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  for (const key of keys) {
    const object = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    const path = join(dir, key.slice(prefix.length));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, await object.Body?.transformToByteArray() ?? new Uint8Array());
  }
  return keys.map((key) => key.slice(prefix.length)).sort();
}

async function assertSecretNowhere(world: World, run: unknown, secret: string): Promise<void> {
  assert.ok(!world.logLines.join('').includes(secret), 'the S3 secret key is not in the controller log');
  const events = await kubectl(['get', 'events.events.k8s.io', '-n', world.namespace, '-o', 'json']);
  assert.equal(events.status, 0, events.stderr);
  assert.ok(!events.stdout.includes(secret), 'the S3 secret key is not in the events');
  assert.ok(!JSON.stringify(run).includes(secret), 'the S3 secret key is not in the run');
}

/** The run's credentials Secret `s3`, holding the store's keys. */
const createS3Secret = (world: World, keys: Pick<ObjectStore, 'accessKeyId' | 'secretAccessKey'>) => kubectl(['create', 'secret', 'generic', 's3', '-n', world.namespace,
  `--from-literal=AWS_ACCESS_KEY_ID=${keys.accessKeyId}`, `--from-literal=AWS_SECRET_ACCESS_KEY=${keys.secretAccessKey}`]);

const s3Spec = (store: ObjectStore, extra: Record<string, unknown> = {}) => ({
  bucket: BUCKET, endpoint: store.endpoint, region: store.region, forcePathStyle: true, ...extra,
});

describe('results in S3-compatible object storage', { concurrency: true }, () => {
  let store: ObjectStore;
  let s3: S3Client;

  before(async () => {
    store = await startObjectStore();
    await store.createBucket(BUCKET);
    s3 = store.client();
  });
  after(async () => {
    s3.destroy();
    await store.stop();
  });

  test('a run with results.s3 waits for its credentials Secret, then succeeds: the objects, job.log and SHA256SUMS pass sha256sum -c', () =>
    withWorld('s3ok', async (world) => {
      await world.apply(runManifest('s3ok', {
        job: {
          command: ['sh', '-c', [
            'mkdir -p output/"dir with space"', 'echo hello > output/a.txt', ': > output/empty',
            'head -c 12582912 /dev/urandom > output/"dir with space"/big.bin', 'echo the job ran',
          ].join(' && ')],
        },
        results: { path: 'output', s3: s3Spec(store, { prefix: 'team-a/', credentials: { secretName: 's3' } }) },
      }));
      // No Secret yet: a status that names it, the run keeps its pod and waits.
      const waiting = await world.waitForRun('s3ok', 'ResultsUnverified', (r) => r.status?.reason === 'ResultsUnverified', 120_000);
      assert.match(waiting.status?.message ?? '', /the S3 credentials Secret .*\/s3 \(spec\.results\.s3\.credentials\.secretName\) does not exist/);
      assert.equal(waiting.status?.phase, 'Retrieving');
      assert.ok((await simPods(world.sim.adminUrl)).some((pod) => !pod.deletedAt), 'the pod is kept while the run waits');
      const created = await createS3Secret(world, store);
      assert.equal(created.status, 0, created.stderr);

      const run = await world.waitForRun('s3ok', 'ended', (r) => r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed', 180_000);
      assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
      const prefix = `team-a/${world.namespace}/s3ok/${run.metadata.uid}/`;
      assert.equal(run.status?.results?.location, `s3://${BUCKET}/${prefix}`);
      assert.equal(run.status?.results?.path, 'controller');
      assert.equal(run.status?.results?.files, 3);
      assert.equal(run.status?.results?.bytes, 6 + 12_582_912);

      const dir = mkdtempSync(join(tmpdir(), 's3ok-'));
      try {
        assert.deepEqual(await download(s3, prefix, dir), ['SHA256SUMS', 'job.log', 'results/a.txt', 'results/dir with space/big.bin', 'results/empty']);
        assert.equal(readFileSync(join(dir, 'SHA256SUMS'), 'utf8').split('\n').filter(Boolean).length, 3);
        // The real sha256sum, as a user fetching the results would run it.
        const checked = execFileSync('sha256sum', ['-c', 'SHA256SUMS'], { cwd: dir, encoding: 'utf8' });
        assert.match(checked, /results\/dir with space\/big\.bin: OK/);
        assert.match(readFileSync(join(dir, 'job.log'), 'utf8'), /the job ran/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      await world.waitForRun('s3ok', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 60_000);
      await assertSecretNowhere(world, await world.run('s3ok'), store.secretAccessKey);
      await world.deleteRun('s3ok');
    }));

  test('a pod that reaches the store uploads its own files (presigned PUTs, multipart above the part size): path direct, sha256sum -c passes', () => {
    const port = Number(new URL(store.endpoint).port);
    return withWorld('s3direct', async (world) => {
      await createS3Secret(world, store);
      await world.apply(runManifest('s3direct', {
        // A process left behind keeps writing to job.log: the log is taken as it was, not left out.
        job: { command: ['sh', '-c', 'mkdir -p output && echo direct > output/d.txt && head -c 70000000 /dev/urandom > output/big.bin && echo the job ran && (while :; do echo tick; sleep 0.002; done) &'] },
        results: { path: 'output', s3: s3Spec(store, { credentials: { secretName: 's3' } }) },
      }));
      const run = await world.waitForRun('s3direct', 'ended', (r) => r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed', 240_000);
      assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
      assert.equal(run.status?.results?.path, 'direct', 'the pod sent the bytes, not the controller');
      assert.equal(run.status?.results?.files, 2);
      const prefix = `${world.namespace}/s3direct/${run.metadata.uid}/`;
      const dir = mkdtempSync(join(tmpdir(), 's3direct-'));
      try {
        assert.deepEqual(await download(s3, prefix, dir), ['SHA256SUMS', 'job.log', 'results/big.bin', 'results/d.txt']);
        execFileSync('sha256sum', ['-c', '--strict', 'SHA256SUMS'], { cwd: dir });
        assert.match(readFileSync(join(dir, 'job.log'), 'utf8'), /the job ran\n(tick\n)*$/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      await assertSecretNowhere(world, await world.run('s3direct'), store.secretAccessKey);
      assert.ok(!/X-Amz-Signature=[0-9a-f]{16}/i.test(world.logLines.join('')), 'no presigned URL in the controller log');
      await world.deleteRun('s3direct');
    }, { sim: { network: { forward: [{ podPort: port, hostPort: port }] } } });
  });

  // These two set the SDK's default credentials in process.env: one after the other, never beside each other.
  describe('with the SDK\'s default credentials in the environment', () => {
    /** The store's keys as the SDK's default credentials (process.env) while `body` runs; what was there before, after. */
    async function withStoreKeysInEnv(body: () => Promise<void>): Promise<void> {
      const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
      process.env.AWS_ACCESS_KEY_ID = store.accessKeyId;
      process.env.AWS_SECRET_ACCESS_KEY = store.secretAccessKey;
      try {
        await body();
      } finally {
        if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID; else process.env.AWS_ACCESS_KEY_ID = saved.id;
        if (saved.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY; else process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
      }
    }

    test('the controller\'s --results-store s3://bucket/prefix/ with the SDK\'s default credentials (env) holds a run that names no bucket', () =>
      unsuppressed(async () => {
        await using world = await startWorld('s3flag');
        await withStoreKeysInEnv(async () => {
          await world.startController({
            resultsStore: `s3://${BUCKET}/fleet/`, resultsS3Endpoint: store.endpoint, resultsS3Region: store.region, resultsS3ForcePathStyle: 'true',
          });
          await world.apply(runManifest('s3flag', { job: { command: ['sh', '-c', 'mkdir -p output && echo flag > output/f.txt'] } }));
          const run = await world.waitForRun('s3flag', 'ended', (r) => r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed', 120_000);
          assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
          const prefix = `fleet/${world.namespace}/s3flag/${run.metadata.uid}/`;
          assert.equal(run.status?.results?.location, `s3://${BUCKET}/${prefix}`);
          const dir = mkdtempSync(join(tmpdir(), 's3flag-'));
          try {
            assert.deepEqual(await download(s3, prefix, dir), ['SHA256SUMS', 'job.log', 'results/f.txt']);
            execFileSync('sha256sum', ['-c', '--strict', 'SHA256SUMS'], { cwd: dir });
          } finally {
            rmSync(dir, { recursive: true, force: true });
          }
          await world.waitForRun('s3flag', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 60_000);
          await world.deleteRun('s3flag');
        });
      }));

    test('no spec.results.s3.credentials: the controller\'s own identity writes only to a bucket of --results-s3-allowed-buckets; another is InvalidSpec before any create', () =>
      unsuppressed(async () => {
        await using world = await startWorld('s3allowed');
        await withStoreKeysInEnv(async () => {
          await world.startController({ resultsS3AllowedBuckets: `${store.endpoint}/${BUCKET}` });
          const job = { command: ['sh', '-c', 'mkdir -p output && echo mine > output/m.txt'] };
          await world.apply(runManifest('refused', { job, results: { path: 'output', s3: s3Spec(store, { bucket: 'other-team' }) } }));
          await world.apply(runManifest('allowed', { job, results: { path: 'output', s3: s3Spec(store) } }));
          const refused = await world.waitForRun('refused', 'Failed', (r) => r.status?.phase === 'Failed', 60_000);
          assert.equal(refused.status?.reason, 'InvalidSpec', JSON.stringify(refused.status));
          assert.match(refused.status?.message ?? '', /spec\.results\.s3\.credentials: absent, .*--results-s3-allowed-buckets.*bucket "other-team"/);
          const allowed = await world.waitForRun('allowed', 'ended', (r) => r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed', 120_000);
          assert.equal(allowed.status?.phase, 'Succeeded', JSON.stringify(allowed.status));
          assert.deepEqual((await simPods(world.sim.adminUrl)).map((pod) => pod.name), ['allowed-1'], 'nothing was ever rented for the refused run');
          assert.equal(countRequests(await simStats(world.sim.adminUrl), 'POST', '/v2/pods'), 1);
          await world.waitForRun('allowed', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 60_000);
          await world.deleteRun('refused');
          await world.deleteRun('allowed');
        });
      }));
  });

  test('what a crashed controller left in the bucket (objects, SHA256SUMS) is adopted or resumed: the run succeeds, no file sent again', () =>
    unsuppressed(async () => {
      await using world = await startWorld('s3adopt');
      await createS3Secret(world, store);
      await world.apply(runManifest('s3adopt', {
        job: { command: ['sh', '-c', 'mkdir -p output && echo adopted > output/a.txt'] },
        results: { path: 'output', s3: s3Spec(store, { credentials: { secretName: 's3' } }) },
      }));
      const uid = (await world.run('s3adopt'))?.metadata.uid ?? assert.fail('no run');
      // What a controller killed after its last write to the bucket left: the object and SHA256SUMS.
      const target = { client: s3, bucket: BUCKET, keyPrefix: `${world.namespace}/s3adopt/${uid}/` };
      const file = { path: 'a.txt', size: 8, sha256: createHash('sha256').update('adopted\n').digest('hex') };
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: resultKey(target, file.path), Body: 'adopted\n', Metadata: { sha256: file.sha256 } }));
      await writeSums(target, [file], 'controller');
      const sentAt = (await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: resultKey(target, file.path) }))).LastModified ?? assert.fail('no object');
      await sleep(1500); // LastModified has a resolution of one second
      await world.startController();
      const run = await world.waitForRun('s3adopt', 'ended', (r) => r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed', 120_000);
      assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
      assert.deepEqual([run.status?.results?.files, run.status?.results?.bytes, run.status?.results?.path], [1, 8, 'controller']);
      const now = (await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: resultKey(target, file.path) }))).LastModified;
      assert.equal(now?.getTime(), sentAt.getTime(), 'the stored file was not sent again');
      assert.ok(await committedObjects(target), 'SHA256SUMS is there');
      await world.deleteRun('s3adopt');
    }));

  test('a store that is down: the run waits in Retrieving/ResultsUnverified with its pod, then Failed/ResultsUnverified with the pod deleted', async () => {
    const down = await startObjectStore();
    await down.createBucket(BUCKET);
    await down.stop();
    await withWorld('s3down', async (world) => {
      await createS3Secret(world, down);
      await world.apply(runManifest('s3down', {
        job: { command: ['sh', '-c', 'mkdir -p output && echo r > output/r.txt'] },
        results: { path: 'output', s3: s3Spec(down, { credentials: { secretName: 's3' } }) },
        limits: { maxRuntimeSeconds: 600, readyTimeoutSeconds: 60, retrieveGraceSeconds: 30 },
      }));
      const waiting = await world.waitForRun('s3down', 'ResultsUnverified', (r) => r.status?.reason === 'ResultsUnverified', 120_000);
      assert.equal(waiting.status?.phase, 'Retrieving');
      assert.match(waiting.status?.message ?? '', /the object store s3:\/\/ml-results\/.*ECONNREFUSED|the object store s3:\/\/ml-results\/.*(connect|refused)/i);
      assert.ok((await simPods(world.sim.adminUrl)).some((pod) => !pod.deletedAt), 'the pod is kept within the retrieve grace');
      // More than one try within the grace.
      await world.waitForRun('s3down', 'a retry', (r) => /try [2-9]/.test(r.status?.message ?? '') || r.status?.phase === 'Failed', 60_000);
      const failed = await world.waitForRun('s3down', 'Failed', (r) => r.status?.phase === 'Failed', 120_000);
      assert.equal(failed.status?.reason, 'ResultsUnverified', JSON.stringify(failed.status));
      assert.equal(failed.status?.results?.retrievedAt, undefined);
      await world.waitForRun('s3down', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 60_000);
      assert.ok((await simPods(world.sim.adminUrl)).every((pod) => pod.deletedAt), 'the pod is deleted');
      await assertSecretNowhere(world, failed, down.secretAccessKey);
      await world.deleteRun('s3down');
    });
  });
});
