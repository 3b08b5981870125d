// The reconcile's one SSH connection: to a ready, live pod only, pinned to the run's host key; the
// one an earlier reconcile kept (ports/pod-connections.ts) when the pod and its endpoint are the same.
import type { RunpodRun } from '../../api/runpodrun.ts';
import type { RunpodRunStatus } from '../../api/status.ts';
import { HostKeyMismatchError, type SshConnection } from '../../ssh/index.ts';
import type { ReconcilerMetrics } from '../act/context.ts';
import { connectToPod } from '../ports/job-host.ts';
import type { PodConnections, PodTarget } from '../ports/pod-connections.ts';
import type { SshSecret } from '../ports/run-api.ts';

export interface ConnectOptions {
  /** The status says the pod is ready (PodReady) and the run not ended (decide's vocabulary, judged by the caller). */
  ready: boolean;
  signal?: AbortSignal | undefined;
  /** Where connections are kept between reconciles (the controller's, one per term); without it each reconcile connects. */
  connections?: PodConnections | undefined;
  metrics?: ReconcilerMetrics | undefined;
  /** A pod that did not answer: said, not thrown (decide judges what the reconcile could not read). */
  onUnreachable: (error: unknown) => void;
}

export interface PodConnection { connection: SshConnection; target: PodTarget }

/**
 * Undefined when the pod is not ready, not live, or does not answer (then a kept connection goes). At
 * `listed` (the endpoint the account's list shows for it) when known, else the status's.
 */
export async function connectIfReady(run: RunpodRun, status: RunpodRunStatus, keys: SshSecret | undefined, listed: { host: string; port: number } | undefined, options: ConnectOptions): Promise<PodConnection | undefined> {
  const { signal, metrics, ready, connections } = options;
  const pod = status.pod;
  const host = listed?.host ?? pod?.sshHost;
  const port = listed?.port ?? pod?.sshPort;
  // EXITED / ERROR: no container runs to answer (decide deletes such a pod).
  const live = ready && !['Deleting', 'Deleted', 'EXITED', 'ERROR'].includes(pod?.state ?? '') && !run.metadata.deletionTimestamp;
  if (!keys || !pod?.id || !host || !port || !live) {
    connections?.release(run.metadata.uid);
    return undefined;
  }
  const target: PodTarget = { podId: pod.id, host, port, keys };
  try {
    const taken = connections ? await connections.take(run.metadata.uid, target, signal) : { connection: await connectToPod(target, signal), reused: false };
    if (!taken.reused) metrics?.sshConnection('ok');
    return { connection: taken.connection, target };
  } catch (error) {
    signal?.throwIfAborted();
    metrics?.sshConnection(error instanceof HostKeyMismatchError ? 'host_key_mismatch' : 'failed');
    options.onUnreachable(error);
    return undefined;
  }
}
