// What the decide() tests share: one clock, one spec, one observation, one pod, one pod state, and
// the statuses most tests start from. A file that needs other defaults passes them (options or a
// one-line wrapper in that file), rather than copying these.
import { defaultTimings } from '../../src/run/decide/timings.ts';
import assert from 'node:assert/strict';
import { parseSpec, type SpecVerdict } from '../../src/api/runpodrun.ts';
import type { RunpodRunStatus } from '../../src/api/status.ts';
import type { PodState } from '../../src/pod/index.ts';
import { applyCreateOutcome, applyProbeOutcome, decide } from '../../src/run/decide/decide.ts';
import type { Observation, PodView } from '../../src/run/decide/model.ts';

export const t0 = new Date('2026-12-01T12:00:00Z');
/** `seconds` after t0. */
export const at = (seconds: number): Date => new Date(t0.getTime() + seconds * 1000);
/** `seconds` after t0 in unix seconds, as the pod's state file writes times. */
export const unixAt = (seconds: number): number => Math.floor(at(seconds).getTime() / 1000);
export const ssh = { host: '127.0.0.1', port: 2222 };

export type ValidSpec = Extract<SpecVerdict, { ok: true }>;

/** A valid spec on GPU types A then B: `limits` is merged into the default limits, `extra` replaces top-level fields (limits too). */
export function spec(extra: Record<string, unknown> = {}, limits: Record<string, unknown> = {}): ValidSpec {
  const verdict = parseSpec({
    credentials: { secretName: 'runpod' }, image: 'img', gpu: { types: ['A', 'B'] },
    job: { command: ['true'] }, limits: { maxRuntimeSeconds: 600, readyTimeoutSeconds: 60, ...limits }, ...extra,
  });
  assert.ok(verdict.ok, JSON.stringify(verdict));
  return verdict;
}

/** Run r at t0 with its finalizer, credentials and SSH keys, and an empty pod list taken at t0. */
export function observe(over: Partial<Observation> = {}, status: RunpodRunStatus = {}): Observation {
  return {
    now: t0,
    run: { name: 'r', namespace: 'ns', uid: 'uid-1', generation: 1, deleting: false, hasFinalizer: true, skipCleanup: false },
    spec: spec(),
    status,
    credentials: { found: true },
    sshKeysReady: true,
    pods: { listedAt: t0, items: [] },
    deletions: {},
    jobInputs: { ok: true },
    retrievalFailures: 0,
    settings: { ambiguousLookupMs: 10_000, deadlineMarginMs: 60_000, goneLooks: 3, pollIntervalMs: 5000, timings: defaultTimings },
    ...over,
  };
}

/** At `seconds`, with a list of that moment showing `items`. */
export const observeAt = (seconds: number, status: RunpodRunStatus, over: Partial<Observation> = {}, items: PodView[] = []): Observation =>
  observe({ now: at(seconds), pods: { listedAt: at(seconds), items }, ...over }, status);

/** Pod p1 (r-1) on GPU type A, created at t0, RUNNING. */
export const pod = (over: Partial<PodView> = {}): PodView =>
  ({ id: 'p1', name: 'r-1', status: 'RUNNING', gpuType: 'A', gpuCount: 1, costPerHour: 0.5, createdAt: t0.toISOString(), ...over });

/** What one SSH exec reads from a booted pod: bootstrap and watchdog ok, the job as given (none by default). */
export const state = (over: Partial<PodState> = {}, job: Partial<PodState['job']> = {}): PodState => ({
  runDirMissing: false, now: 0, clockOffsetSeconds: 0, bootstrap: { status: 'ok' }, watchdog: { status: 'ok' },
  job: { status: 'none', startedAt: null, endedAt: null, exitCode: null, pid: null, cancelled: false, ...job },
  retrieved: false, keep: false, deleteFailed: null, logTail: '', ...over,
});

export interface StatusOptions {
  /** The run's spec (the deadline of the pod follows from it). */
  spec?: ValidSpec;
  /** The pod the create answers with (default pod()). */
  pod?: PodView;
}

/** The status right after decide's first create (r-1 on type A, at t0) was answered with the pod. */
export function createdStatus(options: StatusOptions = {}): RunpodRunStatus {
  const obs = observe(options.spec ? { spec: options.spec } : {});
  const first = decide(obs);
  applyCreateOutcome(obs, first.status, 'r-1', { kind: 'created', pod: options.pod ?? pod() });
  return first.status;
}

export interface ReadyOptions extends StatusOptions {
  /** When SSH answered with the pinned host key (PodReady), in seconds after t0 (default: listedAt, else 0). */
  readyAt?: number;
  /** When set, a list taken at this second shows the pod once before it is ready. */
  listedAt?: number;
}

/** The status of a created pod whose SSH answered with the pinned host key on `ssh`. */
export function readyStatus(options: ReadyOptions = {}): RunpodRunStatus {
  const over = options.spec ? { spec: options.spec } : {};
  let status = createdStatus(options);
  if (options.listedAt !== undefined) status = decide(observeAt(options.listedAt, status, over, [options.pod ?? pod()])).status;
  status.pod!.sshHost = ssh.host;
  status.pod!.sshPort = ssh.port;
  applyProbeOutcome(observe({ ...over, now: at(options.readyAt ?? options.listedAt ?? 0) }), status, { kind: 'ready' });
  return status;
}
