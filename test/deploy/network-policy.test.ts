// The shipped NetworkPolicy and the documented result stores agree: the base lets the controller reach
// AWS S3 (and the Runpod API, the API server) on 443 but nothing private on another port, so an
// in-cluster store (examples/results-in-cluster-store.yaml, MinIO on 9000 in namespace `storage`) needs
// deploy/overlays/in-cluster-results-store, whose extra policy allows exactly that namespace and port.
// Rendered with the real `kubectl kustomize`, the overlay accepted by the real API server (dry run).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { kubectl } from '../support/kubectl.ts';
import { allowsEgress, type Destination, type Pod } from './egress.ts';
import { deployDir, render, theDeployment } from './render.ts';

const overlayDir = join(deployDir, 'overlays', 'in-cluster-results-store');
const examplesDir = join(deployDir, '..', 'examples');

const controllerPod = (manifests: Awaited<ReturnType<typeof render>>): Pod => {
  const deployment = theDeployment(manifests);
  return { namespace: deployment.metadata?.namespace ?? 'default', labels: deployment.spec?.template.metadata?.labels ?? {} };
};

/** A pod of `namespace` behind a Service (policies see the pod's address, a private one). */
const inCluster = (namespace: string, port: number): Destination => ({
  ip: '10.244.3.17', port, pod: { namespace, namespaceLabels: { 'kubernetes.io/metadata.name': namespace }, labels: { app: 'minio' } },
});
const awsS3: Destination = { ip: '3.5.136.10', port: 443 };

/** Every RunpodRun of examples/ with results.s3, with its endpoint's host and port (AWS S3: none, 443). */
function exampleStores(): { file: string; text: string; endpoint?: URL }[] {
  return readdirSync(examplesDir).filter((file) => file.endsWith('.yaml')).flatMap((file) => {
    const text = readFileSync(join(examplesDir, file), 'utf8');
    return parseAllDocuments(text).map((doc) => doc.toJS() as { kind?: string; spec?: { results?: { s3?: { endpoint?: string } } } })
      .filter((doc) => doc.kind === 'RunpodRun' && doc.spec?.results?.s3)
      .map((doc) => {
        const endpoint = doc.spec?.results?.s3?.endpoint;
        return endpoint ? { file, text, endpoint: new URL(endpoint) } : { file, text };
      });
  });
}

/** `<service>.<namespace>.svc[.cluster.local]`: the namespace; undefined for a host outside the cluster. */
const clusterNamespace = (host: string): string | undefined => /^[a-z0-9-]+\.([a-z0-9-]+)\.svc(\.cluster\.local)?$/.exec(host)?.[1];
const portOf = (url: URL): number => Number(url.port || (url.protocol === 'https:' ? 443 : 80));

describe('the NetworkPolicy and the result stores', () => {
  test('the base: AWS S3 on 443 yes, a store inside the cluster on 9000 no (that needs the overlay)', async () => {
    const base = await render(deployDir);
    const pod = controllerPod(base);
    assert.equal(allowsEgress(base, pod, awsS3), true);
    assert.equal(allowsEgress(base, pod, inCluster('storage', 9000)), false);
  });

  test('deploy/overlays/in-cluster-results-store: the store\'s namespace on its port, and nothing else besides the base', async () => {
    const overlay = await render(overlayDir);
    const pod = controllerPod(overlay);
    assert.equal(allowsEgress(overlay, pod, inCluster('storage', 9000)), true);
    assert.equal(allowsEgress(overlay, pod, awsS3), true, 'the base\'s rules still hold');
    assert.equal(allowsEgress(overlay, pod, inCluster('kube-system', 9000)), false, 'another namespace on that port');
    assert.equal(allowsEgress(overlay, pod, inCluster('storage', 22)), false, 'another port of that namespace');
  });

  test('every example store is reachable under the policy its comments name', async () => {
    const [base, overlay] = await Promise.all([render(deployDir), render(overlayDir)]);
    const stores = exampleStores();
    assert.ok(stores.some((store) => store.endpoint && clusterNamespace(store.endpoint.hostname)), 'an example uses a store inside the cluster');
    for (const store of stores) {
      if (!store.endpoint) {
        assert.equal(allowsEgress(base, controllerPod(base), awsS3), true, `${store.file}: AWS S3 under the base`);
        continue;
      }
      const namespace = clusterNamespace(store.endpoint.hostname);
      if (!namespace) {
        assert.equal(allowsEgress(base, controllerPod(base), { ip: '3.5.136.10', port: portOf(store.endpoint) }), true, `${store.file}: ${store.endpoint.host} under the base`);
        continue;
      }
      assert.match(store.text, /deploy\/overlays\/in-cluster-results-store/, `${store.file} names the overlay its store needs`);
      assert.equal(allowsEgress(overlay, controllerPod(overlay), inCluster(namespace, portOf(store.endpoint))), true, `${store.file}: ${store.endpoint.host} under the overlay`);
    }
  });

  test('kubectl apply -k deploy/overlays/in-cluster-results-store --dry-run=server passes', async () => {
    const created = await kubectl(['create', 'namespace', 'runpod-operator']);
    assert.ok(created.status === 0 || /AlreadyExists/.test(created.stderr), created.stderr);
    const result = await kubectl(['apply', '-k', overlayDir, '--dry-run=server']);
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /^networkpolicy\.networking\.k8s\.io\/runpod-operator-results-store (created|configured|unchanged) \(server dry run\)$/m);
  });
});
