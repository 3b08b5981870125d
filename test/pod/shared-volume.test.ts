// Runs sharing a network volume at /workspace (the simulator mounts one directory per volume id in
// every pod that names it): each run has its own directory there, named by its UID, so one run's
// bootstrap never wipes another's state, one run's `retrieved` marker never deletes another's pod,
// and a later run's own directory holds nothing of an earlier run's files or secrets.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { stateDirOf } from '../../src/pod/protocol.ts';
import { markRetrievedCommand, parseAck, parseStartOutput, setKeepCommand, startJobCommand, writeJobEnvCommand } from '../../src/pod/job.ts';
import { parsePodState, podStateCommand } from '../../src/pod/state.ts';
import { startSimulator, type RunningSimulator } from '../runpod-sim/server.ts';
import { ACCOUNT_KEY, SSH_LOOK_MS, cleanUp, createPod, makeKeys, removeKeys, simPod, ssh, sshPort, sshWhenUp, waitDeleted, type Keys } from './helpers.ts';
import { eventually, EVENTUALLY_MS } from '../support/eventually.ts';

const SIM_CONFIG = {
  gpuTypes: [{ id: 'NVIDIA A40', displayName: 'A40', memoryInGb: 48, pricePerHour: 0.4, stock: { 'EU-RO-1': 64 } }],
  rateLimits: { enabled: false },
  // A volume the account has (Runpod refuses a create naming one it does not), in the one data center.
  networkVolumes: [{ id: 'vol-shared-1', name: 'shared', size: 10, dataCenter: 'EU-RO-1' }],
};
const volume = { volumeId: 'vol-shared-1', path: '/workspace' };
const runA = '1a1a1a1a-0000-4000-8000-00000000000a';
const runB = '2b2b2b2b-0000-4000-8000-00000000000b';
const runC = '3c3c3c3c-0000-4000-8000-00000000000c';
const runD = '4d4d4d4d-0000-4000-8000-00000000000d';

/** Every run directory on the volume, with the pod its claim names: "<dir> <pod id>" lines, sorted. */
const OWNERS = 'for d in /workspace/runpod-operator/*/; do d=${d%/}; printf "%s %s\\n" "$(basename "$d")" "$(cut -d" " -f1 "$d.claim")"; done | sort';

