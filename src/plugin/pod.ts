// The run's pod as a person at the terminal reaches it: only a ready, live pod, at the endpoint the
// status records, trusted only with the host key the run pinned (never trust-on-first-use).
import type { RunpodRun } from '../api/runpodrun.ts';
import { podPath, stateDirOf, type PodFile } from '../pod/index.ts';
import { connectPinned, SshError, type SshConnection } from '../ssh/index.ts';
import { getSshKeys, type RunSshKeys, type Target } from './cluster.ts';
import { PluginError } from './errors.ts';

export interface ReachablePod { id: string; name: string; host: string; port: number }

/** The run's pod when it can be reached over SSH now, else a sentence saying why not. */
export function reachablePod(run: RunpodRun): ReachablePod {
  const { name } = run.metadata;
  const status = run.status ?? {};
  const pod = status.pod;
  const said = status.message ? ` (${status.phase ?? 'no phase'}: ${status.message})` : '';
  if (!pod?.id) throw new PluginError(`run "${name}" has no pod${said}`);
  if (pod.state === 'Deleted' || pod.state === 'Deleting') throw new PluginError(`the pod of run "${name}" (${pod.name ?? pod.id}) is ${pod.state === 'Deleted' ? 'gone' : 'being deleted'}${said}`);
  const ready = status.conditions?.some((condition) => condition.type === 'PodReady' && condition.status === 'True');
  if (!ready || !pod.sshHost || !pod.sshPort) throw new PluginError(`the pod of run "${name}" (${pod.name ?? pod.id}) is not ready for SSH yet${said}`);
  return { id: pod.id, name: pod.name ?? pod.id, host: pod.sshHost, port: pod.sshPort };
}

/** The path of one of the pod's protocol files for this run (job.log, job.exit, ...). */
export const podFile = (run: RunpodRun, file: PodFile): string => podPath(stateDirOf(run.metadata.uid), file);

export async function connectToRunPod(target: Target, run: RunpodRun): Promise<{ connection: SshConnection; pod: ReachablePod; keys: RunSshKeys }> {
  const pod = reachablePod(run);
  const keys = await getSshKeys(target, run.metadata.name);
  try {
    const connection = await connectAgainWhileReset(() => connectPinned({
      host: pod.host, port: pod.port, username: 'root', privateKey: keys.clientPrivateKey, hostPublicKey: keys.hostPublicKey, readyTimeoutMs: 20_000,
    }));
    return { connection, pod, keys };
  } catch (error) {
    throw new PluginError(`cannot reach the pod of run "${run.metadata.name}" over SSH at ${pod.host}:${pod.port}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * A connection reset or refused before the session was up is tried again (1 s, then 2 s later): a busy
 * sshd drops new connections beyond its MaxStartups, and a proxy in between may blip. A timeout, a host
 * key or a refused client key is said at once.
 */
export async function connectAgainWhileReset<T>(connect: () => Promise<T>, delaysMs: readonly number[] = [1000, 2000]): Promise<T> {
  for (const delayMs of delaysMs) {
    try {
      return await connect();
    } catch (error) {
      if (!(error instanceof SshError && (error.kind === 'closed' || error.kind === 'refused'))) throw error;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
  return connect();
}
