// Runs sharing a network volume at /workspace (the simulator mounts one directory per volume id in
// every pod that names it): each run has its own directory there, named by its UID, so one run's
// bootstrap never wipes another's state, one run's `retrieved` marker never deletes another's pod,
// and a later run's own directory holds nothing of an earlier run's files or secrets.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { markRetrievedCommand, parseAck, writeJobEnvCommand } from '../../src/pod/job.ts';
import { startSimulator, type RunningSimulator } from '../runpod-sim/server.ts';
import { ACCOUNT_KEY, cleanUp, createPod, makeKeys, removeKeys, simPod, ssh, sshPort, sshWhenUp, waitDeleted, type Keys } from './helpers.ts';

const SIM_CONFIG = {
  gpuTypes: [{ id: 'NVIDIA A40', displayName: 'A40', memoryInGb: 48, pricePerHour: 0.4, stock: { 'EU-RO-1': 64 } }],
  rateLimits: { enabled: false },
};
const volume = { volumeId: 'vol-shared-1', path: '/workspace' };
const runA = '1a1a1a1a-0000-4000-8000-00000000000a';
const runB = '2b2b2b2b-0000-4000-8000-00000000000b';
const runC = '3c3c3c3c-0000-4000-8000-00000000000c';

/** Every run directory on the volume, with the pod its state names: "<dir> <pod id>" lines, sorted. */
const OWNERS = 'for d in /workspace/runpod-operator/*/; do printf "%s %s\\n" "$(basename "$d")" "$(cut -d" " -f1 "$d.pod/pod")"; done | sort';

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
    const a = await createPod(sim, { name: 'run-a-1', shell: 'dash', keys, input: { runUid: runA, runDir: undefined }, networkVolume: volume });
    const portA = await sshPort(sim, a);
    await sshWhenUp(portA, keys, 'true');
    const b = await createPod(sim, { name: 'run-b-1', shell: 'dash', keys, input: { runUid: runB, runDir: undefined }, networkVolume: volume });
    const portB = await sshPort(sim, b);
    await sshWhenUp(portB, keys, 'true');

    // The volume really is shared: what A writes, B reads.
    assert.equal((await ssh(portA, keys, 'echo from-a > /workspace/shared.txt')).code, 0);
    assert.equal((await ssh(portB, keys, 'cat /workspace/shared.txt')).stdout, 'from-a\n');
    // Each run's directory is its own, and each names its own pod: B's bootstrap left A's state alone.
    const owners = await ssh(portB, keys, OWNERS);
    assert.equal(owners.stdout, `${runA} ${a}\n${runB} ${b}\n`, owners.stderr);

    // A's job secret, written into A's directory.
    const dirA = `/workspace/runpod-operator/${runA}`;
    const env = await ssh(portA, keys, writeJobEnvCommand({ runDir: dirA }), { stdin: 'export SECRET_A=hunter2-of-run-a\n' });
    assert.equal(env.code, 0, env.stderr);

    // A's results retrieved: A's watchdog deletes A, and B lives on.
    const marked = await ssh(portA, keys, markRetrievedCommand({ runDir: dirA }));
    parseAck(marked.stdout, 'runpod-operator-retrieved');
    await waitDeleted(sim, a);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    assert.equal((await simPod(sim, b)).deletedAt, null, 'run B\'s pod is not deleted by run A\'s marker');

    // A later run on the same volume: its own, empty directory; nothing of A's is in it.
    const c = await createPod(sim, { name: 'run-c-1', shell: 'dash', keys, input: { runUid: runC, runDir: undefined }, networkVolume: volume });
    const portC = await sshPort(sim, c);
    await sshWhenUp(portC, keys, 'true');
    const listing = await ssh(portC, keys, `cd /workspace/runpod-operator/${runC} && ls -A && ls -A .pod && grep -rl hunter2 . || true`);
    assert.equal(listing.code, 0, listing.stderr);
    assert.doesNotMatch(listing.stdout, /hunter2|retrieved|job\.env/);
    const all = await ssh(portC, keys, OWNERS);
    assert.match(all.stdout, new RegExp(`${runC} ${c}\\n`));
    assert.match(all.stdout, new RegExp(`${runB} ${b}\\n`), 'B still owns its directory');
  });
});
