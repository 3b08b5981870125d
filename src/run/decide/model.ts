// What a reconcile sees (Observation) and what it decides (Decision). decide() maps one to the
// other without I/O; observe() builds the first, act() carries out the second.
import type { SpecVerdict } from '../../api/runpodrun.ts';
import type { PodState } from '../../pod/state.ts';
import type { Reason, RunpodRunStatus } from '../../api/status.ts';
import type { Timings } from './timings.ts';

/** One Runpod pod of this run, as the account's shared pod list last showed it. */
export interface PodView {
  id: string;
  name: string;
  status: string;
  gpuType?: string;
  gpuCount?: number;
  dataCenterId?: string;
  costPerHour?: number;
  createdAt?: string;
  /** ssh.direct, present once port 22 is mapped. */
  ssh?: { host: string; port: number };
}

/** A GPU type the run may try, in the order it is tried; inStock false: the catalog said it has none now. */
export interface GpuCandidate { gpuType: string; pricePerHour?: number; inStock?: boolean }

export interface Observation {
  now: Date;
  run: {
    name: string;
    namespace: string;
    uid: string;
    generation: number;
    deleting: boolean;
    hasFinalizer: boolean;
    skipCleanup: boolean;
  };
  spec: SpecVerdict;
  status: RunpodRunStatus;
  /**
   * found: the Secret has the key; rejected: Runpod answered 401 to it; insufficient: Runpod refused
   * the pod list with a 403 about the key (a scope it lacks), naming what was refused; refused: how
   * many lists in a row were refused since when, and whether that confirms the refusal. Not found:
   * the Secret or its key is missing, or (invalid) holds something that is no API key.
   */
  credentials: { found: true; rejected?: boolean; insufficient?: string; refused?: RefusedLists } | { found: false; invalid?: boolean; message: string };
  sshKeysReady: boolean;
  /** Set when `<run>-ssh` exists but is not owned by this run (a user's own Secret): never overwritten or adopted. */
  sshSecretConflict?: string;
  /** The account's pod list, filtered to this run's marker; undefined until the first list arrived. */
  pods?: { listedAt: Date; items: PodView[] };
  /** For gpu.auto: the candidates from one catalog read; undefined until read. */
  catalog?: GpuCandidate[];
  /** What this process did to delete pods, and the 404s it saw since (evidence they are gone). */
  deletions: Record<string, Deletion>;
  /** What the job needs from the namespace (env and file references): checked before any pod is rented. */
  /** registry: the name of the Runpod registry credential spec.imagePullSecret makes, if any. */
  jobInputs: { ok: true; registry?: string | undefined } | { ok: false; message: string; invalid?: boolean | undefined };
  /** The pod's state read over SSH this reconcile (ready pods only); undefined when not read or unreachable. */
  podState?: PodState;
  /** What is known about the account's spend limit, once a create of this run was refused by it. */
  spend?: SpendFacts;
  /** Failed retrieval tries of this run in this process. */
  retrievalFailures: number;
  /** When the last of them failed (the next waits its backoff from then); absent: none, or not known. */
  lastRetrievalFailureAt?: Date;
  /**
   * Verified results this run's store already holds although the status records none: a controller
   * that committed them (and marked them retrieved on the pod) died before its status write. Read only
   * while the status lacks results after the job ended.
   */
  storedResults?: StoredResults;
  /** This run's retrieval in the transfer pool (transfers.ts) while it waits for a slot or moves. */
  transfer?: { state: 'queued'; ahead: number } | { state: 'running' };
  /**
   * A retrieval that ended in the transfer pool and is not in the status yet: decide applies it in the
   * same pass (Decision.appliedRetrieval), and the pool lets it go once that status is written.
   */
  retrieval?: RetrievalOutcome;
  settings: DecideSettings;
}

/**
 * The account's pod lists Runpod refused (401/403) in a row, none accepted between: confirmed once they
 * are several over at least a minute (a fresh observer's first 401 after a restart is evidence only).
 */
export interface RefusedLists { lists: number; since: Date; confirmed: boolean }

/** granted: the create may go (the claim stands, memory/spend-room.ts); otherwise why it waits. */
export type SpendClaim = 'granted' | 'refused-lately' | 'claimed' | 'no-room';

/** USD per hour: the account's limit, what its running pods cost, what the refused pod would cost. */
export interface SpendFacts { limitUsdPerHour?: number; runningUsdPerHour?: number; podUsdPerHour?: number }

/** `path`: which path carried the bytes into object storage (absent for the controller's disk). */
export interface StoredResults { files: number; bytes: number; location: string; verifiedAt: Date; path?: 'direct' | 'controller' }

/** What a retrieval try found: the results verified (as stored), or why not. */
export type RetrievalOutcome =
  | ({ kind: 'verified' } & StoredResults)
  | { kind: 'unverified'; message: string }
  | { kind: 'tooLarge'; message: string };

/**
 * sentAt: when this process sent the pod's delete; notFoundLooks: GETs (or the delete) in a row that
 * answered 404 (since the delete, or since a list last showed the pod); lookedAt: when the last GET was
 * sent; foundAt: when a GET last found the pod alive (decide resends a delete that did not take by it);
 * listLooks: complete lists begun after the delete that did not show the pod, the last begun at listLookAt.
 */
export interface Deletion { sentAt?: Date; notFoundLooks: number; lookedAt?: Date; foundAt?: Date; listLooks?: number; listLookAt?: Date }

export interface DecideSettings {
  /** How long after an ambiguous create a pod list must be before absence counts. */
  ambiguousLookupMs: number;
  /** The controller's own guard: a pod still alive this long past its deadline is deleted by us. */
  deadlineMarginMs: number;
  /** Looks needed before a pod is taken as gone: GETs answering 404, or lists begun after its delete without it. */
  goneLooks: number;
  pollIntervalMs: number;
  /** Every other wait and bound (timings.ts): the defaults in production, compressed in a test's world. */
  timings: Timings;
}

export type Action =
  | { type: 'none' }
  | { type: 'addFinalizer' }
  | { type: 'removeFinalizer' }
  | { type: 'ensureSshKeys' }
  | { type: 'readCatalog' }
  | { type: 'createPod'; attemptName: string; gpuType: string; attemptNumber: number }
  | { type: 'probeSsh'; podId: string; host: string; port: number }
  | { type: 'deletePod'; podId: string }
  | { type: 'startPod'; podId: string }
  | { type: 'lookForGonePod'; podId: string }
  | { type: 'setKeep'; keep: boolean }
  | { type: 'startJob'; try: number }
  | { type: 'readNetworkVolume'; volumeId: string }
  | { type: 'readSystemLog'; podId: string }
  | { type: 'ensureRegistry'; name: string }
  | { type: 'cancelJob' }
  | { type: 'retrieveResults' }
  /** While a transfer waits or moves: the pod's retrieve grace is extended to this many seconds from now (retrieve.until). */
  | { type: 'renewRetrieveGrace'; seconds: number };

export interface RunEvent { type: 'Normal' | 'Warning'; reason: Reason; note: string }

export interface Decision {
  /** The status to write before the action runs (intent before side effect). */
  status: RunpodRunStatus;
  action: Action;
  /** When to look again; 'backoff' = through the queue's per-key rate limiter, at most timings.unwatchedRecheckMaxMs apart. */
  requeue: { afterMs: number } | 'backoff' | 'none';
  events: RunEvent[];
  /** obs.retrieval, when this status records it: once the status is written it is remembered and let go. */
  appliedRetrieval?: RetrievalOutcome;
}
