// The createPod step: the request goes out (unless, under the account spend limit, the room it would
// take is claimed by another run or was refused lately), and what Runpod answered becomes a CreateOutcome for
// learn(): created, refused (capacity, rate limit, spend limit, a failure) or ambiguous.
import type { RunpodRunSpec } from '../../api/spec.ts';
import { isRunpodError, podPricePerHour, type Pod } from '../../runpod/index.ts';
import type { CreateOutcome, HeldBack, Outcome } from '../decide/outcome.ts';
import type { PodView, SpendFacts } from '../decide/model.ts';
import type { PodBackend } from '../ports/pod-backend.ts';
import { spendPriceKey } from '../memory/spend-room.ts';
import type { ActContext } from './context.ts';

/** The run's Runpod side and valid spec, which a create needs. */
interface CreateInputs { pods: PodBackend; spec: RunpodRunSpec }

export async function createPod(ctx: ActContext, account: CreateInputs, attemptName: string, attemptNumber: number, gpuType: string): Promise<Outcome> {
  const { pods } = account;
  const uid = ctx.run.metadata.uid;
  const heldBack = claimSpendRoom(ctx, account, attemptName, gpuType);
  if (heldBack) return { step: 'createPod', attemptName, result: heldBack };
  let outcome: CreateOutcome;
  try {
    const pod = await pods.createPod(ctx.buildCreateRequest(attemptName, attemptNumber, gpuType), ctx.signal);
    outcome = { kind: 'created', pod: podView(pod) };
  } catch (error) {
    outcome = createFailure(error, ctx.now());
  }
  // Nothing of a refused create bills: the room it claimed is another run's to take (after a spend-limit
  // refusal, once a list can show where the room really went).
  if (outcome.kind === 'spend-limit') {
    const priceKey = spendPriceKey(gpuType, account.spec);
    const known = ctx.spendRoom?.known(priceKey, ctx.now()) ?? {};
    const learned = await spendFigures(account, gpuType, known);
    outcome = { ...outcome, spend: { ...known, ...learned } };
    ctx.spendRoom?.refused(uid, ctx.now(), priceKey, learned);
  } else if (outcome.kind !== 'created' && outcome.kind !== 'ambiguous') {
    ctx.spendRoom?.release(uid);
  }
  ctx.refreshPods();
  return { step: 'createPod', attemptName, result: outcome };
}

/**
 * Under the spend limit (this run was refused for it, or another run of the account was lately) a create
 * goes out only with a claim on the room the last list shows, so that of the runs that see room for one
 * pod one sends its create; the others wait (spend-room.ts). Every other create goes (undefined).
 */
function claimSpendRoom(ctx: ActContext, { spec }: CreateInputs, attemptName: string, gpuType: string): HeldBack | undefined {
  const { spendRoom } = ctx;
  // decide() sends a refused attempt again as Pending; the run's reason stays until the answer.
  const resend = ctx.run.status?.reason === 'SpendLimitReached' && ctx.run.status.attempts?.some((a) => a.name === attemptName);
  if (!spendRoom || !(resend || spendRoom.limited(ctx.now()))) return undefined;
  // What another run's refusal taught since this run was observed counts too.
  const spend = { ...ctx.obs.spend, ...spendRoom.known(spendPriceKey(gpuType, spec), ctx.now()) };
  const claim = spendRoom.claim(ctx.run.metadata.uid, spend, ctx.obs.pods?.listedAt, ctx.now());
  return claim === 'granted' ? undefined : { kind: 'held-back', why: claim, spend };
}

function createFailure(error: unknown, lostAt: Date): CreateOutcome {
  if (!isRunpodError(error)) return { kind: 'ambiguous', message: 'the create call failed in an unexpected way', lostAt };
  const message = error.message;
  switch (error.kind) {
    case 'capacity': return { kind: 'capacity', message };
    case 'balance': return { kind: 'failed', reason: 'InsufficientBalance', message };
    case 'invalid': return { kind: 'failed', reason: 'InvalidSpec', message };
    case 'unauthorized': return { kind: 'failed', reason: 'CredentialsRejected', message };
    // A 403 about the key itself (a scope it lacks): no GPU type and no retry will do better.
    case 'forbidden': return { kind: 'failed', reason: 'CredentialsInsufficient', message: `the Runpod API key may not create pods: ${message}` };
    // Refused before anything was done: nothing exists, the same attempt is sent again later.
    case 'rate-limited': return { kind: 'rate-limited', message, retryAfterMs: error.retryAfterMs };
    case 'spend-limit': return { kind: 'spend-limit', message };
    default: return { kind: 'ambiguous', message, lostAt };
  }
}

/**
 * What the spend-limit wait is judged by: the account's limit (GET /v2/account/limits, needs the
 * account:read scope) and the refused pod's list price (the catalog). Either may stay unknown. Only
 * what the account does not `know` freshly is read: the waiting runs share one request budget.
 */
async function spendFigures({ pods, spec }: CreateInputs, gpuType: string, known: SpendFacts): Promise<SpendFacts> {
  const facts: SpendFacts = {};
  if (known.limitUsdPerHour === undefined) {
    try {
      facts.limitUsdPerHour = await pods.spendLimitUsdPerHour();
    } catch {
      // Unknown: the wait retries blind, more slowly.
    }
  }
  if (known.podUsdPerHour === undefined) {
    try {
      const offer = (await pods.catalog({ cloud: spec.cloud, gpuCount: spec.gpu.count })).find((o) => o.id === gpuType);
      const price = offer ? podPricePerHour(offer, spec.cloud, spec.gpu.count) : null;
      if (price !== null) facts.podUsdPerHour = price;
    } catch {
      // Unknown as well.
    }
  }
  return facts;
}

/** The few fields of a Runpod pod that decide() reads. */
export function podView(pod: Pod): PodView {
  const direct = pod.ssh?.direct;
  return {
    id: pod.id,
    name: pod.name,
    status: pod.status,
    gpuType: pod.gpu?.id,
    gpuCount: pod.gpu?.count ?? undefined,
    dataCenterId: pod.dataCenterId ?? undefined,
    costPerHour: pod.cost ?? undefined,
    createdAt: pod.createdAt ?? undefined,
    ssh: direct ? { host: direct.host, port: direct.port } : undefined,
  };
}
