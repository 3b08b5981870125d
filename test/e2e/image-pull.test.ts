// Private images end to end: with spec.imagePullSecret (a Secret as `kubectl create secret
// docker-registry` writes it) the controller keeps a Runpod registry credential, shared by the runs that
// use the same one and swept once none does; the password goes nowhere else. An image the registry refuses: the pod is created and bills but never starts, and only
// Runpod's system lines say why. The controller reads them while the pod has no SSH port and ends the
// run ImagePullFailed with the pod deleted, well before readyTimeoutSeconds and without renting the
// next GPU type (which would pull the same image). Ends with the leak check (world.stop()).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { simPods } from '../runpod-sim/client.ts';
import { runManifest, startWorld, testApiKey, unsuppressed, withWorld } from '../support/operator.ts';
import { kubectl } from '../support/kubectl.ts';
import { eventually } from '../support/eventually.ts';

const ended = (run: { status?: { phase?: string } }) => run.status?.phase === 'Succeeded' || run.status?.phase === 'Failed';

describe('an image the registry refuses', { concurrency: true }, () => {
  test('a private image without its credential: Failed/ImagePullFailed quoting the registry, one pod, deleted', () =>
    withWorld('image-pull', async (world) => {
      await world.apply(runManifest('private', { image: 'acme/private-trainer:1', limits: { maxRuntimeSeconds: 600, readyTimeoutSeconds: 600 } }));
      const run = await world.waitForRun('private', 'Failed', ended, 120_000);
      assert.equal(run.status?.reason, 'ImagePullFailed', JSON.stringify(run.status));
      assert.match(run.status?.message ?? '', /^Runpod could not pull acme\/private-trainer:1 on pod private-1: ".*pull access denied for acme\/private-trainer.*unauthorized"; the pod is deleted$/);
      assert.equal(run.status?.attempts?.length, 1, 'no other GPU type was tried');
      const done = await world.waitForRun('private', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 30_000);
      const [pod] = await simPods(world.sim.adminUrl);
      const lived = Date.parse(pod?.deletedAt ?? '') - Date.parse(pod?.createdAt ?? '');
      assert.ok(lived < 150_000, `the pod lived ${lived} ms: its refusal was read, not readyTimeoutSeconds (600 s) waited out`);
      assert.equal(done.status?.pod?.id, pod?.id);
      await world.deleteRun('private');
    }, { sim: { images: { 'acme/private-trainer:1': { registryAuth: { username: 'acme-ci', password: 'registry-password-123' } } } } }));

  test('with its imagePullSecret the private image runs; two runs share one credential, swept once neither needs it', () =>
    unsuppressed(async () => {
      const password = 'registry-PASSWORD-0123456789';
      // A sweep each second lists pods and credentials: a budget above a real account's (60 a minute), so that
      // the sweep this test waits for is not paced by the limiter, which other tests cover.
      await using world = await startWorld('image-auth', { sim: {
        images: { 'acme/private-trainer:1': { registryAuth: { username: 'acme-ci', password } } },
        rateLimits: { minute: { quota: 600, seconds: 60 }, hour: { quota: 30_000, seconds: 3600 } },
      } });
      await world.startController({ sweepInterval: '1s', strayGrace: '2s' });
      const created = await kubectl(['create', 'secret', 'docker-registry', 'pull', '-n', world.namespace, '--docker-server=https://index.docker.io/v1/', '--docker-username=acme-ci', `--docker-password=${password}`]);
      assert.equal(created.status, 0, created.stderr);
      const spec = { image: 'acme/private-trainer:1', imagePullSecret: { name: 'pull' }, job: { command: ['sh', '-c', 'mkdir -p output; echo pulled > output/ok.txt'] }, results: { path: 'output' } };
      await world.apply(runManifest('first', spec));
      await world.apply(runManifest('second', spec));
      const [first, second] = await Promise.all(['first', 'second'].map((name) => world.waitForRun(name, 'Succeeded', ended, 120_000)));
      assert.equal(first?.status?.phase, 'Succeeded', JSON.stringify(first?.status));
      assert.equal(second?.status?.phase, 'Succeeded', JSON.stringify(second?.status));
      assert.equal(first?.status?.registry?.name, second?.status?.registry?.name, 'one credential for the same one');
      // The account's credentials as Runpod lists them (undefined when the answer is not a list: a 429 under the shared budget).
      const registries = async () => ((await (await fetch(`${world.sim.baseUrl}/registries`, { headers: { authorization: `Bearer ${testApiKey}` } })).json()) as { registries?: { id: string; name: string }[] }).registries;
      assert.equal((await eventually('the account\'s credentials', registries)).length, 1);
      assert.ok(!JSON.stringify(first?.status).includes(password) && !world.logLines.join('\n').includes(password), 'the password in no status nor log line');
      await world.deleteRun('first');
      await world.deleteRun('second');
      await eventually('the credential swept once no run needs it', async () => ((await registries())?.length === 0 ? true : undefined));
    }));
});

