// What one step of act() works with: the run as the reconcile wrote it, the observation, and the ports
// its side effects go through (Runpod, SSH, the API server), plus this process's memory it adds to.
import type { RunpodRun } from '../../api/runpodrun.ts';
import type { RunpodRunSpec } from '../../api/spec.ts';
import type { CreatePodRequest } from '../../runpod/index.ts';
import type { S3StoreSettings } from '../../results/s3-settings.ts';
import type { SshConnection } from '../../ssh/index.ts';
import type { Observation } from '../decide/model.ts';
import type { RetrievalOutcome } from '../decide/outcome.ts';
import type { RunEvidence } from '../memory/evidence.ts';
import type { SpendRoom } from '../memory/spend-room.ts';
import type { JobHost } from '../ports/job-host.ts';
import type { JobInputs } from '../observe/job-inputs.ts';
import type { PodBackend } from '../ports/pod-backend.ts';
import type { RunApi, SshSecret } from '../ports/run-api.ts';
import type { TransferPool } from './transfers.ts';

export type RetrievalPool = TransferPool<RetrievalOutcome>;

/**
 * What a preparing step wrote that the next pass of the same reconcile call would otherwise read back
 * (reconciler.ts): the run as the finalizer's write returned it, the SSH keys the Secret now holds.
 */
export interface Written { run?: RunpodRun; sshKeys?: SshSecret }

export interface ActContext {
  run: RunpodRun;
  /** Filled by the step that wrote it; absent, nothing is handed on. */
  written?: Written;
  obs: Observation;
  spec?: RunpodRunSpec;
  /** The Runpod side, for the run's account; absent when its credentials are missing. */
  pods?: PodBackend | undefined;
  sshKeys?: SshSecret;
  /** The SSH side: the probe, and the job's steps over the reconcile's connection when it has one. */
  jobHost: JobHost;
  /** The reconcile's one SSH connection to a ready pod (opened by observe to read the pod's state); retrieval uses it. */
  ssh?: SshConnection;
  jobInputs?: JobInputs;
  /** Where this run's verified results go: a directory of the controller's disk, or the s3:// URI of its prefix. */
  resultLocation: string;
  /** Set when the run's results go to object storage (spec.results.s3, or the controller's s3 --results-store). */
  s3?: S3StoreSettings | undefined;
  runs: RunApi;
  /** What this process learned that decide() reads back through the observation. */
  evidence: RunEvidence;
  buildCreateRequest: (attemptName: string, attemptNumber: number, gpuType: string) => CreatePodRequest;
  /** The data centers the run's pods may be placed in (its network volume's, else spec.dataCenterIds). */
  placement?: string[] | undefined;
  /** Wall-clock time for what the step records (lost answers, deletes sent, looks): compared with pod lists' listedAt. */
  now: () => Date;
  refreshPods: () => void;
  /** Aborted when this replica must stop acting (shutdown, lost leadership): no new Runpod call starts. */
  signal?: AbortSignal | undefined;
  /** A long step reports that it moves (see ReconcileContext.progress). */
  progress?: (() => void) | undefined;
  metrics?: ReconcilerMetrics | undefined;
  /** Where retrievals run, off the workers (retrieve.ts); without it they run inline. */
  transfers?: RetrievalPool | undefined;
  /** The room under the account's spend limit, shared by its runs (spend-room.ts); without it every resend goes out. */
  spendRoom?: SpendRoom | undefined;
}

/** What the reconciler reports (src/metrics implements it). */
export interface ReconcilerMetrics {
  sshConnection(outcome: 'ok' | 'host_key_mismatch' | 'failed'): void;
  resultsRetrieved(files: number, bytes: number): void;
}
