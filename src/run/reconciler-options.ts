// What a RunReconciler is built with, and what the controller runtime hands each of its reconciles.
import type { KubeConfig } from '@kubernetes/client-node';
import type { RunpodRun } from '../api/runpodrun.ts';
import type { Logger } from '../log.ts';
import type { AllowedBucket, S3Defaults } from '../results/s3-settings.ts';
import type { ReconcilerMetrics } from './act/act.ts';
import type { RetrievalPool } from './act/context.ts';
import type { DecideSettings, RunEvent } from './decide/model.ts';
import type { Accounts } from './memory/accounts.ts';
import type { PodConnections } from './ports/pod-connections.ts';

export interface EventSink { record(run: RunpodRun, event: RunEvent): void }

export interface RunReconcilerOptions {
  kubeConfig: KubeConfig;
  accounts: Accounts;
  clusterId: string;
  /** The install's scope marker (ownership.ts). */
  scope: string;
  runpodApiUrl: string;
  resultsDir: string;
  /** The controller's default bucket (--results-store s3://…); absent: results go to resultsDir unless a run names spec.results.s3. */
  s3Defaults?: S3Defaults | undefined;
  /** Where a run naming no S3 credentials may have the controller's own identity write (--results-s3-allowed-buckets); default none. */
  s3AllowedBuckets?: readonly AllowedBucket[] | undefined;
  watchdogPeriodMs: number;
  settings: DecideSettings;
  events: EventSink;
  logger: Logger;
  /** The wall clock of observations and of what act records (tests pin it); default new Date(). */
  now?: () => Date;
  metrics?: ReconcilerMetrics;
}

/** What the controller runtime hands each reconcile (all optional: tests and benches call reconcile(key)). */
export interface ReconcileCall {
  /** Aborted when this replica must stop acting: no further Runpod call, SSH step or status write. */
  signal?: AbortSignal;
  progress?: () => void;
  log?: Logger;
  /** Where retrievals run off the workers (the controller's pool); without it they run inside the reconcile. */
  transfers?: RetrievalPool;
  /** Where a ready pod's SSH connection is kept between reconciles (the controller's); without it each reconcile connects. */
  connections?: PodConnections;
  /** One decide and act only, even after a step that only prepares the next (a test stepping a run through them). */
  oneStep?: boolean;
}
