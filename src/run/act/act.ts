// Carries out the one step decide() chose. Each step is a single call (Runpod through the pod
// backend, SSH through the job host, or the API server); a step whose answer the status must record
// returns it as an Outcome, which the reconciler hands to learn(). The create, the step with the most
// outcomes, is create-pod.ts.
import { registerSecret } from '../../log.ts';
import { rankGpuTypes } from '../../runpod/index.ts';
import { generateRunKeys, HostKeyMismatchError, protectPrivateKey } from '../../ssh/index.ts';
import type { Action } from '../decide/model.ts';
import type { Outcome } from '../decide/outcome.ts';
import { noConnectionMessage, type JobHost } from '../ports/job-host.ts';
import type { PodBackend } from '../ports/pod-backend.ts';
import type { SshSecret } from '../ports/run-api.ts';
import type { RunpodRunSpec } from '../../api/spec.ts';
import type { ActContext } from './context.ts';
import { createPod } from './create-pod.ts';
import { abortRetrievalBeforeDelete, retrieve } from './retrieve.ts';

export type { ActContext, ReconcilerMetrics, RetrievalPool, Written } from './context.ts';
export { podView } from './create-pod.ts';

/** The step's answer, when the status must record it (learn() applies it); undefined when there is none. */
export async function act(action: Action, ctx: ActContext): Promise<Outcome | undefined> {
  switch (action.type) {
    case 'none':
      return undefined;
    case 'addFinalizer': {
      const run = await ctx.runs.setFinalizer(ctx.run, true);
      if (ctx.written) ctx.written.run = run;
      return undefined;
    }
    case 'removeFinalizer':
      await ctx.runs.setFinalizer(ctx.run, false);
      return undefined;
    case 'ensureSshKeys': {
      const { client, host } = generateRunKeys(`runpod-operator-${ctx.run.metadata.uid}`);
      const keys: SshSecret = {
        clientPrivateKey: client.privateKey, clientPublicKey: client.publicKey,
        hostPrivateKey: host.privateKey, hostPublicKey: host.publicKey,
      };
      // Made, or completed when this run already owned it: the Secret holds these keys now.
      await ctx.runs.createSshSecret(ctx.run, keys);
      if (ctx.written) ctx.written.sshKeys = keys;
      return undefined;
    }
    case 'readNetworkVolume': {
      const found = await requireAccount(ctx).pods.networkVolume(action.volumeId, ctx.signal);
      return { step: 'readNetworkVolume', result: found === 'missing' ? { kind: 'missing' } : { kind: 'found', ...found } };
    }
    case 'ensureRegistry': {
      const auth = ctx.jobInputs?.registry;
      if (auth?.name !== action.name) throw new Error('the image pull Secret changed or could not be read; looking again');
      return { step: 'ensureRegistry', result: await requireAccount(ctx).pods.ensureRegistry(auth, ctx.signal) };
    }
    case 'readSystemLog':
      return { step: 'readSystemLog', result: { podId: action.podId, lines: await readSystemLog(ctx, action.podId) } };
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
      // The job knows which try it is (spec.retry): a retry may resume from what an earlier one left on a volume.
      const env = { ...ctx.jobInputs.env, RUNPOD_OPERATOR_ATTEMPT: String(action.try) };
      await host.startJob(requireAccount(ctx).spec, { ...ctx.jobInputs, env });
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

/**
 * Best effort: a pod's system lines explain, they decide nothing alone, so a failed read (counted by the
 * Runpod request metrics by endpoint and status) reads as none rather than holding up the reconcile.
 */
async function readSystemLog(ctx: ActContext, podId: string): Promise<string[]> {
  try {
    return await requireAccount(ctx).pods.systemLog(podId, ctx.signal);
  } catch {
    return [];
  }
}

/** Every type that fits gpu.auto, cheapest first, each marked in stock or not (decide chooses among them). */
async function readCatalog(ctx: ActContext): Promise<void> {
  const { spec, pods } = requireAccount(ctx);
  const auto = spec.gpu.auto ?? {};
  const offers = await pods.catalog({ cloud: spec.cloud, gpuCount: spec.gpu.count }, ctx.signal);
  const criteria = {
    cloud: spec.cloud, gpuCount: spec.gpu.count, minVramGb: auto.minVramGb,
    maxPricePerHour: auto.maxPricePerHour === undefined ? undefined : Number(auto.maxPricePerHour),
    dataCenterIds: ctx.placement,
  };
  const inStock = new Set(rankGpuTypes(offers, criteria).map((offer) => offer.id));
  const fitting = rankGpuTypes(offers, { ...criteria, includeOutOfStock: true });
  ctx.evidence.recordCatalog(ctx.run.metadata.uid, fitting.map((offer) => ({ gpuType: offer.id, inStock: inStock.has(offer.id) })));
}

/**
 * One pinned handshake. The host key is checked in the key exchange, before authentication, so a
 * server holding another key (an image's own sshd) never sees our client key, let alone an env, a
 * file or a job: it is reported (untrusted) and waited out like a refusal, until readyTimeoutSeconds.
 */
async function probeSsh(ctx: ActContext, host: string, port: number): Promise<Outcome | undefined> {
  const keys = ctx.sshKeys;
  if (!keys) return undefined;
  try {
    await ctx.jobHost.probe({ host, port, keys }, ctx.signal);
    ctx.metrics?.sshConnection('ok');
    return { step: 'probeSsh', result: { kind: 'ready' } };
  } catch (error) {
    ctx.signal?.throwIfAborted();
    const untrusted = error instanceof HostKeyMismatchError;
    ctx.metrics?.sshConnection(untrusted ? 'host_key_mismatch' : 'failed');
    // Not yet (refused, timed out, any other failure): nothing to record; the next probe is decide's.
    return untrusted ? { step: 'probeSsh', result: { kind: 'untrusted', message: error.message } } : undefined;
  }
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
    // Alive after all: the evidence restarts (decide sends a delete that did not take again).
    deletion.notFoundLooks = 0;
    deletion.foundAt = ctx.now();
  } else {
    deletion.notFoundLooks++;
  }
  ctx.evidence.recordDeletion(podId, deletion);
}

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
