// The reconcile's one SSH connection: to a ready, live pod only, pinned to the run's host key.
import type { RunpodRun } from '../../api/runpodrun.ts';
import type { RunpodRunStatus } from '../../api/status.ts';
import { HostKeyMismatchError, type SshConnection } from '../../ssh/index.ts';
import type { ReconcilerMetrics } from '../act/context.ts';
import { connectToPod } from '../ports/job-host.ts';
import type { SshSecret } from '../ports/run-api.ts';

export interface ConnectOptions {
  /** The status says the pod is ready (PodReady) and the run not ended (decide's vocabulary, judged by the caller). */
  ready: boolean;
  signal?: AbortSignal | undefined;
  metrics?: ReconcilerMetrics | undefined;
  /** A pod that did not answer: said, not thrown (decide judges what the reconcile could not read). */
  onUnreachable: (error: unknown) => void;
}

/**
 * Undefined when the pod is not ready, not live, or does not answer. At `listed` (the endpoint the
 * account's list shows for it) when known, else the status's.
 */
export async function connectIfReady(run: RunpodRun, status: RunpodRunStatus, keys: SshSecret | undefined, listed: { host: string; port: number } | undefined, options: ConnectOptions): Promise<SshConnection | undefined> {
  const { signal, metrics, ready } = options;
  const pod = status.pod;
  const host = listed?.host ?? pod?.sshHost;
  const port = listed?.port ?? pod?.sshPort;
  if (!keys || !host || !port || !ready) return undefined;
  // EXITED / ERROR: no container runs to answer (decide deletes such a pod).
  if (['Deleting', 'Deleted', 'EXITED', 'ERROR'].includes(pod?.state ?? '') || run.metadata.deletionTimestamp) return undefined;
  try {
    const connection = await connectToPod({ host, port, keys }, signal);
    metrics?.sshConnection('ok');
    return connection;
  } catch (error) {
    signal?.throwIfAborted();
    metrics?.sshConnection(error instanceof HostKeyMismatchError ? 'host_key_mismatch' : 'failed');
    options.onUnreachable(error);
    return undefined;
  }
}
