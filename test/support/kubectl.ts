// The real kubectl, as users run it, against the test API server.
import { spawnSync } from 'node:child_process';
import { testCluster } from './cluster.ts';

export interface KubectlResult { status: number; stdout: string; stderr: string }

export async function kubectl(args: string[], input?: string): Promise<KubectlResult> {
  const { kubeconfigPath } = await testCluster();
  const result = spawnSync('kubectl', ['--kubeconfig', kubeconfigPath, ...args], { input, encoding: 'utf8', timeout: 60_000 });
  if (result.error) throw result.error;
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}
