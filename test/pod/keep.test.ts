// keepPod on real (simulated) pods: the deadline and the cost cap are absolute. A kept pod with a
// job is still deleted by its own watchdog at the deadline and at the cost cap, and a `keep` file
// the job writes itself (the job runs as root in the run directory) never extends its life past them.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseStartOutput, startJobCommand } from '../../src/pod/job.ts';
import { parsePodState, podStateCommand, type PodState } from '../../src/pod/state.ts';
import { DEFAULT_STATE_DIR, podPath } from '../../src/pod/protocol.ts';
import { simPodLogs } from '../runpod-sim/client.ts';
import { startSimulator, type RunningSimulator } from '../runpod-sim/server.ts';
import { ACCOUNT_KEY, SHELLS, SSH_LOOK_MS, cleanUp, createPod, keys, simPod, ssh, sshPort, waitDeleted, type Keys } from './helpers.ts';
import { eventually, EVENTUALLY_MS } from '../support/eventually.ts';

const SIM_CONFIG = {
  gpuTypes: [{ id: 'NVIDIA A40', displayName: 'A40', memoryInGb: 48, pricePerHour: 0.4, stock: { 'EU-RO-1': 64 } }],
  rateLimits: { enabled: false },
};

const unix = (): number => Math.floor(Date.now() / 1000);

async function withSim(body: (sim: RunningSimulator, keys: Keys) => Promise<void>): Promise<void> {
  const made = await keys();
  const sim = await startSimulator({ apiKeys: [ACCOUNT_KEY], config: SIM_CONFIG });
  try {
    await body(sim, made);
    await cleanUp(sim);
  } finally {
    await sim.stop();
  }
}

async function state(port: number, keys: Keys): Promise<PodState | undefined> {
  const result = await ssh(port, keys, podStateCommand());
  return result.code === 0 ? parsePodState(result.stdout) : undefined;
}

/** Both verdicts ok, then a job that marks its own pod kept and runs on. */
async function startSelfKeepingJob(sim: RunningSimulator, keys: Keys, id: string): Promise<number> {
  const port = await sshPort(sim, id);
  await eventually('both verdicts', async () => {
    const now = await state(port, keys);
    return now && now.bootstrap.status !== 'pending' && now.watchdog.status !== 'pending' ? now : undefined;
  }, EVENTUALLY_MS, SSH_LOOK_MS);
  const command = ['sh', '-c', `echo 1 > ${podPath(DEFAULT_STATE_DIR, 'keep')}; sleep 600`];
  const started = await ssh(port, keys, startJobCommand({ command, shell: 'dash' }));
  assert.equal(parseStartOutput(started.stdout).outcome, 'started', started.stderr);
  await eventually('the job to mark the pod kept', async () => ((await state(port, keys))?.keep === true ? true : undefined), EVENTUALLY_MS, SSH_LOOK_MS);
  return port;
}

for (const shell of SHELLS) {
  describe(`keepPod is bounded by the deadline and the cost cap (${shell})`, { concurrency: true }, () => {
    const name = (what: string): string => `${what}-${shell.split(' ')[0] ?? 'sh'}`;

    test('a kept pod with a running job is deleted by its watchdog at the deadline, not before', () => withSim(async (sim, keys) => {
      // Long enough for a loaded machine to boot the pod and start the job first.
      const deadline = unix() + 25;
      const id = await createPod(sim, { name: name('keep-deadline'), shell, keys, input: { keepPod: true, deadline } });
      await startSelfKeepingJob(sim, keys, id);
      const pod = await waitDeleted(sim, id, 60000);
      const logs = await simPodLogs(sim.adminUrl, id);
      assert.equal(pod.deletedBy, 'pod', logs);
      assert.match(logs, /the job started[^]*deleting the pod: the deadline passed/);
      assert.ok(Date.parse(pod.deletedAt ?? '') >= deadline * 1000, logs);
    }));

    test('a kept pod with a running job is deleted by its watchdog at the cost cap', () => withSim(async (sim, keys) => {
      // $0.40/h: $0.003 is spent 27 s after the create.
      const id = await createPod(sim, { name: name('keep-cost'), shell, keys, input: { keepPod: true, maxCostUsd: '0.003' } });
      const created = Date.parse((await simPod(sim, id)).createdAt);
      await startSelfKeepingJob(sim, keys, id);
      const pod = await waitDeleted(sim, id, 60000);
      const logs = await simPodLogs(sim.adminUrl, id);
      assert.equal(pod.deletedBy, 'pod', logs);
      assert.match(logs, /the job started[^]*deleting the pod: the cost cap was reached/);
      assert.ok(Date.parse(pod.deletedAt ?? '') - created >= 26000, logs);
    }));
  });
}
