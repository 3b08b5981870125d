// deploy/ as a platform team applies it: the API server accepts every object (server-side dry run,
// with its admission and validation), the Deployment matches the image (Dockerfile) and the
// controller's own flags, and the overlay's Role keeps the ClusterRole's rules.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { V1ClusterRole, V1PolicyRule, V1Role } from '@kubernetes/client-node';
import { loadConfig } from '../../src/config.ts';
import { kubectl } from '../support/kubectl.ts';
import { containerSettings, deployDir, ofKind, render, theDeployment, type Manifest } from './render.ts';

const overlayDir = join(deployDir, 'overlays', 'single-namespace');

async function dryRun(dir: string, namespace: string): Promise<void> {
  // A dry run creates nothing, so the namespaced objects need their namespace to exist for real.
  const created = await kubectl(['create', 'namespace', namespace]);
  assert.ok(created.status === 0 || /AlreadyExists/.test(created.stderr), created.stderr);
  const result = await kubectl(['apply', '-k', dir, '--dry-run=server']);
  assert.equal(result.status, 0, result.stderr);
  for (const kind of ['serviceaccount', 'deployment.apps', 'persistentvolumeclaim', 'service', 'poddisruptionbudget.policy', 'networkpolicy.networking.k8s.io', 'rolebinding.rbac.authorization.k8s.io']) {
    assert.match(result.stdout, new RegExp(`^${kind.replaceAll('.', '\\.')}/\\S+ (created|configured|unchanged) \\(server dry run\\)$`, 'm'), `${kind} in:\n${result.stdout}`);
  }
}

const rulesOf = (manifests: Manifest[], kind: string): V1PolicyRule[] =>
  ofKind(manifests, kind).flatMap((role) => (role as unknown as V1ClusterRole | V1Role).rules ?? []);

describe('deploy/', () => {
  test('kubectl apply -k deploy --dry-run=server passes', () => dryRun(deployDir, 'runpod-operator'));

  test('kubectl apply -k deploy/overlays/single-namespace --dry-run=server passes', () => dryRun(overlayDir, 'runpod-jobs'));

  test('the Deployment: HA, hardened, probes and metrics on the controller\'s ports, the image\'s user and /results', async () => {
    const manifests = await render(deployDir);
    const deployment = theDeployment(manifests);
    const pod = deployment.spec?.template.spec;
    const container = pod?.containers[0];
    assert.equal(deployment.spec?.replicas, 2);
    const { version } = JSON.parse(readFileSync(join(deployDir, '..', 'package.json'), 'utf8')) as { version: string };
    assert.equal(container?.image, `runpod-operator:${version}`, 'the image of this version (make deploy IMG=... for a registry)');
    assert.equal(pod?.securityContext?.runAsNonRoot, true);
    assert.equal(pod?.securityContext?.seccompProfile?.type, 'RuntimeDefault');
    assert.equal(container?.securityContext?.readOnlyRootFilesystem, true);
    assert.equal(container?.securityContext?.allowPrivilegeEscalation, false);
    assert.deepEqual(container?.securityContext?.capabilities?.drop, ['ALL']);
    assert.ok(container?.resources?.requests?.cpu && container.resources.requests.memory && container.resources.limits?.memory);
    const port = (name: string) => container?.ports?.find((p) => p.name === name)?.containerPort;
    assert.equal(port('metrics'), 8080, 'the default of --metrics-bind-address');
    assert.equal(port('health'), 8081, 'the default of --health-probe-bind-address');
    assert.equal(container?.livenessProbe?.httpGet?.path, '/healthz');
    assert.equal(container?.readinessProbe?.httpGet?.path, '/readyz');

    // The image: its numeric USER is the pod's user, and its results directory is the volume's mount.
    const dockerfile = readFileSync(join(deployDir, '..', 'Dockerfile'), 'utf8');
    const user = /^USER (\d+):(\d+)$/m.exec(dockerfile);
    assert.ok(user, 'the Dockerfile\'s USER is numeric (runAsNonRoot can only verify a number)');
    assert.equal(pod?.securityContext?.runAsUser, Number(user[1]));
    assert.equal(pod?.securityContext?.runAsGroup, Number(user[2]));
    assert.match(dockerfile, /^VOLUME \/results$/m);
    const results = container?.volumeMounts?.find((mount) => mount.mountPath === '/results');
    const claim = pod?.volumes?.find((volume) => volume.name === results?.name)?.persistentVolumeClaim?.claimName;
    assert.ok(ofKind(manifests, 'PersistentVolumeClaim').some((pvc) => pvc.metadata.name === claim), 'results on the PVC');
    assert.ok(container?.volumeMounts?.some((mount) => mount.mountPath === '/tmp'), 'a writable /tmp beside the read-only root');

    // The args and environment, through the controller's own parser.
    const { args, env } = containerSettings(manifests);
    const config = loadConfig(args, env);
    assert.equal(config.leaderElect, true);
    assert.equal(config.resultsDir, '/results');
    assert.equal(config.leaseNamespace, 'runpod-operator');
    assert.equal(config.namespace, undefined);

    const selector = deployment.spec?.selector.matchLabels ?? {};
    for (const kind of ['Service', 'PodDisruptionBudget', 'NetworkPolicy']) {
      const [object] = ofKind(manifests, kind) as unknown as { spec: { selector?: Record<string, unknown>; podSelector?: { matchLabels?: Record<string, string> } } }[];
      const labels = object?.spec.podSelector?.matchLabels ?? (object?.spec.selector as { matchLabels?: Record<string, string> } | undefined)?.matchLabels ?? object?.spec.selector;
      assert.deepEqual(labels, selector, `${kind} selects the controller's pods`);
    }
  });

  test('the single-namespace overlay: a Role with the ClusterRole\'s rules, less kube-system; nothing cluster-wide', async () => {
    const base = await render(deployDir);
    const overlay = await render(overlayDir);
    assert.deepEqual(ofKind(overlay, 'ClusterRole'), []);
    assert.deepEqual(ofKind(overlay, 'ClusterRoleBinding'), []);
    const clusterRules = rulesOf(base, 'ClusterRole').filter((rule) => !rule.resources?.includes('namespaces'));
    const roleRules = rulesOf(overlay, 'Role').filter((rule) => !rule.resources?.includes('leases'));
    assert.deepEqual(roleRules, clusterRules);
    assert.ok(overlay.every((m) => m.kind === 'Namespace' || m.kind === 'CustomResourceDefinition' || m.metadata.namespace === 'runpod-jobs'));
    const { args, env } = containerSettings(overlay);
    const config = loadConfig(args, env);
    assert.equal(config.namespace, 'runpod-jobs');
    assert.equal(config.leaseNamespace, 'runpod-jobs');
    assert.equal(config.clusterId, 'my-cluster.runpod-jobs');
  });
});
