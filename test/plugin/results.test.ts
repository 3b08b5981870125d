// `kubectl runpod results` through the real kubectl, against a run whose verified results went to a
// real S3-compatible store (SeaweedFS): every file downloaded and OK against SHA256SUMS; a byte changed
// in the bucket afterwards is caught (FAILED, exit 1). Ends with the leak check.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { startObjectStore, type ObjectStore } from '../s3/seaweedfs.ts';
import { testCluster } from '../support/cluster.ts';
import { kubectl } from '../support/kubectl.ts';
import { runManifest, withWorld } from '../support/operator.ts';

const BUCKET = 'plugin-results';
const bin = new URL('../../bin', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'plugin-results-'));
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
  rmSync(scratch, { recursive: true, force: true });
});

async function kubectlRunpod(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { kubeconfigPath } = await testCluster();
  // No AWS credentials of the user's own: the run's Secret is what reads the bucket.
  const env = { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}`, KUBECONFIG: kubeconfigPath, AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '' };
  const child = spawn('kubectl', ['runpod', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let [stdout, stderr] = ['', ''];
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
  const code = await new Promise<number>((resolve) => child.once('close', (status) => resolve(status ?? -1)));
  return { code, stdout, stderr };
}

void test('kubectl runpod results: the S3 results downloaded and checked against SHA256SUMS; a changed byte is caught', () =>
  withWorld('plugin-results', async (world) => {
    const secret = await kubectl(['create', 'secret', 'generic', 's3', '-n', world.namespace,
      `--from-literal=AWS_ACCESS_KEY_ID=${store.accessKeyId}`, `--from-literal=AWS_SECRET_ACCESS_KEY=${store.secretAccessKey}`]);
    assert.equal(secret.status, 0, secret.stderr);
    await world.apply(runManifest('fetched', {
      job: { command: ['sh', '-c', 'mkdir -p output/"sub dir" && echo alpha > output/a.txt && head -c 300000 /dev/urandom > output/"sub dir"/b.bin'] },
      results: { path: 'output', s3: { bucket: BUCKET, endpoint: store.endpoint, region: store.region, forcePathStyle: true, credentials: { secretName: 's3' } } },
    }));
    const run = await world.waitForRun('fetched', 'ended', (r) => r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed', 180_000);
    assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));

    const good = join(scratch, 'good');
    const fetched = await kubectlRunpod(['results', 'fetched', good, '-n', world.namespace]);
    assert.equal(fetched.code, 0, fetched.stderr);
    assert.equal(fetched.stdout, `results/a.txt: OK\nresults/sub dir/b.bin: OK\n2 files verified against SHA256SUMS in ${good}\n`);
    assert.equal(readFileSync(join(good, 'results', 'a.txt'), 'utf8'), 'alpha\n');

    const prefix = `${world.namespace}/fetched/${run.metadata.uid}/`;
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${prefix}results/sub dir/b.bin`, Body: Buffer.alloc(300_000, 1) }));
    const changed = await kubectlRunpod(['results', 'fetched', join(scratch, 'changed'), '-n', world.namespace]);
    assert.equal(changed.code, 1);
    assert.equal(changed.stdout, 'results/a.txt: OK\nresults/sub dir/b.bin: FAILED\n');
    assert.match(changed.stderr, /^error: results\/sub dir\/b\.bin differs from what the controller verified \(sha256 [0-9a-f]{64}, SHA256SUMS says [0-9a-f]{64}\): the results in s3:\/\/plugin-results\/.* changed since\n$/);
    assert.ok(!changed.stderr.includes(store.secretAccessKey) && !fetched.stderr.includes(store.secretAccessKey), 'the S3 key is never printed');

    await world.deleteRun('fetched');
  }));
