// What a reconcile reads of the run's namespace: its Runpod key, its own SSH Secret and the job's
// inputs. Independent reads, sent together: each is a round trip to an API server that every new run
// shares. Within one reconcile call each is read once (CallReads); each call reads afresh, so an edit
// of a Secret (the SSH Secret's pinned host key too) is seen at the next reconcile.
import type { RunpodRun } from '../../api/runpodrun.ts';
import type { RunpodRunSpec } from '../../api/spec.ts';
import type { RunApi, SshSecret } from '../ports/run-api.ts';
import type { CallReads } from './call-reads.ts';
import { resolveJobInputs, type JobInputsVerdict } from './job-inputs.ts';

/** The CallReads name of the SSH Secret read: the one read a preparing step changes (ensureSshKeys). */
export const sshSecretRead = 'ssh';

export interface NamespaceView {
  keyRead: Awaited<ReturnType<RunApi['runpodKey']>> | undefined;
  sshKeys: SshSecret | undefined;
  sshSecretConflict: string | undefined;
  /** undefined when the inputs were not read (a finished run, or a started job's already registered). */
  jobInputs: JobInputsVerdict | undefined;
}

export class NamespaceReads {
  readonly #runs: RunApi;
  /** This install's prefix of Runpod registry credential names. */
  readonly #registryPrefix: string;
  /** Runs whose job inputs this process has read (so registered their secrets), by UID. */
  readonly #jobInputsRead = new Set<string>();

  constructor(runs: RunApi, registryPrefix: string) {
    this.#runs = runs;
    this.#registryPrefix = registryPrefix;
  }

  /**
   * `finished`: the run uses no job secret again. A job started before this process did has its inputs
   * read once, only so that its secrets join the redaction set.
   */
  async read(run: RunpodRun, spec: RunpodRunSpec | undefined, finished: boolean, reads: CallReads): Promise<NamespaceView> {
    const { uid, namespace } = run.metadata;
    const jobStarted = Boolean(run.status?.job?.startedAt);
    const generation = run.metadata.generation ?? 1;
    const [keyRead, ssh, jobInputs] = await Promise.all([
      spec && reads.once(`key@${generation}`, () => this.#runs.runpodKey(namespace, spec.credentials.secretName, spec.credentials.key)),
      reads.once(sshSecretRead, () => this.#runs.readSshSecret(run)),
      spec && !finished && (!jobStarted || !this.#jobInputsRead.has(uid))
        ? reads.once(`inputs@${generation}`, () => resolveJobInputs(this.#runs, namespace, spec, this.#registryPrefix)) : undefined,
    ]);
    if (jobInputs) this.#jobInputsRead.add(uid);
    return { keyRead, sshKeys: ssh.keys, sshSecretConflict: ssh.foreign, jobInputs };
  }

  forget(uid: string): void {
    this.#jobInputsRead.delete(uid);
  }
}
