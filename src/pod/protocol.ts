// The on-pod file protocol shared by bootstrap.sh, watchdog.sh, the job commands (job.ts) and the
// controller, which reads and writes these files over SSH. protocol.md says what each one means and
// who writes it; the scripts spell the same names (test/pod/protocol.test.ts keeps them in step).
import { posix } from 'node:path';

/** Where the run lives on the pod unless the create env says otherwise (RUNPOD_OPERATOR_RUN_DIR). */
export const DEFAULT_RUN_DIR = '/workspace/runpod-operator/run';

/** The parent of every run's own directory. */
export const RUNS_DIR = '/workspace/runpod-operator';

/**
 * The run's own directory on the pod, named by the run's UID: a network volume at /workspace is
 * shared by runs (concurrent or later ones), and each must find only its own inputs and results there.
 * It holds only the job's working files and results; the pod's state is in stateDirOf().
 */
export function runDirOf(runUid: string): string {
  return `${RUNS_DIR}/${checkedUid(runUid)}`;
}

/**
 * The pod's claim on its run directory, beside it on the volume (out of reach of the job's paths,
 * which are relative to the run directory and never contain ".."): "<pod id> <unix time>". A later
 * pod of the run takes it over; of two pods taking it at the same moment only one wins.
 */
export function claimOf(runDir: string): string {
  return `${runDir.replace(/\/+$/, '')}.claim`;
}

/** Where the pod's state lives unless the create env says otherwise (RUNPOD_OPERATOR_STATE_DIR). */
export const DEFAULT_STATE_DIR = '/var/lib/runpod-operator/run';

/** The parent of the pod's state directory: on the container's own disk, never on /workspace. */
export const STATES_DIR = '/var/lib/runpod-operator';

/**
 * The pod's own state (verdicts, the job's pid and exit code, the markers, the watchdog's inputs, the
 * logs): on the container's disk, which no other pod mounts and which goes with the pod, so a later
 * pod of the same run on a shared network volume never reads it, and it never reads theirs.
 */
export function stateDirOf(runUid: string): string {
  return `${STATES_DIR}/${checkedUid(runUid)}`;
}

function checkedUid(runUid: string): string {
  if (!/^[A-Za-z0-9._:-]{1,128}$/.test(runUid) || runUid === '.' || runUid === '..') throw new Error(`not a run UID: ${runUid}`);
  return runUid;
}

/** Every protocol file, relative to the pod's state directory. */
export const POD_FILES = {
  /** "<pod id> <unix time of its first bootstrap>": whose state this is (the same line as its claim). Written by the bootstrap. */
  owner: 'pod',
  /** Bootstrap verdict: "ok" or "failed: <reason>". Absent while the bootstrap runs. */
  bootstrapVerdict: 'bootstrap',
  bootstrapLog: 'bootstrap.log',
  /** Watchdog verdict: "ok" (its key can read its own pod) or "failed: <reason>". Absent while it probes. */
  watchdogVerdict: 'watchdog',
  watchdogLog: 'watchdog.log',
  /** The image's environment (PID 1's, less the secrets) as `export` lines, sourced before the job's. */
  imageEnv: 'image.env',
  /** The job's environment as `export` lines (0600), written by the controller before the start. */
  jobEnv: 'job.env',
  /** Unix time of the start; created exclusively, so a job starts at most once. */
  jobStarted: 'job.started',
  /** Pid of the job's supervisor (records the exit code even when the controller is gone). */
  jobSupervisor: 'job.supervisor',
  /** Pid of the job = its session and process group id. */
  jobPid: 'job.pid',
  /** Unix time the job ended (written just before job.exit). */
  jobEnded: 'job.ended',
  /** The job's exit code (128+N for signal N). Its presence means the job ended. */
  jobExit: 'job.exit',
  /** Unix time the bootstrap found the job dead with an earlier container (no exit code exists). */
  jobLost: 'job.lost',
  /** Unix time a cancel was asked (also blocks a later start). */
  jobCancelled: 'job.cancelled',
  /** The job's stdout and stderr (and the supervisor's and canceller's notes). */
  jobLog: 'job.log',
  /** What the supervisor's console copy read from job.log in its last look (it copies job.log to the container's stdout). */
  jobConsole: 'job.console',
  /** Touched by the console copy at each look: job.log newer than it has something to copy. */
  jobLook: 'job.look',
  /** Touched by the console copy every second: a job.look newer than it was dated before the clock stepped back. */
  jobTick: 'job.tick',
  /** Marker: the controller retrieved and verified the results; the watchdog deletes the pod. */
  retrieved: 'retrieved',
  /**
   * The watchdog could not delete the pod: "<rule> <unix time> <what each way answered>", rule one of
   * DELETE_RULES. The controller then deletes the pod itself at once.
   */
  deleteFailed: 'watchdog.delete',
  /** keepPod as the controller last set it: "0" = not kept, anything else = kept. Absent: the create env decides. */
  keep: 'keep',
  /**
   * "<unix until>" on the pod's clock: the controller extends the retrieve grace to then while the results
   * wait for a transfer slot or move, renewing it as it goes (renewRetrieveGraceCommand). Never past the deadline.
   */
  retrieveGrace: 'retrieve.until',
  /** The headers of the watchdog's last curl call (for a 429's Retry-After), removed after each call. */
  httpHeaders: 'watchdog.headers',
} as const;

