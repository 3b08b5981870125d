// `kubectl runpod` through the real kubectl (plugin discovery on PATH), against the real API server, the
// simulator's real pods and SSH: logs -f shows a line while the job still runs and the last one after it
// ends; logs --source system shows Runpod's own lines of the pod (image pull, container start) read with
// the run's key from the simulator's log stream, and -f follows them until the pod is gone; ssh runs a
// command on a kept pod and refuses a pod whose host key is not the pinned one; cost, cancel and keep; a
// user who may read runs but not Secrets gets the one-sentence refusal. Ends with the leak check.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { sshSecretKeys, sshSecretName } from '../../src/api/ssh-secret.ts';
import { generateKeyPair } from '../../src/ssh/index.ts';
import { testCluster } from '../support/cluster.ts';
import { kubectl } from '../support/kubectl.ts';
import { hasCondition, runManifest, withWorld } from '../support/operator.ts';
import { tokenKubeconfig } from '../deploy/render.ts';
import { eventually } from '../support/eventually.ts';

const bin = new URL('../../bin', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'plugin-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

interface Plugin { code: Promise<number>; exited: () => boolean; stdout: () => string; stderr: () => string }

/** `kubectl runpod ARGS` as a user runs it: kubectl finds kubectl-runpod on PATH. */
async function kubectlRunpod(args: string[], kubeconfig?: string, env: Record<string, string> = {}): Promise<Plugin> {
  const config = kubeconfig ?? (await testCluster()).kubeconfigPath;
  const child = spawn('kubectl', ['runpod', ...args], { env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}`, KUBECONFIG: config, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let [stdout, stderr] = ['', ''];
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
  let exited = false;
  const code = new Promise<number>((resolve) => child.once('close', (status) => { exited = true; resolve(status ?? -1); }));
  return { code, exited: () => exited, stdout: () => stdout, stderr: () => stderr };
}

void test('kubectl runpod: logs -f while the job runs and to its end, ssh into a kept pod, cost, cancel, keep, and the refusals', () =>
  withWorld('plugin', async (world) => {
    const ns = world.namespace;
    // Line 1, then the job waits for the test to release it (over `kubectl runpod ssh`): a loaded machine
    // may take longer than any fixed job to start a follower, and the lines must come while the job runs.
    const talk = 'echo "line 1"; i=0; while [ ! -e release ] && [ "$i" -lt 180 ]; do sleep 1; i=$((i + 1)); done; '
      + 'for i in 2 3 4 5 6 7 8 9 10; do echo "line $i"; sleep 1; done; mkdir -p output; echo ok > output/r.txt; echo kept > /tmp/marker';
    await world.apply(runManifest('talker', { job: { command: ['sh', '-c', talk] }, results: { path: 'output' } }));
    await world.apply(runManifest('kept', { job: { command: ['sh', '-c', 'mkdir -p output; echo kept > /tmp/marker; echo one; echo two; echo three'] }, results: { path: 'output' }, keepPod: true }));

    await world.waitForRun('talker', 'its job running', (run) => hasCondition(run, 'JobStarted'), 120_000);
    // Runpod's lines of the pod, followed until the pod is gone; the API URL as the controller's variable gives it.
    const platform = await kubectlRunpod(['logs', 'talker', '-n', ns, '--source', 'system', '-f'], undefined, { RUNPOD_OPERATOR_RUNPOD_API_URL: world.sim.baseUrl });
    const follow = await kubectlRunpod(['logs', '-f', 'talker', '-n', ns]);
    // (A follow that ended early, e.g. refused, ends the wait with what it said.)
    await eventually('a line of the running job', () => follow.stdout().includes('line 1') || follow.exited(), 120_000);
    assert.match(follow.stdout(), /^line 1\n/, `kubectl runpod logs -f: ${follow.stderr()}`);
    const seenWhile = await world.run('talker');
    assert.equal(seenWhile?.status?.job?.finishedAt, undefined, 'the line came while the job still ran');
    // `ssh` starts in the run directory, where the job waits for this file.
    const release = await kubectlRunpod(['ssh', 'talker', '-n', ns, '--', 'touch', 'release']);
    assert.equal(await release.code, 0, release.stderr());
    assert.equal(await follow.code, 0, follow.stderr());
    assert.match(follow.stdout(), /^line 1\n[^]*line 10\n$/);
    assert.equal(follow.stderr(), 'the job exited with code 0\n');

    // Once its pod is gone, the log is with the results: one sentence says where.
    await world.waitForRun('talker', 'its pod deleted', (run) => run.status?.pod?.state === 'Deleted', 120_000);
    const gone = await kubectlRunpod(['logs', 'talker', '-n', ns]);
    assert.equal(await gone.code, 1);
    assert.match(gone.stderr(), /^error: the pod of run "talker" is gone; the job's log was retrieved with its results: \/.*\/talker\/[-0-9a-f]+\/job\.log\n$/);
    assert.equal(await platform.code, 0, platform.stderr());
    const said = platform.stdout().split('\n').filter(Boolean).map((line) => line.replace(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z /, ''));
    assert.equal(said.length, platform.stdout().split('\n').filter(Boolean).length, `every line starts with its time: ${platform.stdout()}`);
    for (const line of ['Pulling image runpod/base:0.6.2', 'Pulled image runpod/base:0.6.2', 'Started container', 'Terminating pod']) assert.ok(said.includes(line), `${line} in ${platform.stdout()}`);
    assert.equal(platform.stderr(), '');

    const kept = await world.waitForRun('kept', 'Succeeded, pod kept', (run) => run.status?.phase === 'Succeeded', 120_000);
    const cat = await kubectlRunpod(['ssh', 'kept', '-n', ns, '--', 'cat', '/tmp/marker']);
    assert.deepEqual([await cat.code, cat.stdout()], [0, 'kept\n'], cat.stderr());
    const tail = await kubectlRunpod(['logs', 'kept', '-n', ns, '--tail', '2']);
    assert.deepEqual([await tail.code, tail.stdout()], [0, 'two\nthree\n'], tail.stderr());
    // Without -f: the replay, then the end once the stream is quiet; the URL by flag this time.
    const system = await kubectlRunpod(['logs', 'kept', '-n', ns, '--source', 'system', '--since', '1h', '--runpod-api-url', world.sim.baseUrl]);
    assert.equal(await system.code, 0, system.stderr());
    assert.match(system.stdout(), /^\S+Z Pod \w+ created: 1 x NVIDIA GeForce RTX 4090 in \S+ \(SECURE\)\n\S+Z Pulling image runpod\/base:0\.6\.2\n\S+Z Pulled image runpod\/base:0\.6\.2\n\S+Z Created container\n\S+Z Started container\n$/);
    const lastTwo = await kubectlRunpod(['logs', 'kept', '-n', ns, '--source', 'system', '--tail', '2', '--runpod-api-url', world.sim.baseUrl]);
    assert.equal(await lastTwo.code, 0, lastTwo.stderr());
    assert.match(lastTwo.stdout(), /^\S+Z Created container\n\S+Z Started container\n$/);
    const noSince = await kubectlRunpod(['logs', 'kept', '-n', ns, '--since', '1h']);
    assert.deepEqual([await noSince.code, noSince.stderr()], [2, 'error: --since applies to --source system only: the job\'s log lines carry no timestamps\n']);
    // It starts in the run directory, where the job ran (as kubectl exec starts in the workdir); the words reach the pod as they were.
    const where = await kubectlRunpod(['ssh', 'kept', '-n', ns, '--', 'sh', '-c', 'pwd; ls -d output']);
    assert.equal(await where.code, 0, where.stderr());
    assert.match(where.stdout(), new RegExp(`^/\\S+/${kept.metadata.uid}\\noutput\\n$`));
    const exitCode = await kubectlRunpod(['ssh', 'kept', '-n', ns, '--', 'sh', '-c', 'exit 7']);
    assert.equal(await exitCode.code, 7, 'the remote command\'s exit code');

    const cost = await kubectlRunpod(['cost', '-n', ns]);
    assert.equal(await cost.code, 0, cost.stderr());
    assert.match(cost.stdout(), new RegExp(`^NAMESPACE +RUNS +GPU-HOURS +COST-USD\\n${ns} +2 +\\d+\\.\\d\\d +\\d+\\.\\d\\d\\nTOTAL +2 `));

    // A user who may read runs but not Secrets: the refusal names the verb and the resource.
    const role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'run-reader', namespace: ns },
      rules: [{ apiGroups: ['runpod-operator.dev'], resources: ['runpodruns'], verbs: ['get', 'list'] }] };
    const binding = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'run-reader', namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'run-reader' }, subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns }] };
    assert.equal((await kubectl(['create', 'serviceaccount', 'reader', '-n', ns])).status, 0);
    assert.equal((await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [role, binding] }))).status, 0);
    const token = await kubectl(['create', 'token', 'reader', '-n', ns]);
    const readerConfig = tokenKubeconfig((await testCluster()).kubeConfig, token.stdout.trim(), join(scratch, 'reader.kubeconfig'));
    const refused = await kubectlRunpod(['ssh', 'kept', '-n', ns, '--', 'true'], readerConfig);
    assert.deepEqual([await refused.code, refused.stderr()],
      [1, `error: forbidden: you may not get secrets "kept-ssh" in namespace "${ns}" (ask for "get" on it in your RBAC)\n`]);
    const noKey = await kubectlRunpod(['logs', 'kept', '-n', ns, '--source', 'system', '--runpod-api-url', world.sim.baseUrl], readerConfig);
    assert.deepEqual([await noKey.code, noKey.stderr()],
      [1, `error: forbidden: you may not get secrets "runpod" in namespace "${ns}" (ask for "get" on it in your RBAC)\n`]);

    // Another host key in the run's Secret (the run is over, its pod kept): ssh refuses the pod.
    const other = generateKeyPair('another-host');
    const patched = await kubectl(['patch', 'secret', sshSecretName('kept'), '-n', ns, '--type', 'merge', '-p',
      JSON.stringify({ data: { [sshSecretKeys.hostPublicKey]: Buffer.from(other.publicKey).toString('base64') } })]);
    assert.equal(patched.status, 0, patched.stderr);
    const mismatch = await kubectlRunpod(['ssh', 'kept', '-n', ns, '--', 'cat', '/tmp/marker']);
    assert.equal(await mismatch.code, 255);
    assert.equal(mismatch.stdout(), '', 'nothing ran on a pod that is not the pinned one');
    assert.match(mismatch.stderr(), /Host key verification failed[^]*error: ssh to the pod of run "kept" .* failed; a host key other than the one the run pinned is refused\n$/);

    const off = await kubectlRunpod(['keep', 'kept', '--off', '-n', ns]);
    assert.deepEqual([await off.code, off.stdout()], [0, 'runpodrun.runpod-operator.dev/kept no longer kept (keepPod: false)\n'], off.stderr());
    assert.equal((await world.run('kept') as { spec?: { keepPod?: boolean } } | undefined)?.spec?.keepPod, false);
    await world.apply(runManifest('waiter', { job: { command: ['sleep', '600'] } }));
    const cancel = await kubectlRunpod(['cancel', 'waiter', '-n', ns]);
    assert.equal(await cancel.code, 0, cancel.stderr());
    assert.equal((await world.run('waiter') as { spec?: { cancel?: boolean } } | undefined)?.spec?.cancel, true);

    const dirStore = await kubectlRunpod(['results', 'kept', '-n', ns]);
    assert.equal(await dirStore.code, 1);
    assert.match(dirStore.stderr(), /^error: the results of run "kept" are on the controller's results volume \(the directory store\), at \/.*\/kept\/[-0-9a-f]+: copy them from the controller's pod \(kubectl cp\)\n$/);

    const missing = await kubectlRunpod(['logs', 'nosuchrun', '-n', ns]);
    assert.deepEqual([await missing.code, missing.stderr()], [1, `error: runpodruns.runpod-operator.dev "nosuchrun" not found in namespace "${ns}"\n`]);

    for (const name of ['talker', 'kept', 'waiter']) await world.deleteRun(name);
  }));
