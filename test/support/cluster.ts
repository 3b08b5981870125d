// The API server every test shares: `npm test` starts one in its global setup and hands its
// kubeconfig over in RUNPOD_OPERATOR_TEST_KUBECONFIG; a test file run on its own starts a private one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { CoreV1Api } from '@kubernetes/client-node';
import { PooledKubeConfig } from '../../src/kube/kubeconfig.ts';
import { startControlPlane } from '../envtest/harness.ts';

export interface TestCluster { kubeConfig: KubeConfig; kubeconfigPath: string }

export const testKubeconfigEnv = 'RUNPOD_OPERATOR_TEST_KUBECONFIG';
let cluster: Promise<TestCluster> | undefined;

export function testCluster(): Promise<TestCluster> {
  cluster ??= connect();
  return cluster;
}

async function connect(): Promise<TestCluster> {
  const shared = process.env[testKubeconfigEnv];
  if (shared) {
    const kubeConfig = new PooledKubeConfig();
    kubeConfig.loadFromFile(shared);
    return { kubeConfig, kubeconfigPath: shared };
  }
  const dir = mkdtempSync(join(tmpdir(), 'envtest-'));
  const plane = await startControlPlane({ dir });
  // Synchronous on purpose: 'exit' handlers cannot wait, and a test process must not leave servers behind.
  process.once('exit', () => {
    plane.pids.forEach((pid) => { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } });
    rmSync(dir, { recursive: true, force: true });
  });
  return { kubeConfig: plane.kubeConfig, kubeconfigPath: plane.kubeconfigPath };
}

let namespaces = 0;

/** A fresh namespace per test (no controller-manager runs, so nothing ever deletes it: names never repeat). */
export async function createTestNamespace(prefix: string): Promise<string> {
  const { kubeConfig } = await testCluster();
  const name = `${prefix}-${process.pid}-${++namespaces}-${Date.now().toString(36)}`.toLowerCase().slice(0, 63).replace(/-+$/, '');
  await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}
