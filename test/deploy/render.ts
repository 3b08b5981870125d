// deploy/ as kustomize renders it (the real `kubectl kustomize`), optionally moved to a test's own
// namespace and name prefix (an overlay in a temporary directory), and what a kubelet would make of
// the controller container's args and environment.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import type { KubeConfig} from '@kubernetes/client-node';
import { type V1ConfigMap, type V1Deployment, type V1EnvVar } from '@kubernetes/client-node';
import { PooledKubeConfig } from '../../src/kube/kubeconfig.ts';
import { parseAllDocuments } from 'yaml';
import { runKubectl } from '../support/kubectl.ts';

export const deployDir = resolve(import.meta.dirname, '..', '..', 'deploy');

export interface Manifest { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; [field: string]: unknown }

/** `kubectl kustomize` of a deploy/ directory, in `namespace` with `namePrefix` when given. */
export async function render(dir: string, moved?: { namespace: string; namePrefix: string }): Promise<Manifest[]> {
  let target = dir;
  let scratch: string | undefined;
  if (moved) {
    // kustomize takes a base only by a relative path.
    scratch = mkdtempSync(join(tmpdir(), 'kustomize-'));
    writeFileSync(join(scratch, 'kustomization.yaml'), JSON.stringify({
      resources: [relative(scratch, dir)], namespace: moved.namespace, namePrefix: moved.namePrefix,
    }));
    target = scratch;
  }
  try {
    const result = await runKubectl(['kustomize', target]);
    if (result.status !== 0) throw new Error(`kubectl kustomize ${dir}: ${result.stderr}`);
    return parseAllDocuments(result.stdout).map((doc) => doc.toJS() as Manifest);
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

export const ofKind = (manifests: Manifest[], kind: string): Manifest[] => manifests.filter((m) => m.kind === kind);

export function theDeployment(manifests: Manifest[]): V1Deployment {
  const [deployment, ...more] = ofKind(manifests, 'Deployment');
  if (!deployment || more.length > 0) throw new Error('expected exactly one Deployment');
  return deployment;
}

/**
 * The controller container's args and environment as the kubelet would give them: fieldRef
 * metadata.namespace, configMapKeyRef from the rendered ConfigMaps, and $(VAR) expansion.
 */
export function containerSettings(manifests: Manifest[]): { args: string[]; env: Record<string, string> } {
  const deployment = theDeployment(manifests);
  const container = deployment.spec?.template.spec?.containers[0];
  if (!container) throw new Error('the Deployment has no container');
  const namespace = deployment.metadata?.namespace ?? 'default';
  const configMaps = ofKind(manifests, 'ConfigMap') as unknown as V1ConfigMap[];
  const env: Record<string, string> = {};
  const expand = (text: string) => text.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => env[name] ?? whole);
  const valueOf = (variable: V1EnvVar): string => {
    if (variable.value !== undefined) return expand(variable.value);
    const from = variable.valueFrom;
    if (from?.fieldRef?.fieldPath === 'metadata.namespace') return namespace;
    if (from?.configMapKeyRef) {
      const ref = from.configMapKeyRef;
      const value = configMaps.find((map) => map.metadata?.name === ref.name)?.data?.[ref.key];
      if (value === undefined) throw new Error(`env ${variable.name}: no ConfigMap key ${ref.name}/${ref.key} in the manifests`);
      return value;
    }
    throw new Error(`env ${variable.name}: a source this helper does not resolve`);
  };
  for (const variable of container.env ?? []) env[variable.name] = valueOf(variable);
  return { args: (container.args ?? []).map(expand), env };
}

/** A kubeconfig file for the same API server as `admin`, authenticated by a bearer token only. */
export function tokenKubeconfig(admin: KubeConfig, token: string, file: string): string {
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error('the admin kubeconfig has no cluster');
  const kubeConfig = new PooledKubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'test', server: cluster.server, caData: cluster.caData, skipTLSVerify: false }],
    users: [{ name: 'service-account', token }],
    contexts: [{ name: 'test', cluster: 'test', user: 'service-account' }],
    currentContext: 'test',
  });
  writeFileSync(file, kubeConfig.exportConfig(), { mode: 0o600 });
  return file;
}
