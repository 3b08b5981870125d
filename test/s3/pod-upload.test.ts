// The data path issue 11 builds on, with real parts only: a simulated pod, reaching the real object
// store through the simulator's network.forward, PUTs a file with curl to a presigned URL that has
// its SHA-256 signed in; the store keeps the right bytes and refuses other ones.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { assertNoLeaks, simPodLogs } from '../runpod-sim/client.ts';
import { startSimulator, type RunningSimulator } from '../runpod-sim/server.ts';
import { call, field, shArgs } from '../runpod-sim/testkit.ts';
import { startObjectStore, type ObjectStore } from './seaweedfs.ts';
import { eventually } from '../support/eventually.ts';

const KEY = 'sim-test-account-key-s3-pod';
const BUCKET = 'pod-results';
const CONTENT = 'result bytes written by the pod\n';
const sha256 = (text: string): string => createHash('sha256').update(text).digest('base64');

describe('a pod uploads to the object store with a presigned PUT', () => {
  let store: ObjectStore;
  let s3: S3Client;
  let sim: RunningSimulator;

  before(async () => {
    store = await startObjectStore();
    s3 = store.client();
    await store.createBucket(BUCKET);
    // The same port inside the pod: the presigned URL signs its host:port, so the pod uses it as is.
    const port = Number(new URL(store.endpoint).port);
    sim = await startSimulator({ apiKeys: [KEY], config: { network: { forward: [{ podPort: port, hostPort: port }] } } });
  });

  after(async () => {
    await sim.stop();
    s3.destroy();
    await store.stop();
  });

  test('the right bytes are stored with their checksum; bytes that differ from the signed checksum get 400 BadDigest', async () => {
    const presign = (key: string): Promise<string> => getSignedUrl(s3, new PutObjectCommand({ Bucket: BUCKET, Key: key, ChecksumSHA256: sha256(CONTENT) }), {
      expiresIn: 300, unhoistableHeaders: new Set(['x-amz-checksum-sha256']),
    });
    const created = await call(sim, 'POST', '/v2/pods', {
      key: KEY,
      body: {
        name: 's3-upload', image: 'x', gpu: { id: 'NVIDIA A40' },
        env: { GOOD_URL: await presign('run/good.txt'), BAD_URL: await presign('run/tampered.txt'), SUM: sha256(CONTENT), CONTENT },
        args: shArgs([
          'printf %s "$CONTENT" > /tmp/good',
          'printf tampered > /tmp/bad',
          'put() { curl -sS -o /tmp/answer -w "%{http_code}" -T "$1" -H "x-amz-checksum-sha256: $SUM" "$2"; }',
          'echo "good $(put /tmp/good "$GOOD_URL")"',
          'echo "bad $(put /tmp/bad "$BAD_URL") $(cat /tmp/answer)"',
          'exec sleep 4242',
        ].join('\n')),
      },
    });
    assert.equal(created.status, 201);
    const id = String(field(created.body, 'id'));
    const logs = await eventually('the uploads', async () => {
      const text = await simPodLogs(sim.adminUrl, id);
      return /^bad /m.test(text) ? text : undefined;
    }, 40_000);
    assert.match(logs, /^good 200$/m);
    assert.match(logs, /^bad 400 [\s\S]*<Code>BadDigest<\/Code>/m);
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'run/good.txt', ChecksumMode: 'ENABLED' }));
    assert.equal(head.ChecksumSHA256, sha256(CONTENT));
    assert.equal(head.ContentLength, Buffer.byteLength(CONTENT));
    await assert.rejects(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'run/tampered.txt' })), { name: 'NotFound' });
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 204);
    await assertNoLeaks(sim.adminUrl);
  });
});
