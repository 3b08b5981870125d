// The job's steps on a ready pod, each over the reconcile's one SSH connection: read the pod's
// state, set keepPod, start the job, cancel it, retrieve and verify its results. `dirs` are the run's
// own directory on the pod (runDirOf: per run UID, so runs sharing a network volume never meet) and
// the pod's state directory on its container disk (stateDirOf: never on a volume another pod mounts).
import { join, posix } from 'node:path';
import { DEFAULT_RESULTS_MAX_BYTES, byteSizeValue, type RunpodRunSpec } from '../../api/spec.ts';
import {
  cancelJobCommand, clockOffsetSeconds, jobEnvFile, markRetrievedCommand, onControllerClock, parseAck, parseCancelOutput, parsePodState,
  parseStartOutput, podStateCommand, renewRetrieveGraceCommand, setKeepCommand, startJobCommand, writeJobEnvCommand, RETRIEVED_TAG, KEEP_TAG, ENV_TAG, GRACE_TAG,
  type PodState,
} from '../../pod/index.ts';
import { commitResults, discardStaging, jobLogName, resultsSubdirectory, stagingDirectory } from '../../results/store.ts';
import {
  ContentMismatchError, computeManifest, downloadFile, execChecked, retrieveDirectory, shellQuote, uploadFile, type Manifest, type SshConnection,
} from '../../ssh/index.ts';
import { withHeartbeat } from './heartbeat.ts';
import { describeJobLog } from './job-log.ts';
import type { RetrievalOutcome } from '../decide/outcome.ts';
import type { JobInputs } from '../observe/job-inputs.ts';

const commandTimeout = { timeoutMs: 30_000 };

/** Where a run lives on its pod. */
export interface PodDirs { runDir: string; stateDir: string }

/** The pod's state, its times on the controller's clock (`wallNow`: the reconcile's clock, ms): pod-clock.ts. */
export async function readPodState(ssh: SshConnection, stateDir: string, signal?: AbortSignal, wallNow: () => number = Date.now): Promise<PodState> {
  const sentAtMs = wallNow();
  const result = await execChecked(ssh, podStateCommand({ stateDir }), 'reading the pod state', { ...commandTimeout, ...(signal ? { signal } : {}) });
  const answeredAtMs = wallNow();
  const state = parsePodState(result.stdout.toString('utf8'));
  return onControllerClock(state, clockOffsetSeconds({ podNow: state.now, sentAtMs, answeredAtMs }));
}

export async function setKeep(ssh: SshConnection, stateDir: string, keep: boolean): Promise<void> {
  const result = await execChecked(ssh, setKeepCommand({ stateDir, keep }), 'setting keepPod on the pod', commandTimeout);
  parseAck(result.stdout.toString('utf8'), KEEP_TAG);
}

/** Extends the pod's retrieve grace to `seconds` from now on its own clock (retrieve.until, which the watchdog honours). */
export async function renewRetrieveGrace(ssh: SshConnection, stateDir: string, seconds: number): Promise<void> {
  const result = await execChecked(ssh, renewRetrieveGraceCommand({ stateDir, seconds }), 'extending the retrieve grace on the pod', commandTimeout);
  parseAck(result.stdout.toString('utf8'), GRACE_TAG);
}

/** Files first, then the env (0600, over stdin: never on a command line), then the detached start. */
export async function startJob(ssh: SshConnection, { runDir, stateDir }: PodDirs, spec: RunpodRunSpec, inputs: JobInputs): Promise<void> {
  for (const file of inputs.files) {
    await uploadFile(ssh, posix.join(runDir, file.path), file.content, file.secret ? 0o600 : 0o644);
  }
  const env = await execChecked(ssh, writeJobEnvCommand({ stateDir }), 'writing the job env', { ...commandTimeout, stdin: jobEnvFile(inputs.env) });
  parseAck(env.stdout.toString('utf8'), ENV_TAG);
  const started = await execChecked(ssh, startJobCommand({ runDir, stateDir, command: spec.job.command }), 'starting the job', commandTimeout);
  const outcome = parseStartOutput(started.stdout.toString('utf8'));
  if (outcome.outcome === 'failed') throw new Error(`the job could not be started: ${outcome.reason}`);
}

export async function cancelJob(ssh: SshConnection, stateDir: string): Promise<void> {
  const result = await execChecked(ssh, cancelJobCommand({ stateDir, graceSeconds: 10 }), 'cancelling the job', commandTimeout);
  parseCancelOutput(result.stdout.toString('utf8'));
}

