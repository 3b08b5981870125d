// The watchdog when the live service or the image is less kind (real simulated pods, both shells):
// a pod key that may read its pod but not delete it (API-NOTES §4.1 "delete permission varies by
// deployment"), a GET that lags the create (listLag.get) longer than a few tries, and images without
// curl (python3, then GNU wget, then nothing at all).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePodState, podStateCommand, type PodState } from '../../src/pod/state.ts';
import { simPodLogs, simPods } from '../runpod-sim/client.ts';
import { startSimulator, type RunningSimulator, type SimConfigInput } from '../runpod-sim/server.ts';
import { ACCOUNT_KEY, SHELLS, SSH_LOOK_MS, cleanUp, createPod, keys, simPod, sshPort, sshWhenUp, waitDeleted, type Keys } from './helpers.ts';
import { eventually, EVENTUALLY_MS } from '../support/eventually.ts';

const unix = (): number => Math.floor(Date.now() / 1000);

async function withSim(config: SimConfigInput, body: (sim: RunningSimulator) => Promise<void>): Promise<void> {
  const sim = await startSimulator({
    apiKeys: [ACCOUNT_KEY],
    config: {
      gpuTypes: [{ id: 'NVIDIA A40', displayName: 'A40', memoryInGb: 48, pricePerHour: 0.4, stock: { 'EU-RO-1': 64 } }],
      rateLimits: { enabled: false },
      ...config,
    },
  });
  try {
    await body(sim);
    await cleanUp(sim);
  } finally {
    await sim.stop();
  }
}

async function podState(port: number, k: Keys): Promise<PodState> {
  const result = await sshWhenUp(port, k, podStateCommand());
  assert.equal(result.code, 0, result.stderr);
  return parsePodState(result.stdout);
}

const images = {
  'no-curl': { withoutCommands: ['curl'] },
  'no-curl-no-python': { withoutCommands: ['curl', 'python3'] },
  'no-http': { withoutCommands: ['curl', 'python3', 'wget'] },
};

