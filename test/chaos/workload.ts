// The runs a chaos session applies: each kind has a job, limits and what the user does to it
// mid-run, and the outcomes a user would expect of it. Under faults a run may end otherwise (a
// success-type run may end NoCapacity or PodLost): outcomes are reported, the invariants are judged.
import { group, version } from '../../src/api/runpodrun.ts';
import type { Random } from './random.ts';

export const runKinds = ['success', 'job-failure', 'deadline', 'cancel', 'delete', 'keep-pod'] as const;
/**
 * Planned apart (schedule.ts, from a random stream of their own, so a seed's other draws stay what they were):
 * - `bad-key`: a run whose credentials Secret holds a key with a stray byte, one tenant's mistake that
 *   must stay that run's own while every other run holds every invariant;
 * - `retry`: spec.retry {limit 1 or 2, onExitCodes [75]}; its job exits 75 on every try but the last the
 *   limit allows, and 0 on that one (issue 20: a crash between a failed try and the next pod).
 */
export type RunKind = (typeof runKinds)[number] | 'bad-key' | 'retry';

/** The exit code a `retry` run's job fails its early tries with (its spec.retry.onExitCodes). */
export const retryExitCode = 75;

/** The Secret of the bad-key runs, and what it holds: a recognisable key with an embedded control byte. */
export const badKeySecret = { name: 'runpod-malformed', key: 'apiKey', value: 'rpa_CHAOS_BAD\x01KEY_DO_NOT_LOG_93e1\n' } as const;

/** How often each kind is drawn once every kind has had its first run. */
const kindWeights: Record<(typeof runKinds)[number], number> = { success: 4, 'job-failure': 1, deadline: 1, cancel: 1, delete: 1, 'keep-pod': 1 };

export interface PlannedRun {
  name: string;
  kind: RunKind;
  /** When it is applied, from the session's start. */
  applyAtMs: number;
  /** How long the job runs (a job meant to be stopped runs far longer than the session). */
  jobSeconds: number;
  exitCode: number;
  resultBytes: number;
  maxRuntimeSeconds: number;
  /** cancel / delete: how long after the apply the user does it. */
  actionAfterMs?: number;
  /** retry: spec.retry.limit; the job exits 0 on try limit + 1 only (RUNPOD_OPERATOR_ATTEMPT), 75 before. */
  retryLimit?: number;
}

/** What a run of this kind ends as when nothing goes wrong ("Phase/Reason"; "deleted" for a run the user deleted). */
export const expectedOutcome: Record<RunKind, string> = {
  success: 'Succeeded/Succeeded', 'job-failure': 'Failed/JobFailed', deadline: 'Failed/DeadlineExceeded',
  cancel: 'Failed/Cancelled', delete: 'deleted', 'keep-pod': 'Succeeded/Succeeded',
  // Held Pending/CredentialsInvalid (a figure checks it was seen so), then deleted by the user.
  'bad-key': 'deleted',
  // Tries 1..limit exit 75 and are retried; try limit + 1 exits 0.
  retry: 'Succeeded/Succeeded',
};

/** Kinds whose job exits 0 on its own (a retry run's: on its last try): a result the user must get unless the pod was taken away. */
export const exitsZero = (kind: RunKind): boolean => kind === 'success' || kind === 'keep-pod' || kind === 'retry';

export function planRun(random: Random, index: number, kind: RunKind, applyAtMs: number): PlannedRun {
  const name = `chaos-${String(index + 1).padStart(3, '0')}-${kind}`;
  const resultBytes = random.int(1, 8) * 256 * 1024;
  const base = { name, kind, applyAtMs, resultBytes, exitCode: 0, jobSeconds: random.int(3, 20), maxRuntimeSeconds: 300 };
  switch (kind) {
    case 'success': return base;
    case 'job-failure': return { ...base, exitCode: random.pick([1, 3, 42]) };
    case 'deadline': return { ...base, jobSeconds: 3600, maxRuntimeSeconds: random.int(30, 45) };
    case 'cancel': return { ...base, jobSeconds: 3600, actionAfterMs: random.int(8, 45) * 1000 };
    case 'delete': return { ...base, jobSeconds: 3600, actionAfterMs: random.int(5, 45) * 1000 };
    // The deadline is absolute for a kept pod too: a short one lands inside the session.
    case 'keep-pod': return { ...base, maxRuntimeSeconds: random.int(45, 240) };
    // Deleted once it was seen waiting Pending/CredentialsInvalid, or at the latest this long after the apply.
    case 'bad-key': return { ...base, jobSeconds: 3600, actionAfterMs: random.int(20, 45) * 1000 };
    case 'retry': return { ...base, retryLimit: random.int(1, 2) };
  }
}

/** Every kind once (shuffled) while there is room, then weighted draws. */
export function drawKinds(random: Random, count: number): RunKind[] {
  const first = random.shuffle(runKinds).slice(0, Math.min(count, runKinds.length));
  const rest = Array.from({ length: Math.max(0, count - first.length) }, () => random.weighted(kindWeights));
  return [...first, ...rest];
}

/**
 * The job: writes its name and some random bytes into output/, sleeps, exits with the planned code. A
 * retry run's job also writes its try (output/try.txt, from RUNPOD_OPERATOR_ATTEMPT) and exits 75 on
 * every try before limit + 1: only the last try the limit allows succeeds.
 */
export function jobScript(run: PlannedRun): string {
  const limit = run.retryLimit;
  const attempt = '"$' + '{RUNPOD_OPERATOR_ATTEMPT:-1}"';
  return [
    'mkdir -p output',
    `printf %s ${run.name} > output/name.txt`,
    ...(limit === undefined ? [] : [`printf %s ${attempt} > output/try.txt`]),
    `head -c ${run.resultBytes} /dev/urandom > output/data.bin`,
    `sleep ${run.jobSeconds}`,
    ...(limit === undefined ? [] : [`{ [ ${attempt} -ge ${limit + 1} ] || exit ${retryExitCode}; }`]),
    `exit ${run.exitCode}`,
  ].join(' && ');
}

export function runManifest(run: PlannedRun): object {
  return {
    apiVersion: `${group}/${version}`, kind: 'RunpodRun', metadata: { name: run.name, labels: { 'chaos.runpod-operator.dev/kind': run.kind } },
    spec: {
      credentials: run.kind === 'bad-key' ? { secretName: badKeySecret.name, key: badKeySecret.key } : { secretName: 'runpod' }, image: 'runpod/base:0.6.2',
      gpu: { types: ['NVIDIA GeForce RTX 4090', 'NVIDIA A40'] },
      job: { command: ['sh', '-c', jobScript(run)] },
      results: { path: 'output' },
      limits: { maxRuntimeSeconds: run.maxRuntimeSeconds, readyTimeoutSeconds: 60 },
      ...(run.kind === 'keep-pod' ? { keepPod: true } : {}),
      ...(run.retryLimit !== undefined ? { retry: { limit: run.retryLimit, onExitCodes: [retryExitCode] } } : {}),
    },
  };
}
