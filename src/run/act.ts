// Carries out the one step decide() chose. Each step is a single call (Runpod through the pod
// backend, SSH through the job host, or the API server); what it learned is applied to the status by
// the pure apply*Outcome functions. The create, the step with the most outcomes, is create-pod.ts.
import type { RunpodRun } from '../api/runpodrun.ts';
import type { RunpodRunSpec } from '../api/spec.ts';
import type { RunpodRunStatus } from '../api/status.ts';
import { registerSecret } from '../log.ts';
import { rankGpuTypes, type CreatePodRequest } from '../runpod/index.ts';
import { generateRunKeys, HostKeyMismatchError, isNotReadyYet, protectPrivateKey, type SshConnection } from '../ssh/index.ts';
import { applyProbeOutcome, type ProbeOutcome } from './decide.ts';
import type { JobInputs } from './job-inputs.ts';
import { noConnectionMessage, type JobHost } from './job-host.ts';
import type { Action, Observation } from './model.ts';
import type { PodBackend } from './pod-backend.ts';
import { abortRetrievalBeforeDelete, retrieve, type RetrievalPool } from './retrieval.ts';
import type { RunApi, SshSecret } from './run-api.ts';
import type { RunEvidence } from './run-evidence.ts';
import type { S3StoreSettings } from '../results/s3-store.ts';
import { createPod } from './create-pod.ts';
import type { SpendRoom } from './spend-room.ts';

export { podView } from './create-pod.ts';

export interface ActContext {
  run: RunpodRun;
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
  /** Wall-clock time for what the step records (lost answers, deletes sent, looks): compared with pod lists' listedAt. */
  now: () => Date;
  refreshPods: () => void;
  /** Aborted when this replica must stop acting (shutdown, lost leadership): no new Runpod call starts. */
  signal?: AbortSignal | undefined;
  /** A long step reports that it moves (see ReconcileContext.progress). */
  progress?: (() => void) | undefined;
  metrics?: ReconcilerMetrics | undefined;
  /** Where retrievals run, off the workers (retrieval.ts); without it they run inline. */
  transfers?: RetrievalPool | undefined;
  /** The room under the account's spend limit, shared by its runs (spend-room.ts); without it every resend goes out. */
  spendRoom?: SpendRoom | undefined;
}

/** What the reconciler reports (src/metrics implements it). */
export interface ReconcilerMetrics {
  sshConnection(outcome: 'ok' | 'host_key_mismatch' | 'failed'): void;
  resultsRetrieved(files: number, bytes: number): void;
}

/** Returns the status to write after the step, when the step learned something the status must record. */
export async function act(action: Action, ctx: ActContext): Promise<RunpodRunStatus | undefined> {
  switch (action.type) {
    case 'none':
      return undefined;
    case 'addFinalizer':
      await ctx.runs.setFinalizer(ctx.run, true);
      return undefined;
    case 'removeFinalizer':
      await ctx.runs.setFinalizer(ctx.run, false);
      return undefined;
    case 'ensureSshKeys': {
      const { client, host } = generateRunKeys(`runpod-operator-${ctx.run.metadata.uid}`);
      await ctx.runs.createSshSecret(ctx.run, {
        clientPrivateKey: client.privateKey, clientPublicKey: client.publicKey,
        hostPrivateKey: host.privateKey, hostPublicKey: host.publicKey,
      });
      return undefined;
    }
    case 'readCatalog':
      await readCatalog(ctx);
      return undefined;
    case 'createPod':
      return createPod(ctx, requireAccount(ctx), action.attemptName, action.attemptNumber, action.gpuType);
    case 'probeSsh':
      return probeSsh(ctx, action.host, action.port);
    case 'deletePod':
      abortRetrievalBeforeDelete(ctx, action.podId);
      await deletePod(ctx, action.podId);
      return undefined;
    case 'startPod':
      await requireAccount(ctx).pods.startPod(action.podId, ctx.signal);
      ctx.refreshPods();
      return undefined;
    case 'lookForGonePod':
      await lookForGonePod(ctx, action.podId);
      return undefined;
    case 'setKeep':
      await connectedHost(ctx).setKeep(action.keep);
      return undefined;
    case 'startJob': {
      if (!ctx.jobInputs) throw new Error('the job\'s env and files could not all be read from the namespace');
      const host = connectedHost(ctx);
      await host.startJob(requireAccount(ctx).spec, ctx.jobInputs);
      return undefined;
    }
    case 'cancelJob':
      await connectedHost(ctx).cancelJob();
      return undefined;
    case 'retrieveResults':
      return retrieve(ctx);
    case 'renewRetrieveGrace':
      await connectedHost(ctx).renewRetrieveGrace(action.seconds);
      return undefined;
  }
}

function connectedHost(ctx: ActContext): JobHost {
  if (!ctx.jobHost.connected) throw new Error(noConnectionMessage);
  return ctx.jobHost;
}