export type PodFile = keyof typeof POD_FILES;

/** The file's absolute path on the pod. */
export function podPath(stateDir: string, file: PodFile): string {
  return posix.join(stateDir, POD_FILES[file]);
}

/** The create call's env names. RUNPOD_OPERATOR_BOOT_FAILED is internal (bootstrap → watchdog). */
export const POD_ENV = {
  cluster: 'RUNPOD_OPERATOR_CLUSTER',
  /** The install's scope ("namespace/<ns>" or "cluster-wide"): with the cluster id, who owns the pod (src/run/ownership.ts). */
  scope: 'RUNPOD_OPERATOR_SCOPE',
  run: 'RUNPOD_OPERATOR_RUN',
  attempt: 'RUNPOD_OPERATOR_ATTEMPT',
  apiUrl: 'RUNPOD_OPERATOR_API_URL',
  deadline: 'RUNPOD_OPERATOR_DEADLINE',
  maxCostUsd: 'RUNPOD_OPERATOR_MAX_COST_USD',
  bootGrace: 'RUNPOD_OPERATOR_BOOT_GRACE',
  retrieveGrace: 'RUNPOD_OPERATOR_RETRIEVE_GRACE',
  /** Seconds the watchdog probes its own pod before its verdict is final (VERDICT_BOUND_SECONDS). */
  verdictBound: 'RUNPOD_OPERATOR_VERDICT_BOUND',
  keepPod: 'RUNPOD_OPERATOR_KEEP_POD',
  runDir: 'RUNPOD_OPERATOR_RUN_DIR',
  /** The pod's state directory on the container's disk (stateDirOf). */
  stateDir: 'RUNPOD_OPERATOR_STATE_DIR',
  hostKey: 'RUNPOD_OPERATOR_HOST_KEY',
  authorizedKey: 'RUNPOD_OPERATOR_AUTHORIZED_KEY',
  watchdogPeriod: 'RUNPOD_OPERATOR_WATCHDOG_PERIOD',
  /** base64 of the minified bootstrap.sh: the args' stub decodes and execs it. */
  bootstrap: 'RUNPOD_OPERATOR_BOOTSTRAP',
  /** base64 of the minified watchdog.sh: the bootstrap decodes it and execs it last. */
  watchdog: 'RUNPOD_OPERATOR_WATCHDOG',
} as const;

/** Variables Runpod injects into the container (PID 1 only) that the scripts read. */
export const RUNPOD_ENV = { podId: 'RUNPOD_POD_ID', apiKey: 'RUNPOD_API_KEY' } as const;

/**
 * What the bootstrap checks the image for (all missing ones are reported at once). The first
 * six are the image contract; the rest are what the scripts and the job commands use.
 */
export const IMAGE_REQUIREMENTS = [
  'sh', 'sshd', 'sha256sum', 'setsid', 'tar', 'base64',
  'awk', 'sed', 'grep', 'tr', 'tail', 'cat', 'date', 'sleep', 'mkdir', 'chmod', 'mv', 'rm',
] as const;

/**
 * The watchdog's HTTP clients, in the order it picks them; the image needs one. python3 needs its
 * urllib (not in Debian's python3-minimal alone); wget must be GNU Wget (BusyBox wget cannot DELETE).
 */
export const HTTP_CLIENTS = ['curl', 'python3', 'wget'] as const;

/** Watchdog defaults (seconds) when the env leaves a setting out. */
export const WATCHDOG_DEFAULTS = { periodSeconds: 10, bootGraceSeconds: 1800, retrieveGraceSeconds: 3600 } as const;

/**
 * How long the watchdog keeps probing its own pod (a GET with the pod key) before its verdict is final:
 * a GET lagging the create, a blip, a burst of 429s are waited out; a refusal (401/403) fails only when
 * it lasted this long. Sent to the pod in the create env (RUNPOD_OPERATOR_VERDICT_BOUND).
 */
export const VERDICT_BOUND_SECONDS = 300;

/**
 * What the watchdog's verdict may take past its bound: its last probe's call (10 s timeout) and a second
 * of its sleep, rounded up. The controller waits the bound plus this (plus its deadline margin) after
 * readiness, so it never judges a verdict missing before the watchdog has given it.
 */
export const VERDICT_LAST_CALL_SECONDS = 15;

/** Why the watchdog wanted the pod gone, as it records it in watchdog.delete. */
export const DELETE_RULES = ['bootstrap', 'config', 'deadline', 'cost-cap', 'price-unknown', 'retrieved', 'retrieve-grace', 'boot-grace'] as const;
export type DeleteRule = (typeof DELETE_RULES)[number];

/** Where sshd's pinned host key and configuration live on the pod. */
export const SSHD_HOST_KEY_PATH = '/etc/ssh/runpod-operator/host_key';
export const SSHD_CONFIG_PATH = '/etc/ssh/runpod-operator/sshd_config';