export interface RetrieveStepOptions {
  /** Aborts the transfer (shutdown, lost leadership); what it staged stays for the next try to resume. */
  signal?: AbortSignal;
  /** Called as bytes arrive (a long transfer is progress, not a stuck worker). */
  onProgress?: () => void;
}

/**
 * How long the pod may take to hash the results (the manifest) and to list them again: the retrieve
 * grace, past which the pod goes anyway; a fixed bound would cut a large result set short, or keep a
 * short grace waiting far past its end.
 */
export const listingTimeoutMs = (spec: RunpodRunSpec): number => spec.limits.retrieveGraceSeconds * 1000;

/**
 * The first step of a retrieval, whichever store it goes to: the pod's manifest of the results
 * directory (created when the job wrote none: an empty result is verifiable), or the refusal of a
 * result set larger than results.maxBytes.
 */
export async function resultManifest(ssh: SshConnection, remoteDir: string, spec: RunpodRunSpec, signal: AbortSignal | undefined, onProgress?: () => void):
  Promise<{ manifest: Manifest } | Extract<RetrievalOutcome, { kind: 'tooLarge' }>> {
  const withSignal = signal ? { signal } : {};
  await execChecked(ssh, `mkdir -p -- ${shellQuote(remoteDir)}`, 'preparing the results directory', { ...commandTimeout, ...withSignal });
  const manifest = await withHeartbeat(onProgress, () => computeManifest(ssh, remoteDir, { timeoutMs: listingTimeoutMs(spec), ...withSignal }));
  const maxBytes = spec.results.maxBytes ?? DEFAULT_RESULTS_MAX_BYTES;
  const total = manifest.files.reduce((sum, file) => sum + file.size, 0);
  if (total > byteSizeValue(maxBytes)) {
    return { kind: 'tooLarge', message: `the results are ${total} bytes in ${manifest.files.length} files, more than spec.results.maxBytes (${maxBytes} = ${byteSizeValue(maxBytes)} bytes)` };
  }
  return { manifest };
}

/**
 * Streams the results directory and the job log into a staging directory, checks every file against
 * the pod's SHA-256 manifest, and only then moves it into place and writes the `retrieved` marker.
 */
export async function retrieveResults(ssh: SshConnection, { runDir, stateDir }: PodDirs, spec: RunpodRunSpec, { location, podId }: { location: string; podId: string }, options: RetrieveStepOptions = {}): Promise<RetrievalOutcome> {
  const remoteDir = posix.join(runDir, spec.results.path);
  const signal = options.signal ? { signal: options.signal } : {};
  const read = await resultManifest(ssh, remoteDir, spec, options.signal, options.onProgress);
  if (!('manifest' in read)) return read;
  const { manifest } = read;
  // A try cut short (a lost connection, a leader killed or stepping down) leaves its staging for the
  // next to resume: a result that takes longer than any one leader's term still arrives.
  const staging = await stagingDirectory(location, podId);
  const retrieved = await retrieveDirectory(ssh, remoteDir, resultsSubdirectory(staging), manifest, {
    ...signal, resume: true, listTimeoutMs: listingTimeoutMs(spec), ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  if (!retrieved.ok) {
    const problems = [['missing', retrieved.missing], ['different', retrieved.different], ['extra', retrieved.extra], ['refused symlinks', retrieved.refused]] as const;
    const message = problems.filter(([, files]) => files.length > 0)
      .map(([what, files]) => `${files.length} ${what} (${files.slice(0, 3).join(', ')})`).join(', ');
    await discardStaging(staging);
    return { kind: 'unverified', message };
  }
  await downloadJobLog(ssh, stateDir, join(staging, jobLogName), options.signal);
  await commitResults(staging, location);
  const marked = await execChecked(ssh, markRetrievedCommand({ stateDir }), 'marking the results retrieved', commandTimeout);
  parseAck(marked.stdout.toString('utf8'), RETRIEVED_TAG);
  return { kind: 'verified', files: retrieved.files, bytes: retrieved.bytes, location, verifiedAt: new Date() };
}

/** job.log up to its size when described (job-log.ts); one rewritten meanwhile (not appended to) is left out. */
async function downloadJobLog(ssh: SshConnection, stateDir: string, localPath: string, signal: AbortSignal | undefined): Promise<void> {
  const log = await describeJobLog(ssh, stateDir, signal);
  if (!log) return;
  try {
    await downloadFile(ssh, log.remotePath, localPath, {
      expectedSha256: log.file.sha256, expectedSize: log.file.size, growing: true, ...(signal ? { signal } : {}),
    });
  } catch (error) {
    // The results are what counts: a log the job rewrote is not a reason to lose them.
    if (!(error instanceof ContentMismatchError)) throw error;
  }
}