/** With gpu.auto and nothing in stock: how many out-of-stock types a capacity wait walks (each round sends one create per type). */
const outOfStockCandidates = 3;

async function readCatalog(ctx: ActContext): Promise<void> {
  const { spec, pods } = requireAccount(ctx);
  const auto = spec.gpu.auto ?? {};
  const offers = await pods.catalog({ cloud: spec.cloud, gpuCount: spec.gpu.count }, ctx.signal);
  const criteria = {
    cloud: spec.cloud, gpuCount: spec.gpu.count, minVramGb: auto.minVramGb,
    maxPricePerHour: auto.maxPricePerHour === undefined ? undefined : Number(auto.maxPricePerHour),
    dataCenterIds: spec.dataCenterIds,
  };
  let ranked = rankGpuTypes(offers, criteria);
  // Nothing in stock now: the cheapest few that fit are tried anyway, so the run waits for capacity
  // (their refusals, rounds with backoff) instead of failing on a snapshot of stock.
  if (ranked.length === 0) ranked = rankGpuTypes(offers, { ...criteria, includeOutOfStock: true }).slice(0, outOfStockCandidates);
  ctx.evidence.recordCatalog(ctx.run.metadata.uid, ranked.map((offer) => ({ gpuType: offer.id })));
}

/**
 * One pinned handshake. The host key is checked in the key exchange, before authentication, so a
 * server holding another key (an image's own sshd) never sees our client key, let alone an env, a
 * file or a job: it is reported (untrusted) and waited out like a refusal, until readyTimeoutSeconds.
 */
async function probeSsh(ctx: ActContext, host: string, port: number): Promise<RunpodRunStatus | undefined> {
  const keys = ctx.sshKeys;
  if (!keys) return undefined;
  let outcome: ProbeOutcome;
  try {
    await ctx.jobHost.probe({ host, port, keys }, ctx.signal);
    ctx.metrics?.sshConnection('ok');
    outcome = { kind: 'ready' };
  } catch (error) {
    ctx.signal?.throwIfAborted();
    ctx.metrics?.sshConnection(error instanceof HostKeyMismatchError ? 'host_key_mismatch' : 'failed');
    if (error instanceof HostKeyMismatchError) outcome = { kind: 'untrusted', message: error.message };
    else if (isNotReadyYet(error)) outcome = { kind: 'notYet', message: String(error) };
    else outcome = { kind: 'notYet', message: error instanceof Error ? error.message : String(error) };
  }
  if (outcome.kind === 'notYet') return undefined;
  const status = structuredClone(ctx.run.status ?? {});
  applyProbeOutcome(ctx.obs, status, outcome);
  return status;
}

async function deletePod(ctx: ActContext, podId: string): Promise<void> {
  const { pods } = requireClient(ctx);
  const deletion = ctx.evidence.deletion(podId);
  // Already gone is one look's worth of evidence, not proof.
  if (await pods.deletePod(podId, ctx.signal) === 'notFound') deletion.notFoundLooks++;
  deletion.sentAt = ctx.now();
  ctx.evidence.recordDeletion(podId, deletion);
  ctx.refreshPods();
}

async function lookForGonePod(ctx: ActContext, podId: string): Promise<void> {
  const { pods } = requireClient(ctx);
  const deletion = ctx.evidence.deletion(podId);
  // Before the GET: a list started after this moment saw the pod after this look.
  deletion.lookedAt = ctx.now();
  if (await pods.lookForPod(podId, ctx.signal) === 'found') {
    // Alive after all: the evidence restarts, and a delete that did not take is sent again.
    deletion.notFoundLooks = 0;
    if (deletion.sentAt && ctx.now().getTime() - deletion.sentAt.getTime() > resendUnconfirmedDeleteMs) delete deletion.sentAt;
  } else {
    deletion.notFoundLooks++;
  }
  ctx.evidence.recordDeletion(podId, deletion);
}

/** A pod still found this long after its delete was sent: the delete did not take, it is sent again. */
const resendUnconfirmedDeleteMs = 30_000;

function requireClient(ctx: ActContext): { pods: PodBackend } {
  if (!ctx.pods) throw new Error('no Runpod account for this run (credentials missing)');
  return { pods: ctx.pods };
}

function requireAccount(ctx: ActContext): { pods: PodBackend; spec: RunpodRunSpec } {
  if (!ctx.spec) throw new Error('the run has no valid spec');
  return { ...requireClient(ctx), spec: ctx.spec };
}

/** Keys read from the owned Secret join the redaction set before anything could log them. */
export function protectSshKeys(keys: SshSecret): void {
  protectPrivateKey(keys.clientPrivateKey);
  protectPrivateKey(keys.hostPrivateKey);
  // The pod receives the host key base64-encoded in its create env: that form is secret too.
  registerSecret(Buffer.from(keys.hostPrivateKey).toString('base64'));
}
