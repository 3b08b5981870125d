// The controller under exactly deploy/'s RBAC: its ServiceAccount's own token (`kubectl create token`)
// and nothing else, against the test API server (RBAC on), completing a run that reads a Secret and a
// ConfigMap, writes events, holds the Lease and removes its finalizer. Any 403 fails the test.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createTestNamespace, testCluster } from '../support/cluster.ts';
import { kubectl, runKubectl } from '../support/kubectl.ts';
import { hasCondition, runManifest, startWorld, unsuppressed, type World } from '../support/operator.ts';
import { containerSettings, deployDir, render, tokenKubeconfig } from './render.ts';

const scratch = mkdtempSync(join(tmpdir(), 'rbac-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

interface Installed { kubeconfig: string; serviceAccount: string; settings: ReturnType<typeof loadConfig> }

/** Applies deploy/ (or an overlay of it) into the world's namespace and gives its ServiceAccount's kubeconfig. */
async function install(world: World, dir: string): Promise<Installed> {
  const namePrefix = `${world.namespace}-`;
  const manifests = await render(dir, { namespace: world.namespace, namePrefix });
  // The CRD is installed already and the namespace is the world's own.
  const objects = manifests.filter((m) => m.kind !== 'CustomResourceDefinition' && m.kind !== 'Namespace');
  const applied = await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  assert.equal(applied.status, 0, applied.stderr);
  const serviceAccount = `${namePrefix}runpod-operator`;
  const token = await kubectl(['create', 'token', serviceAccount, '-n', world.namespace, '--duration=2h']);
  assert.equal(token.status, 0, token.stderr);
  const { kubeConfig } = await testCluster();
  const kubeconfig = tokenKubeconfig(kubeConfig, token.stdout.trim(), join(scratch, `${world.namespace}.kubeconfig`));
  // The Deployment's own args and environment, through the controller's own parser.
  const { args, env } = containerSettings(manifests);
  return { kubeconfig, serviceAccount, settings: loadConfig(args, env) };
}

const asServiceAccount = (installed: Installed, ...args: string[]) => runKubectl(['--kubeconfig', installed.kubeconfig, ...args]);

async function canI(installed: Installed, ...args: string[]): Promise<boolean> {
  const result = await asServiceAccount(installed, 'auth', 'can-i', ...args);
  return result.stdout.trim() === 'yes';
}

/** A run that needs every permission: a Secret and a ConfigMap read, the owned SSH Secret, events, the finalizer. */
async function completeRun(world: World, installed: Installed): Promise<void> {
  const whoami = await asServiceAccount(installed, 'auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}');
  assert.equal(whoami.stdout, `system:serviceaccount:${world.namespace}:${installed.serviceAccount}`, whoami.stderr);
  await kubectl(['create', 'secret', 'generic', 'hf', '-n', world.namespace, '--from-literal=token=hf_RBAC_TOKEN_0123456789']);
  await kubectl(['create', 'configmap', 'cfg', '-n', world.namespace, '--from-literal=config.yaml=lr: 0.001']);
  await world.apply(runManifest('rbac', {
    job: {
      command: ['sh', '-c', 'mkdir -p output && cp config.yaml output/ && test -n "$HF_TOKEN" && echo ok > output/ok.txt'],
      env: [{ name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hf', key: 'token' } } }],
      files: [{ path: 'config.yaml', configMapKeyRef: { name: 'cfg', key: 'config.yaml' } }],
    },
    results: { path: 'output' },
  }));
  const ended = (run: { status?: { phase?: string } }) => run.status?.phase === 'Succeeded' || run.status?.phase === 'Failed';
  const run = await world.waitForRun('rbac', 'Succeeded', ended, 120_000);
  assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
  assert.ok(hasCondition(run, 'ResultsRetrieved'));
  const ssh = await kubectl(['get', 'secret', 'rbac-ssh', '-n', world.namespace, '-o', 'jsonpath={.metadata.ownerReferences[0].blockOwnerDeletion}']);
  assert.equal(ssh.stdout, 'true', 'the owned SSH Secret, with blockOwnerDeletion');
  const events = await kubectl(['get', 'events.events.k8s.io', '-n', world.namespace, '-o', 'jsonpath={.items[*].reason}']);
  assert.match(events.stdout, /Succeeded/);
  const lease = await kubectl(['get', 'lease', 'runpod-operator-leader', '-n', world.namespace, '-o', 'jsonpath={.spec.holderIdentity}']);
  assert.notEqual(lease.stdout, '', 'the Lease is held');
  await world.deleteRun('rbac');
  const denied = world.logLines.filter((line) => /forbidden/i.test(line));
  assert.deepEqual(denied, [], 'the controller was refused something');
}

describe('deploy/ RBAC, as the ServiceAccount', () => {
  test('the cluster-wide ClusterRole: a run completes; secrets are read by name, never listed', () => unsuppressed(async () => {
    await using world = await startWorld('rbac-cluster');
    const installed = await install(world, deployDir);
    assert.equal(installed.settings.leaderElect, true);
    assert.equal(installed.settings.leaseNamespace, world.namespace, 'the Lease in the controller\'s own namespace');
    assert.equal(installed.settings.namespace, undefined, 'cluster-wide');
    // Cluster-wide as deployed, but watching only this test's namespace so that other tests' runs
    // (sharing this API server) stay out; the ClusterRoleBinding grants both the same way. No
    // --cluster-id: the default reads kube-system's UID, which the ClusterRole allows.
    await world.startController({
      kubeconfig: installed.kubeconfig, clusterId: undefined,
      leaderElect: String(installed.settings.leaderElect), leaseNamespace: installed.settings.leaseNamespace,
    });
    await completeRun(world, installed);

    assert.ok(await canI(installed, 'watch', 'runpodruns.runpod-operator.dev', '--all-namespaces'));
    assert.ok(await canI(installed, 'get', 'secrets', '-n', 'kube-public'), 'a run names its Secrets: any namespace\'s, by name');
    assert.ok(!(await canI(installed, 'list', 'secrets', '--all-namespaces')));
    assert.ok(!(await canI(installed, 'list', 'secrets', '-n', world.namespace)));
    assert.ok(!(await canI(installed, 'delete', 'secrets', '-n', world.namespace)));
    assert.ok(!(await canI(installed, 'delete', 'runpodruns.runpod-operator.dev', '-n', world.namespace)));
    assert.ok(!(await canI(installed, 'create', 'pods', '-n', world.namespace)));
    assert.ok(!(await canI(installed, 'get', 'namespaces/default')));
    assert.ok(!(await canI(installed, 'update', 'leases.coordination.k8s.io', '-n', 'default')), 'leases only in its own namespace');
  }));

  test('the single-namespace overlay: a run completes under the Role; another namespace\'s Secrets are out of reach', () => unsuppressed(async () => {
    await using world = await startWorld('rbac-ns');
    const installed = await install(world, join(deployDir, 'overlays', 'single-namespace'));
    assert.equal(installed.settings.namespace, world.namespace, '--namespace is the pod\'s own');
    assert.equal(installed.settings.leaseNamespace, world.namespace);
    assert.equal(installed.settings.clusterId, `my-cluster.${world.namespace}`, 'a cluster id of its own per namespace');
    await world.startController({
      kubeconfig: installed.kubeconfig, namespace: installed.settings.namespace, clusterId: installed.settings.clusterId,
      leaderElect: String(installed.settings.leaderElect), leaseNamespace: installed.settings.leaseNamespace,
    });
    await completeRun(world, installed);

    const other = await createTestNamespace('rbac-other');
    await kubectl(['create', 'secret', 'generic', 'theirs', '-n', other, '--from-literal=key=THEIR_SECRET_VALUE']);
    const read = await asServiceAccount(installed, 'get', 'secret', 'theirs', '-n', other, '-o', 'json');
    assert.notEqual(read.status, 0);
    assert.match(read.stderr, /forbidden/i);
    assert.ok(!read.stdout.includes('THEIR_SECRET_VALUE'));
    assert.ok(!(await canI(installed, 'get', 'runpodruns.runpod-operator.dev', '-n', other)));
    assert.ok(!(await canI(installed, 'get', 'namespaces/kube-system')), 'no cluster-scoped read at all');
    assert.ok(await canI(installed, 'get', 'secrets', '-n', world.namespace));
  }));
});
