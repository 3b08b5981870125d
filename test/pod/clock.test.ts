// The watchdog on a pod whose clock is hours off (the simulator's clock-skew fault): the deadline (the
// controller's clock) and the cost cap (Runpod's createdAt) are judged on Runpod's time, learned from the
// Date header of its answers, whether the pod booted skewed or its clock stepped after the probe. Real
// simulated pods under both shells, and the python3 and GNU wget clients.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { injectFault, simPodLogs } from '../runpod-sim/client.ts';
import { startSimulator, type RunningSimulator, type SimConfigInput } from '../runpod-sim/server.ts';
import { parseStartOutput, startJobCommand } from '../../src/pod/job.ts';
import { parsePodState, podStateCommand } from '../../src/pod/state.ts';
import { ACCOUNT_KEY, SHELLS, SSH_LOOK_MS, cleanUp, createPod, keys, simPod, ssh, sshPort, waitDeleted, type PodOptions } from './helpers.ts';
import { eventually, EVENTUALLY_MS } from '../support/eventually.ts';

const unix = (): number => Math.floor(Date.now() / 1000);
const TWO_HOURS = 7200;

async function withSim(config: SimConfigInput, body: (sim: RunningSimulator) => Promise<void>): Promise<void> {
  const sim = await startSimulator({
    apiKeys: [ACCOUNT_KEY],
    config: {
      gpuTypes: [{ id: 'NVIDIA A40', displayName: 'A40', memoryInGb: 48, pricePerHour: 0.4, stock: { 'EU-RO-1': 64 } }],
      rateLimits: { enabled: false },
      timings: { restartDelayMs: 200 },
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

/** A pod whose host clock is `offsetSeconds` off from its boot: skewed, then its container restarted (the new one boots skewed). */
async function skewedFromBoot(sim: RunningSimulator, options: PodOptions, offsetSeconds: number): Promise<string> {
  const id = await createPod(sim, options);
  // Its first container runs (its ports are assigned once it does), so that there is one to restart.
  await sshPort(sim, id);
  await injectFault(sim.adminUrl, { fault: 'clock-skew', podId: id, offsetSeconds });
  await injectFault(sim.adminUrl, { fault: 'container-exit', podId: id });
  assert.equal((await simPod(sim, id)).restarts, 1);
  return id;
}

/**
 * Deleted by the pod itself for its deadline, not before it and not long after: the period is 1 s, but
 * a call to the simulator (this process, under the suite's load) has taken 15 s; a skew misread is hours.
 */
async function deletedAtDeadline(sim: RunningSimulator, id: string, deadline: number): Promise<string> {
  const pod = await waitDeleted(sim, id, (deadline - unix()) * 1000 + EVENTUALLY_MS);
  const logs = await simPodLogs(sim.adminUrl, id);
  assert.equal(pod.deletedBy, 'pod', logs);
  assert.match(logs, /watchdog: deleting the pod: the deadline passed/);
  const deletedAt = Date.parse(pod.deletedAt ?? '');
  assert.ok(deletedAt >= deadline * 1000, `deleted ${deadline * 1000 - deletedAt} ms before its deadline; logs:\n${logs}`);
  assert.ok(deletedAt <= (deadline + 30) * 1000, `deleted ${deletedAt - deadline * 1000} ms after its deadline; logs:\n${logs}`);
  return logs;
}

// 7200 s, give or take what a slow answer adds: the skew is taken at the low end of what the reading proves.
const skewLine = (side: 'ahead of' | 'behind'): RegExp => new RegExp(`watchdog: clock: the pod's clock is 7(19[5-9]|20[0-9]|210) s ${side} Runpod's`);

for (const shell of SHELLS) {
  const name = (what: string): string => `${what}-${shell.split(' ')[0] ?? 'sh'}`;

  describe(`a pod's clock hours off (${shell})`, { concurrency: true }, () => {
    test('2 h ahead from its boot: deleted at its deadline, not at once', () => withSim({}, async (sim) => {
      const deadline = unix() + 20;
      const id = await skewedFromBoot(sim, { name: name('ahead'), shell, keys: await keys(), input: { deadline } }, TWO_HOURS);
      assert.match(await deletedAtDeadline(sim, id, deadline), skewLine('ahead of'));
    }));

    test('2 h behind from its boot: deleted at its deadline, not 2 h late', () => withSim({}, async (sim) => {
      const deadline = unix() + 20;
      const id = await skewedFromBoot(sim, { name: name('behind'), shell, keys: await keys(), input: { deadline } }, -TWO_HOURS);
      assert.match(await deletedAtDeadline(sim, id, deadline), skewLine('behind'));
    }));

    test('a clock that steps 2 h ahead after the probe: Runpod\'s time is read again, the pod lives to its deadline', () => withSim({}, async (sim) => {
      const k = await keys();
      const deadline = unix() + 20;
      const id = await createPod(sim, { name: name('step'), shell, keys: k, input: { deadline } });
      const port = await sshPort(sim, id);
      await eventually('the watchdog\'s verdict', async () => {
        const read = await ssh(port, k, podStateCommand());
        return read.code === 0 && parsePodState(read.stdout).watchdog.status === 'ok' ? true : undefined;
      }, EVENTUALLY_MS, SSH_LOOK_MS);
      await injectFault(sim.adminUrl, { fault: 'clock-skew', podId: id, offsetSeconds: TWO_HOURS });
      const logs = await deletedAtDeadline(sim, id, deadline);
      assert.match(logs, /watchdog: clock: the pod's clock stepped/);
      assert.match(logs, skewLine('ahead of'));
    }));
  });
}

describe('the retrieve grace across a step of the pod\'s clock', () => {
  test('a clock that steps 2 h ahead after the job\'s end: the grace still counts from the end, on Runpod\'s time', () => withSim({}, async (sim) => {
    const k = await keys();
    const id = await createPod(sim, { name: 'grace-step', shell: 'dash', keys: k, input: { retrieveGraceSeconds: 15, deadline: unix() + 86_400 } });
    const port = await sshPort(sim, id);
    await eventually('the watchdog\'s verdict', async () => {
      const read = await ssh(port, k, podStateCommand());
      return read.code === 0 && parsePodState(read.stdout).watchdog.status === 'ok' ? true : undefined;
    }, EVENTUALLY_MS, SSH_LOOK_MS);
    assert.equal(parseStartOutput((await ssh(port, k, startJobCommand({ command: ['true'], shell: 'dash' }))).stdout).outcome, 'started');
    const endedAt = await eventually('the job\'s end', async () => {
      const read = await ssh(port, k, podStateCommand());
      return read.code === 0 ? parsePodState(read.stdout).job.endedAt ?? undefined : undefined;
    }, EVENTUALLY_MS, SSH_LOOK_MS);
    // The watchdog has seen the end (on the clock that was right then) before the clock steps.
    await eventually('the watchdog to see the end', async () => (/watchdog: the job ended with exit code 0/.test(await simPodLogs(sim.adminUrl, id)) ? true : undefined), EVENTUALLY_MS, 300);
    await injectFault(sim.adminUrl, { fault: 'clock-skew', podId: id, offsetSeconds: TWO_HOURS });
    const pod = await waitDeleted(sim, id);
    const logs = await simPodLogs(sim.adminUrl, id);
    assert.equal(pod.deletedBy, 'pod', logs);
    assert.match(logs, /deleting the pod: the job ended at \d+ and its results were not retrieved within 15 s/);
    const deletedAt = Date.parse(pod.deletedAt ?? '');
    assert.ok(deletedAt >= (endedAt + 15) * 1000, `deleted ${(endedAt + 15) * 1000 - deletedAt} ms before the grace's end; logs:\n${logs}`);
  }));
});

describe('the cost cap on a pod 2 h ahead', () => {
  test('counts the pod\'s spend from createdAt on Runpod\'s time, not 2 h of it at once', () => withSim({}, async (sim) => {
    // $0.40/h: $0.0006 is spent 5.4 s after the create. The deadline is far (a day), so only the cap can end it.
    const input = { maxCostUsd: '0.0006', deadline: unix() + 86_400 };
    const id = await skewedFromBoot(sim, { name: 'costcap-ahead', shell: 'dash', keys: await keys(), input }, TWO_HOURS);
    const created = Date.parse((await simPod(sim, id)).createdAt);
    const pod = await waitDeleted(sim, id);
    const logs = await simPodLogs(sim.adminUrl, id);
    assert.equal(pod.deletedBy, 'pod', logs);
    assert.match(logs, /deleting the pod: the cost cap was reached/);
    const deletedAt = Date.parse(pod.deletedAt ?? '');
    // Not before the cap: whole seconds on both clocks make it 4 s at the least (as on a pod whose clock agrees).
    assert.ok(deletedAt - created >= 4000, `deleted ${deletedAt - created} ms after the create; logs:\n${logs}`);
  }));
});

const clients = {
  python3: { withoutCommands: ['curl'] },
  wget: { withoutCommands: ['curl', 'python3'] },
};

describe('Runpod\'s time read by the fallback clients', { concurrency: true }, () => {
  for (const [client, image] of Object.entries(clients)) {
    test(`${client}: a pod 2 h ahead from its boot is deleted at its deadline`, () => withSim({ images: { [client]: image } }, async (sim) => {
      const deadline = unix() + 20;
      const id = await skewedFromBoot(sim, { name: `ahead-${client}`, shell: 'dash', keys: await keys(), image: client, input: { deadline } }, TWO_HOURS);
      const logs = await deletedAtDeadline(sim, id, deadline);
      assert.match(logs, new RegExp(`http=${client}`));
      assert.match(logs, skewLine('ahead of'));
    }));
  }
});
