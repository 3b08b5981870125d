// What a step of act() answered, for learn(): the one vocabulary act and decide share. act returns an
// Outcome and imports nothing of decide's logic; the reconciler hands it to learn() once.
import type { PodView, RetrievalOutcome, SpendClaim, SpendFacts } from './model.ts';

export type Outcome =
  | { step: 'createPod'; attemptName: string; result: CreateOutcome }
  | { step: 'probeSsh'; result: ProbeOutcome }
  | { step: 'retrieveResults'; result: RetrievalOutcome }
  | { step: 'readNetworkVolume'; result: VolumeOutcome }
  | { step: 'readSystemLog'; result: SystemLogOutcome }
  /** The Runpod registry credential a private image is pulled with, found by its name or created. */
  | { step: 'ensureRegistry'; result: { id: string; name: string } };

/** Runpod's system lines of a pod (oldest first); none when the read failed (it is best effort). */
export interface SystemLogOutcome { podId: string; lines: readonly string[] }

/** spec.networkVolume as Runpod knows it: its data center and, when the catalog said, the GPU types offered there. */
export type VolumeOutcome = { kind: 'found'; dataCenterId: string; gpuTypes?: readonly string[] | undefined } | { kind: 'missing' };

export type CreateOutcome =
  | { kind: 'created'; pod: PodView }
  | { kind: 'capacity'; message: string }
  /** lostAt: when the call ended without a usable answer (after the POST, not before it). */
  | { kind: 'ambiguous'; message: string; lostAt: Date }
  | { kind: 'failed'; reason: 'InsufficientBalance' | 'InvalidSpec' | 'CredentialsRejected' | 'CredentialsInsufficient'; message: string }
  /** A 429: nothing was created; sent again after Retry-After. */
  | { kind: 'rate-limited'; message: string; retryAfterMs?: number | undefined }
  /** The account spend limit: nothing was created; the run waits for room (figures as far as known). */
  | { kind: 'spend-limit'; message: string; spend?: SpendFacts | undefined }
  | HeldBack;

/** Not sent under the spend limit: the room the list shows is claimed by another run, or was refused lately (figures as judged). */
export interface HeldBack { kind: 'held-back'; why: Exclude<SpendClaim, 'granted'>; spend: SpendFacts }

/** A probe that is not answered yet has no outcome: nothing to record. */
export type ProbeOutcome = { kind: 'ready' } | { kind: 'untrusted'; message: string };

/** Observed too, as a transfer that settled in the pool (model.ts, obs.retrieval). */
export type { RetrievalOutcome } from './model.ts';
