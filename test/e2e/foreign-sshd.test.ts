// An image whose own sshd answers port 22 first, with host keys of its own (as images started with a
// public key do), until the bootstrap takes the port over. End to end: the controller probes that
// sshd, trusts it with nothing (the pinned-key check fails in the key exchange, before any
// authentication, so no env, secret, file or job can reach it), waits, and runs the job once the
// pinned key answers. Ends with the leak check (world.stop()).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { simPodLogs, simPods } from '../runpod-sim/client.ts';
import { kubectl } from '../support/kubectl.ts';
import { hasCondition, runManifest, withWorld } from '../support/operator.ts';

const IMAGE = 'example/own-sshd:1';
const SECRET = 'hf_FOREIGN_SSHD_MUST_NOT_SEE_0123456789';

describe('an image with its own sshd', () => {
  test('its foreign host key is refused before authentication until the bootstrap takes port 22; then the job runs', () =>
    withWorld('foreign', async (world) => {
      await kubectl(['create', 'secret', 'generic', 'hf', '-n', world.namespace, `--from-literal=token=${SECRET}`]);
      await world.apply(runManifest('foreign', {
        image: IMAGE,
        job: {
          command: ['sh', '-c', 'test "$HF_TOKEN" = "$EXPECTED" && mkdir -p output && echo ran > output/ok.txt'],
          env: [{ name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } }, { name: 'EXPECTED', value: SECRET }],
        },
        results: { path: 'output' },
      }));
      const messages = new Set<string>();
      const run = await world.waitForRun('foreign', 'Succeeded', (r) => {
        messages.add(r.status?.message ?? '');
        return r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed';
      }, 120_000);
      assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
      assert.ok(hasCondition(run, 'PodReady'));
      assert.equal(run.status?.attempts?.length, 1, 'waited for the pinned key on the same pod');
      assert.ok([...messages].some((m) => /host key that is not the pinned one/.test(m)), `the controller met the foreign sshd: ${[...messages].join(' | ')}`);

      const [pod] = await simPods(world.sim.adminUrl);
      assert.ok(pod);
      const logs = await simPodLogs(world.sim.adminUrl, pod.id);
      const takeover = logs.indexOf("stopping the image's own listener on port 22");
      assert.ok(takeover > 0, logs);
      // The image's sshd logs at VERBOSE: each connection, and any authentication attempt ("Failed
      // publickey for root ...", "Connection closed by authenticating user ..."), which never came.
      const foreign = logs.slice(0, takeover);
      assert.match(foreign, /Connection from 127\.0\.0\.1 port \d+ on 127\.0\.0\.1 port 22/, 'the controller did probe it');
      assert.doesNotMatch(foreign, /Accepted|Failed|Postponed|authenticating user|session opened/);
      assert.ok(!logs.includes(SECRET), 'the job secret is in no pod log');
      assert.equal(pod.deletedBy, 'account');
      await world.deleteRun('foreign');
    }, {
      // Its start script starts sshd, then takes a while (as NGC-style setup does) before exec'ing the args.
      sim: { images: { [IMAGE]: { entrypoint: ['/bin/sh', '-c', 'sleep 20; exec "$@"', 'start'], ownSshd: true } } },
    }));
});