for (const shell of SHELLS) {
  const name = (what: string): string => `${what}-${shell.split(' ')[0] ?? 'sh'}`;

  describe(`a pod key that may not delete (${shell})`, { concurrency: true }, () => {
    test('DELETE and terminate refused at the deadline: recorded, then the pod is stopped (only its disk bills)', () => withSim({ podKeys: { refuse: ['delete', 'terminate'] } }, async (sim) => {
      const k = await keys();
      const deadline = unix() + 10;
      const id = await createPod(sim, { name: name('nodelete'), shell, keys: k, input: { deadline } });
      // The probe proves only that the key reads its pod: a delete cannot be tried without deleting.
      // Its verdict is read from the pod's log, which outlives the stop: a pod that boots slowly under
      // load may meet its 10 s deadline before an SSH read of the state could be made.
      const stopped = await eventually('the pod to be stopped', async () => {
        const pod = await simPod(sim, id);
        return pod.status === 'EXITED' ? pod : undefined;
      }, EVENTUALLY_MS, 300);
      assert.equal(stopped.deletedAt, null, 'a pod key that may not delete cannot delete');
      const logs = await simPodLogs(sim.adminUrl, id);
      // (sshd's own log lines may come in between.)
      assert.match(logs, /watchdog: verdict: ok\n[^]*watchdog: deleting the pod: the deadline passed[^]*watchdog: DELETE \/pods\/\w+ failed: HTTP 403; trying the terminate action\n[^]*watchdog: the pod key may not delete the pod \(DELETE: HTTP 403; terminate: HTTP 403\); stopping it/);
    }));

    for (const [image, client] of [['test', 'curl'], ['no-curl', 'python3'], ['no-curl-no-python', 'wget']] as const) {
    test(`DELETE, terminate and stop all refused (${client}): the failure is in the pod state for the controller; no storm of retries`, () => withSim({ images, podKeys: { refuse: ['delete', 'terminate', 'stop'] } }, async (sim) => {
      const k = await keys();
      const deadline = unix() + 10;
      const id = await createPod(sim, { name: name(`nothing-${client}`), shell, keys: k, image, input: { deadline } });
      const port = await sshPort(sim, id);
      const state = await eventually('the recorded failure', async () => {
        const read = await podState(port, k);
        // Recorded before the stop is tried ("...; stopping the pod"), then with its answer.
        return read.deleteFailed?.detail.includes('stop:') ? read : undefined;
      }, EVENTUALLY_MS, SSH_LOOK_MS);
      assert.equal(state.deleteFailed?.rule, 'deadline');
      assert.ok((state.deleteFailed?.at ?? 0) >= deadline);
      assert.equal(state.deleteFailed?.detail, 'DELETE: HTTP 403; terminate: HTTP 403; stop: HTTP 403');
      await new Promise((resolve) => setTimeout(resolve, 5000));
      const logs = await simPodLogs(sim.adminUrl, id);
      assert.match(logs, /stop failed: HTTP 403; the controller must delete the pod; trying again in 30 s/);
      assert.equal(logs.split('watchdog: deleting the pod').length - 1, 1, 'refusals are retried every 30 s, not every period');
      const pod = await simPod(sim, id);
      assert.equal(pod.status, 'RUNNING');
      assert.equal(pod.deletedAt, null);
      assert.match(logs, new RegExp(`watchdog: start: pod ${id} http=${client} `));
    }));
    }
  });

  // 30 s: the lag counts from the create, and a pod booting beside the suite's others (make test, five
  // files at once; its bootstrap alone took 5 s) reached its first probe once a 10 s lag was over.
  test(`a GET of the new pod that answers 404 for 30 s (listLag.get): the probe outlasts it, the verdict is ok (${shell})`, () =>
    withSim({ listLag: { createdMs: 30_000, get: true } }, async (sim) => {
      const k = await keys();
      const id = await createPod(sim, { name: name('lagging-get'), shell, keys: k, input: { verdictBoundSeconds: 60 } });
      const port = await sshPort(sim, id, 60_000);
      const state = await eventually('the watchdog\'s verdict', async () => {
        const read = await podState(port, k);
        return read.watchdog.status !== 'pending' ? read : undefined;
      }, 90_000, 500);
      const logs = await simPodLogs(sim.adminUrl, id);
      assert.deepEqual(state.watchdog, { status: 'ok' }, logs);
      assert.match(logs, new RegExp(`watchdog: probe: GET /pods/${id}: HTTP 404; trying again in \\d+ s`));
    }));

  describe(`images without curl (${shell})`, { concurrency: true }, () => {
    for (const [image, client] of [['no-curl', 'python3'], ['no-curl-no-python', 'wget']] as const) {
      test(`${image}: the watchdog calls Runpod with ${client}; the deadline deletes the pod; the key is nowhere`, () => withSim({ images }, async (sim) => {
        const k = await keys();
        const deadline = unix() + 10;
        const id = await createPod(sim, { name: name(image), shell, keys: k, image, input: { deadline } });
        const port = await sshPort(sim, id);
        const look = await sshWhenUp(port, k, 'command -v curl || echo no-curl');
        assert.match(look.stdout, /^no-curl$/m);
        const pod = await waitDeleted(sim, id, 40000);
        const logs = await simPodLogs(sim.adminUrl, id);
        assert.equal(pod.deletedBy, 'pod', logs);
        assert.match(logs, new RegExp(`watchdog: start: pod ${id} http=${client} `));
        assert.match(logs, /watchdog: verdict: ok/);
        // Deleted during its DELETE (the pod dies before it can log the answer): nothing failed first.
        assert.doesNotMatch(logs, /watchdog: [^\n]*(failed|HTTP [45])/);
        assert.ok(!logs.includes(pod.podApiKey), 'the pod key is never logged');
      }));
    }

    test('no HTTP client at all: the bootstrap says exactly what is missing, sshd still runs so that the controller can read it', () => withSim({ images }, async (sim) => {
      const k = await keys();
      const id = await createPod(sim, { name: name('nohttp'), shell, keys: k, image: 'no-http', input: { bootGraceSeconds: 2 } });
      const port = await sshPort(sim, id);
      const reason = 'the image lacks curl (or python3, or GNU wget): the watchdog cannot call Runpod';
      const state = await eventually('the verdicts', async () => {
        const read = await podState(port, k);
        return read.bootstrap.status !== 'pending' && read.watchdog.status !== 'pending' && read.deleteFailed ? read : undefined;
      }, EVENTUALLY_MS, SSH_LOOK_MS);
      assert.deepEqual(state.bootstrap, { status: 'failed', reason });
      assert.deepEqual(state.watchdog, { status: 'failed', reason: `the bootstrap failed: ${reason}` });
      assert.deepEqual(state.deleteFailed && { rule: state.deleteFailed.rule, detail: state.deleteFailed.detail }, { rule: 'bootstrap', detail: 'the image lacks curl (or python3, or GNU wget): the watchdog cannot call Runpod' });
      assert.match(await simPodLogs(sim.adminUrl, id), /watchdog: cannot delete: the image lacks curl/);
      assert.equal((await simPods(sim.adminUrl)).find((p) => p.id === id)?.deletedAt, null);
    }));
  });
}
