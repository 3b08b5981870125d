// What a step's answer teaches the status (pure): the reconciler calls learn() once, on the status the
// step ran under, and writes the result.
import { setCondition } from './conditions.ts';
import type { Observation, SpendClaim } from './model.ts';
import type { RunpodRunStatus } from '../../api/status.ts';
import { headroom, retryAfterRefusal } from './refused-creates.ts';
import { fail, phase, type Context } from './step.ts';
import { retireCurrentPod } from './cost.ts';
import { podStatusFrom } from './provisioning.ts';
import { applyVolumeOutcome } from './network-volume.ts';
import { applySystemLogOutcome } from './system-log.ts';
import type { CreateOutcome, Outcome, ProbeOutcome, RetrievalOutcome } from './outcome.ts';

const heldBack: Record<Exclude<SpendClaim, 'granted'>, string> = {
  'refused-lately': 'Runpod refused a create of this account under its spend limit moments ago',
  claimed: "the room under the account spend limit is claimed by another run's create",
  'no-room': 'no room is left under the account spend limit',
};

export function applyCreateOutcome(obs: Observation, status: RunpodRunStatus, attemptName: string, outcome: CreateOutcome): void {
  const attempt = status.attempts?.find((a) => a.name === attemptName);
  if (!attempt) return;
  const ctx: Context = { obs, status, events: [] };
  switch (outcome.kind) {
    case 'created':
      attempt.outcome = 'Created';
      attempt.podId = outcome.pod.id;
      delete attempt.message;
      delete status.waitingSince;
      retireCurrentPod(status);
      // The capacity wait is over: nothing stays queued to be sent again.
      for (const other of status.attempts ?? []) delete other.retryAfter;
      status.pod = podStatusFrom(outcome.pod, attempt.gpuType, obs, status);
      phase(ctx, 'Provisioning', 'WaitingForSsh', `pod ${outcome.pod.name} (${outcome.pod.id}) created on ${attempt.gpuType}`);
      return;
    case 'capacity':
      attempt.outcome = 'NoCapacity';
      attempt.message = outcome.message;
      return;
    case 'ambiguous':
      attempt.outcome = 'Ambiguous';
      attempt.message = outcome.message;
      attempt.lostAt = outcome.lostAt.toISOString();
      return;
    case 'rate-limited':
      attempt.outcome = 'RateLimited';
      attempt.message = outcome.message;
      attempt.retryAfter = retryAfterRefusal(obs, 'rate-limited', outcome.retryAfterMs, undefined).toISOString();
      phase(ctx, 'Pending', 'RateLimited', `Runpod's rate limit refused the create of pod ${attempt.name}; sending it again at ${attempt.retryAfter} (Retry-After)`);
      return;
    case 'spend-limit': {
      const spend = { ...obs.spend, ...outcome.spend };
      attempt.outcome = 'SpendLimited';
      attempt.message = outcome.message;
      attempt.retryAfter = retryAfterRefusal(obs, 'spend-limit', undefined, spend).toISOString();
      status.waitingSince ??= obs.now.toISOString();
      phase(ctx, 'Pending', 'SpendLimitReached', `Runpod refused pod ${attempt.name} under the account spend limit (${headroom(spend)}); waiting for running pods to free room`);
      return;
    }
    case 'held-back': {
      // Waiting as a refused attempt does (a resend keeps its refusal's message): nothing was sent.
      const why = `${heldBack[outcome.why]} (${headroom(outcome.spend)})`;
      attempt.outcome = 'SpendLimited';
      attempt.message ??= why;
      attempt.retryAfter = new Date(obs.now.getTime() + obs.settings.timings.spendRetrySpacingMs).toISOString();
      status.waitingSince ??= obs.now.toISOString();
      phase(ctx, 'Pending', 'SpendLimitReached', `${why}; pod ${attempt.name} waits, trying again at ${attempt.retryAfter}`);
      return;
    }
    case 'failed':
      attempt.outcome = 'Failed';
      attempt.message = outcome.message;
      fail(ctx, outcome.reason, outcome.message);
  }
}

export function applyProbeOutcome(obs: Observation, status: RunpodRunStatus, outcome: ProbeOutcome): void {
  const ctx: Context = { obs, status, events: [] };
  const pod = status.pod;
  if (!pod) return;
  if (outcome.kind === 'ready') {
    setCondition(status, 'PodReady', 'True', 'PodReady', `SSH answered with the pinned host key on ${pod.sshHost}:${pod.sshPort}`, obs.run.generation, obs.now);
    phase(ctx, 'Running', 'PodReady', `pod ${pod.name} is ready (${pod.gpuType})`);
  } else if (outcome.kind === 'untrusted') {
    // Images often start an sshd of their own (own host keys) that answers until the bootstrap's
    // takes port 22 over: nothing is sent to it, and the pinned key is waited for until
    // readyTimeoutSeconds, after which followPod deletes the pod and tries the next GPU type.
    phase(ctx, 'Provisioning', 'WaitingForSsh', `pod ${pod.name}: SSH answers with a host key that is not the pinned one (trusted with nothing; waiting for the pinned key): ${outcome.message}`);
  }
}

export function applyRetrievalOutcome(obs: Observation, status: RunpodRunStatus, outcome: RetrievalOutcome): void {
  const ctx: Context = { obs, status, events: [] };
  if (outcome.kind === 'unverified') {
    phase(ctx, 'Retrieving', 'ResultsUnverified', `results not verified (try ${obs.retrievalFailures + 1}): ${outcome.message}; retrying, the pod stays for spec.limits.retrieveGraceSeconds`);
    return;
  }
  if (outcome.kind === 'tooLarge') {
    fail(ctx, 'ResultsTooLarge', `${outcome.message}; nothing was retrieved and the pod is deleted`);
    return;
  }
  // Stamped when verified: a large retrieval ends long after the reconcile began.
  status.results = {
    files: outcome.files, bytes: outcome.bytes, location: outcome.location, retrievedAt: outcome.verifiedAt.toISOString(),
    ...(outcome.path ? { path: outcome.path } : {}),
  };
  setCondition(status, 'ResultsRetrieved', 'True', 'ResultsRetrieved', `${outcome.files} files (${outcome.bytes} bytes) verified in ${outcome.location}`, obs.run.generation, outcome.verifiedAt);
  const keep = obs.spec.ok && obs.spec.spec.keepPod;
  if (!keep && status.pod) status.pod.state = 'Deleting';
  phase(ctx, 'Retrieving', 'Retrieving', keep ? 'results verified; the pod is kept (keepPod)' : 'results verified; deleting the pod');
}

export function learn(obs: Observation, status: RunpodRunStatus, outcome: Outcome): RunpodRunStatus {
  const learned = structuredClone(status);
  switch (outcome.step) {
    case 'createPod':
      applyCreateOutcome(obs, learned, outcome.attemptName, outcome.result);
      break;
    case 'probeSsh':
      applyProbeOutcome(obs, learned, outcome.result);
      break;
    case 'retrieveResults':
      applyRetrievalOutcome(obs, learned, outcome.result);
      break;
    case 'readNetworkVolume':
      applyVolumeOutcome(obs, learned, outcome.result);
      break;
    case 'readSystemLog':
      applySystemLogOutcome(obs, learned, outcome.result);
      break;
    case 'ensureRegistry':
      learned.registry = outcome.result;
  }
  return learned;
}
