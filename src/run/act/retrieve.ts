// The retrieveResults step. With a transfer pool (the controller's), the step only starts the
// transfer in the pool and returns; the reconcile the pool asks for when it ends observes the outcome
// (obs.retrieval) and decide applies it. Without one (tests and benches calling reconcile directly),
// it transfers inline over the reconcile's connection, and learn() applies what it returns.
import { posix } from 'node:path';
import { runDirOf, stateDirOf } from '../../pod/index.ts';
import { printable, type ManifestFile, type SshConnection } from '../../ssh/index.ts';
import { redact } from '../../log.ts';
import type { Outcome, RetrievalOutcome } from '../decide/outcome.ts';
import type { ActContext } from './context.ts';
import type { Settled } from './transfers.ts';
import { connectToPod } from '../ports/job-host.ts';
import { retrieveResults } from '../ports/job-steps.ts';
import { isS3Failure, s3FailureText } from '../../results/s3-errors.ts';
import { withSecretOwner } from '../../redaction.ts';
import { openS3Target } from '../ports/s3-access.ts';

export async function retrieve(ctx: ActContext): Promise<Outcome | undefined> {
  const pool = ctx.transfers;
  if (!pool) {
    try {
      if (!ctx.ssh) throw new Error('no SSH connection to the pod this time');
      return record(ctx, await transfer(ctx, ctx.ssh, ctx.signal, ctx.progress));
    } catch (error) {
      if (ctx.signal?.aborted) throw error;
      return record(ctx, failedTry(error));
    }
  }
  const uid = ctx.run.metadata.uid;
  // The pool may start it from another run's context: what it registers (S3 keys) is this run's.
  const job = (signal: AbortSignal, progress: () => void) => withSecretOwner(uid, () => transferOverOwnConnection(ctx, signal, progress));
  pool.start(uid, `${ctx.run.metadata.namespace}/${ctx.run.metadata.name}`, job, resultsLostAt(ctx));
  return undefined;
}

/** When the pod goes whatever the retrieval does: its deadline, or (unless kept) the end of its retrieve grace. */
function resultsLostAt(ctx: ActContext): number {
  const { status } = ctx.run;
  const times = [Date.parse(status?.pod?.deadline ?? '')];
  // The reconcile that first sees the job's end has not written it yet: the pod's state has it.
  const endedAt = status?.job?.finishedAt ? Date.parse(status.job.finishedAt) / 1000 : ctx.obs.podState?.job.endedAt;
  if (ctx.spec && !ctx.spec.keepPod && typeof endedAt === 'number') times.push((endedAt + ctx.spec.limits.retrieveGraceSeconds) * 1000);
  return Math.min(Number.POSITIVE_INFINITY, ...times.filter(Number.isFinite));
}

/** Before the pod goes (deadline, cancel, deletion): its transfer stops, its staging is discarded. */
export function abortRetrievalBeforeDelete(ctx: ActContext, podId: string): void {
  if (podId === ctx.run.status?.pod?.id) ctx.transfers?.abort(ctx.run.metadata.uid, `pod ${podId} is being deleted`);
}

/**
 * A try that threw (SSH lost, a pod command failed, the local disk): an unverified try like any
 * other, so it is counted (the retries are spaced and bounded) and the status says why.
 */
function failedTry(error: unknown): RetrievalOutcome {
  const text = error instanceof Error ? error.message : String(error);
  return { kind: 'unverified', message: `the retrieval failed: ${redact(printable(text, 300))}` };
}

/** A transfer that ended in the pool, as the retrieval's outcome (observe hands it to decide). */
export function settledRetrieval(settled: Settled<RetrievalOutcome>): RetrievalOutcome {
  return settled.ok ? settled.value : failedTry(settled.error);
}

/** Once the status records a retrieval's outcome: this process counts the failed tries (spacing, bounds) and the bytes. */
export function rememberRetrieval(memory: Pick<ActContext, 'evidence' | 'metrics'>, uid: string, outcome: RetrievalOutcome, at: Date): void {
  if (outcome.kind === 'verified') {
    memory.evidence.retrievalVerified(uid);
    memory.metrics?.resultsRetrieved(outcome.files, outcome.bytes);
  } else memory.evidence.retrievalFailed(uid, at);
}

function record(ctx: ActContext, outcome: RetrievalOutcome): Outcome {
  rememberRetrieval(ctx, ctx.run.metadata.uid, outcome, ctx.now());
  return { step: 'retrieveResults', result: outcome };
}

async function transfer(ctx: ActContext, ssh: SshConnection, signal: AbortSignal | undefined, progress: (() => void) | undefined): Promise<RetrievalOutcome> {
  if (!ctx.spec) throw new Error('the run has no valid spec');
  const uid = ctx.run.metadata.uid;
  const dirs = { runDir: runDirOf(uid), stateDir: stateDirOf(uid) };
  const options = { ...(signal ? { signal } : {}), ...(progress ? { onProgress: progress } : {}) };
  const podId = ctx.run.status?.pod?.id;
  if (!podId) throw new Error('the run has no pod to retrieve from');
  if (!ctx.s3) return retrieveResults(ssh, dirs, ctx.spec, { location: ctx.resultLocation, podId }, options);
  // Each store call that ends is progress; each is under a bound of its own (s3-store.ts).
  const opened = await openS3Target(ctx.runs, ctx.run.metadata.namespace, ctx.s3, progress);
  // Like a store that does not answer: the run waits within its retrieve grace for the Secret.
  if (!opened.ok) return { kind: 'unverified', message: opened.message };
  const { target } = opened;
  try {
    // With the store's client (s3-access.ts): the SDK's commands load with the first run that uses a bucket.
    const [{ retrieveResultsToS3 }, { uploadFromPod }] = await Promise.all([import('./retrieve-s3.ts'), import('../../results/s3-direct.ts')]);
    // The pod sends its files itself (presigned PUTs, valid for the retrieve grace); a pod that cannot
    // reach the store's endpoint has them streamed through the controller instead.
    const { spec } = ctx;
    const remoteDir = posix.join(dirs.runDir, spec.results.path);
    const direct = (files: ManifestFile[]) => uploadFromPod(ssh, remoteDir, files, target, { expiresInSeconds: spec.limits.retrieveGraceSeconds, ...(signal ? { signal } : {}) });
    return await retrieveResultsToS3(ssh, dirs, spec, target, { ...options, direct });
  } catch (error) {
    // The store refused or did not answer: an unverified try (retried within the grace), not a crashed step.
    if (signal?.aborted || !isS3Failure(error)) throw error;
    return { kind: 'unverified', message: `the object store ${ctx.resultLocation}: ${s3FailureText(error)}` };
  } finally {
    target.client.destroy();
  }
}

/** The reconcile's connection closes when the reconcile ends: a pooled transfer opens its own. */
async function transferOverOwnConnection(ctx: ActContext, signal: AbortSignal, progress: () => void): Promise<RetrievalOutcome> {
  const pod = ctx.run.status?.pod;
  const keys = ctx.sshKeys;
  if (!keys || !pod?.sshHost || !pod.sshPort) throw new Error('the pod has no SSH address or the run no SSH keys');
  const ssh = await connectToPod({ host: pod.sshHost, port: pod.sshPort, keys }, signal);
  ctx.metrics?.sshConnection('ok');
  // Destroying the connection ends whatever runs over it (an exec, a transfer) at once, however slow the link.
  const close = (): void => ssh.destroy();
  signal.addEventListener('abort', close, { once: true });
  try {
    return await transfer(ctx, ssh, signal, progress);
  } finally {
    signal.removeEventListener('abort', close);
    ssh.close();
  }
}
