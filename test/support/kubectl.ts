// The real kubectl, as users run it, against the test API server. Asynchronous on purpose: the
// controller under test runs in this process, and a blocking kubectl (say `delete`, which waits for
// the controller to remove its finalizer) would freeze it.
import { spawn } from 'node:child_process';
import { testCluster } from './cluster.ts';

export interface KubectlResult { status: number; stdout: string; stderr: string }

export async function kubectl(args: string[], input?: string): Promise<KubectlResult> {
  const { kubeconfigPath } = await testCluster();
  return runKubectl(['--kubeconfig', kubeconfigPath, ...args], input);
}

export function runKubectl(args: string[], input?: string, timeoutMs = 90_000): Promise<KubectlResult> {
  return new Promise((done, fail) => {
    const child = spawn('kubectl', args, { stdio: ['pipe', 'pipe', 'pipe'], timeout: timeoutMs });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
    child.once('error', fail);
    child.once('close', (code) => done({ status: code ?? -1, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}
