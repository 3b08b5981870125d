// The SSH side of act(), behind one small interface: probe the pod's sshd, and over the reconcile's
// one connection read the pod's state, set keepPod, start the job, cancel it, extend the retrieve grace. The implementation
// over job-steps.ts binds the connection and the run's directories on the pod; act's table tests
// run on a fake (test/run/act/act.unit.test.ts). Retrieval is not here: it is retrieve.ts's (the transfer pool).
import type { RunpodRunSpec } from '../../api/spec.ts';
import type { PodState } from '../../pod/index.ts';
import { connectPinned, type SshConnection } from '../../ssh/index.ts';
import type { JobInputs } from '../observe/job-inputs.ts';
import { cancelJob, readPodState, renewRetrieveGrace, setKeep, startJob, type PodDirs } from './job-steps.ts';
import type { SshSecret } from './run-api.ts';

export interface ProbeTarget { host: string; port: number; keys: SshSecret }

export interface JobHost {
  /** Whether this reconcile holds a connection to the pod (the steps below need one). */
  readonly connected: boolean;
  /** No step over the connection failed: it may be kept for the next reconcile (a failed one is made afresh). */
  readonly sound: boolean;
  /** One pinned handshake, closed at once; throws as connectPinned does (HostKeyMismatchError, not ready yet, ...). */
  probe(target: ProbeTarget, signal?: AbortSignal): Promise<void>;
  /** Its times on the controller's clock (the measured offset applied). */
  readState(signal?: AbortSignal): Promise<PodState>;
  setKeep(keep: boolean): Promise<void>;
  startJob(spec: RunpodRunSpec, inputs: JobInputs): Promise<void>;
  cancelJob(): Promise<void>;
  /** While a transfer waits or moves: the pod's retrieve grace lasts `seconds` from now at least. */
  renewRetrieveGrace(seconds: number): Promise<void>;
}

/** One pinned connection to the pod as root with the run's client key (every SSH of a run goes this way). */
export function connectToPod({ host, port, keys }: ProbeTarget, signal?: AbortSignal): Promise<SshConnection> {
  return connectPinned({
    host, port, username: 'root', privateKey: keys.clientPrivateKey, hostPublicKey: keys.hostPublicKey, readyTimeoutMs: 15_000,
    ...(signal ? { signal } : {}),
  });
}

/** The message of every step tried without a connection. */
export const noConnectionMessage = 'no SSH connection to the pod this time';

/**
 * The job host of one run's pod, over the reconcile's connection (when it has one) and job-steps.ts;
 * `wallNow` (ms) is the clock the pod's times are moved onto.
 */
export function sshJobHost(ssh: SshConnection | undefined, dirs: PodDirs, wallNow: () => number = Date.now): JobHost {
  let sound = true;
  const over = async <T>(step: (connection: SshConnection) => Promise<T>): Promise<T> => {
    if (!ssh) throw new Error(noConnectionMessage);
    try {
      return await step(ssh);
    } catch (error) {
      sound = false;
      throw error;
    }
  };
  return {
    connected: ssh !== undefined,
    get sound() {
      return sound;
    },
    async probe(target, signal) {
      (await connectToPod(target, signal)).close();
    },
    readState: (signal) => over((c) => readPodState(c, dirs.stateDir, signal, wallNow)),
    setKeep: (keep) => over((c) => setKeep(c, dirs.stateDir, keep)),
    startJob: (spec, inputs) => over((c) => startJob(c, dirs, spec, inputs)),
    cancelJob: () => over((c) => cancelJob(c, dirs.stateDir)),
    renewRetrieveGrace: (seconds) => over((c) => renewRetrieveGrace(c, dirs.stateDir, seconds)),
  };
}