describe('runs sharing a network volume', () => {
  let sim: RunningSimulator;
  let keys: Keys;
  before(async () => {
    sim = await startSimulator({ apiKeys: [ACCOUNT_KEY], config: SIM_CONFIG });
    keys = await makeKeys();
  });
  after(async () => {
    try {
      await cleanUp(sim);
    } finally {
      await sim.stop();
      removeKeys(keys);
    }
  });

  test('two concurrent runs keep their own state; one run\'s marker deletes only its pod; a later run sees none of it', async () => {
    const a = await createPod(sim, { name: 'run-a-1', shell: 'dash', keys, input: { runUid: runA, runDir: undefined, stateDir: undefined }, networkVolume: volume });
    const portA = await sshPort(sim, a);
    await sshWhenUp(portA, keys, 'true');
    const b = await createPod(sim, { name: 'run-b-1', shell: 'dash', keys, input: { runUid: runB, runDir: undefined, stateDir: undefined }, networkVolume: volume });
    const portB = await sshPort(sim, b);
    await sshWhenUp(portB, keys, 'true');

    // The volume really is shared: what A writes, B reads.
    assert.equal((await ssh(portA, keys, 'echo from-a > /workspace/shared.txt')).code, 0);
    assert.equal((await ssh(portB, keys, 'cat /workspace/shared.txt')).stdout, 'from-a\n');
    // Each run's directory is its own, and each names its own pod: B's bootstrap left A's state alone.
    const owners = await ssh(portB, keys, OWNERS);
    assert.equal(owners.stdout, `${runA} ${a}\n${runB} ${b}\n`, owners.stderr);

    // A's job secret, written into A's state (on its container disk).
    const env = await ssh(portA, keys, writeJobEnvCommand({ stateDir: stateDirOf(runA) }), { stdin: 'export SECRET_A=hunter2-of-run-a\n' });
    assert.equal(env.code, 0, env.stderr);

    // A's results retrieved: A's watchdog deletes A, and B lives on.
    const marked = await ssh(portA, keys, markRetrievedCommand({ stateDir: stateDirOf(runA) }));
    parseAck(marked.stdout, 'runpod-operator-retrieved');
    await waitDeleted(sim, a);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    assert.equal((await simPod(sim, b)).deletedAt, null, 'run B\'s pod is not deleted by run A\'s marker');

    // A later run on the same volume: its own, empty directory; nothing of A's is in it.
    const c = await createPod(sim, { name: 'run-c-1', shell: 'dash', keys, input: { runUid: runC, runDir: undefined, stateDir: undefined }, networkVolume: volume });
    const portC = await sshPort(sim, c);
    await sshWhenUp(portC, keys, 'true');
    const listing = await ssh(portC, keys, `cd /workspace/runpod-operator/${runC} && ls -A && ls -A ${stateDirOf(runC)} && grep -rl hunter2 /workspace . || true`);
    assert.equal(listing.code, 0, listing.stderr);
    assert.doesNotMatch(listing.stdout, /hunter2|retrieved|job\.env/);
    const all = await ssh(portC, keys, OWNERS);
    assert.match(all.stdout, new RegExp(`${runC} ${c}\\n`));
    assert.match(all.stdout, new RegExp(`${runB} ${b}\\n`), 'B still owns its directory');
  });

  test('a later pod of the same run, while the earlier one still lives: neither sees the other\'s job state, keep flag or retrieved marker', async () => {
    // Attempt 1 runs a job; attempt 2 of the same run boots on the same volume while attempt 1 is
    // still alive (lost to the controller, not yet gone): attempt 2 claims the run directory.
    const dir = `/workspace/runpod-operator/${runD}`;
    const first = await createPod(sim, { name: 'run-d-1', shell: 'dash', keys, input: { runUid: runD, runDir: undefined, stateDir: undefined }, networkVolume: volume });
    const portFirst = await sshPort(sim, first);
    await sshWhenUp(portFirst, keys, 'true');
    // The job waits for a file in its working directory (on the volume), then exits 7.
    const job = ['sh', '-c', 'while [ ! -e go ]; do sleep 0.2; done; exit 7'];
    const started = await ssh(portFirst, keys, startJobCommand({ runDir: dir, stateDir: stateDirOf(runD), command: job, shell: 'dash' }));
    assert.equal(parseStartOutput(started.stdout).outcome, 'started', started.stderr);
    const second = await createPod(sim, { name: 'run-d-2', shell: 'dash', keys, input: { runUid: runD, runDir: undefined, stateDir: undefined, attempt: 2 }, networkVolume: volume });
    const portSecond = await sshPort(sim, second);
    await sshWhenUp(portSecond, keys, 'true');
    const stateOf = async (port: number) => parsePodState((await ssh(port, keys, podStateCommand({ stateDir: stateDirOf(runD) }))).stdout);
    await eventually('the second pod\'s watchdog verdict', async () => ((await stateOf(portSecond)).watchdog.status === 'ok' ? true : undefined), EVENTUALLY_MS, SSH_LOOK_MS);

    // The first pod's job ends, its keep flag is set off, and its results are marked retrieved.
    assert.equal((await ssh(portFirst, keys, `touch ${dir}/go`)).code, 0);
    const ended = await eventually('the first pod\'s job to end', async () => {
      const state = await stateOf(portFirst);
      return state.job.status === 'exited' ? state : undefined;
    }, EVENTUALLY_MS, SSH_LOOK_MS);
    assert.equal(ended.job.exitCode, 7);
    parseAck((await ssh(portFirst, keys, setKeepCommand({ stateDir: stateDirOf(runD), keep: false }))).stdout, 'runpod-operator-keep');
    parseAck((await ssh(portFirst, keys, markRetrievedCommand({ stateDir: stateDirOf(runD) }))).stdout, 'runpod-operator-retrieved');
    await waitDeleted(sim, first);

    // The second pod saw none of it: no job, no exit code, no keep flag, no marker; its watchdog keeps it.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    assert.equal((await simPod(sim, second)).deletedAt, null, 'the first pod\'s marker does not delete the second pod');
    const state = await stateOf(portSecond);
    assert.deepEqual(
      { job: state.job.status, exit: state.job.exitCode, started: state.job.startedAt, retrieved: state.retrieved, keep: state.keep },
      { job: 'none', exit: null, started: null, retrieved: false, keep: null },
    );
    // The volume holds the run directory (the job's working file) and the claim, and none of the pods' state.
    const onVolume = await ssh(portSecond, keys, `cd /workspace/runpod-operator && find ${runD} ${runD}.claim`);
    assert.deepEqual(onVolume.stdout.trim().split('\n').sort(), [runD, `${runD}.claim`, `${runD}/go`], onVolume.stderr);
    // And it can still run its own job.
    const again = await ssh(portSecond, keys, startJobCommand({ runDir: dir, stateDir: stateDirOf(runD), command: ['true'], shell: 'dash' }));
    assert.equal(parseStartOutput(again.stdout).outcome, 'started', again.stderr);
  });
});
