// The chaos suite's fault generators, one row per simulator fault (test/runpod-sim/faults.ts). A new
// simulator fault plugs in by adding its row here: `plan` draws its parameters when the schedule is
// built (seeded, so the same seed plans the same faults), `arm` turns them into the POST /_sim/faults
// body at the moment it fires, when the live pods it may target are known.
import type { FaultInput } from '../runpod-sim/client.ts';
import type { Random } from './random.ts';

/** Parameters a plan records (plain JSON, part of the schedule's hash). */
export type FaultParams = Record<string, string | number>;

export interface LivePod { id: string; runName: string }

export interface FaultGenerator {
  /** Whether it needs a live pod to aim at (skipped when none is alive at its moment). */
  targetsPod: boolean;
  plan(random: Random): FaultParams;
  arm(params: FaultParams, target: LivePod | undefined): FaultInput | undefined;
}

const num = (params: FaultParams, key: string): number => Number(params[key]);
const gpuTypes = ['NVIDIA GeForce RTX 4090', 'NVIDIA A40'] as const;
/** Requests a 5xx, a 429 or a refusal may hit, as the simulator's stats name them. */
const requestTargets = [
  { method: 'GET', path: '/v2/pods' }, { method: 'POST', path: '/v2/pods' },
  { method: 'GET', path: '/v2/pods/{id}' }, { method: 'DELETE', path: '/v2/pods/{id}' },
] as const;

export const faultGenerators = {
  'no-capacity': {
    targetsPod: false,
    plan: (random) => ({ count: random.int(1, 3), gpuTypeId: random.pick([...gpuTypes, 'any']) }),
    arm: (params) => ({
      fault: 'no-capacity', count: num(params, 'count'),
      ...(params.gpuTypeId === 'any' ? {} : { gpuTypeId: String(params.gpuTypeId) }),
    }),
  },
  'create-ambiguous': {
    targetsPod: false,
    plan: (random) => ({ count: 1, status: random.pick([500, 502, 503, 504]) }),
    arm: (params) => ({ fault: 'create-ambiguous', count: num(params, 'count'), status: num(params, 'status') as 500 }),
  },
  'create-timeout': {
    targetsPod: false,
    plan: () => ({ count: 1 }),
    arm: (params) => ({ fault: 'create-timeout', count: num(params, 'count') }),
  },
  'http-5xx': {
    targetsPod: false,
    plan: (random) => ({ count: random.int(1, 3), target: random.int(0, requestTargets.length - 1), status: random.pick([500, 502, 503]) }),
    arm: (params) => ({ fault: 'http-5xx', count: num(params, 'count'), ...requestTargets[num(params, 'target')], status: num(params, 'status') as 500 }),
  },
  'rate-limit': {
    targetsPod: false,
    plan: (random) => ({ count: random.int(1, 4), target: random.int(0, requestTargets.length - 1), retryAfterSeconds: random.int(1, 5) }),
    arm: (params) => ({
      fault: 'rate-limit', count: num(params, 'count'), ...requestTargets[num(params, 'target')], retryAfterSeconds: num(params, 'retryAfterSeconds'),
    }),
  },
  refuse: {
    targetsPod: false,
    // Runpod refusing the key a few times, on the list, a get or a delete (a refused create ends its run at once; a new leader's first lists are the killer's).
    plan: (random) => ({ count: random.int(1, 3), status: random.pick([401, 401, 403]), target: random.pick([0, 2, 3]) }),
    arm: (params) => ({ fault: 'refuse', count: num(params, 'count'), ...requestTargets[num(params, 'target')], status: num(params, 'status') as 401 }),
  },
  'not-found-flap': {
    targetsPod: true,
    plan: (random) => ({ count: random.int(1, 4) }),
    arm: (params, target) => target && { fault: 'not-found-flap', count: num(params, 'count'), podId: target.id },
  },
  vanish: {
    targetsPod: true,
    plan: (random) => ({ afterMs: random.pick([0, 0, 2000]) }),
    arm: (params, target) => target && { fault: 'vanish', podId: target.id, afterMs: num(params, 'afterMs') },
  },
  'slow-boot': {
    targetsPod: false,
    plan: (random) => ({ count: random.int(1, 2), delayMs: random.pick([3000, 10_000, 25_000, 70_000]) }),
    arm: (params) => ({ fault: 'slow-boot', count: num(params, 'count'), delayMs: num(params, 'delayMs') }),
  },
  'slow-link': {
    targetsPod: true,
    // A slow path between the controller and a pod: retrievals over it take minutes, in the transfer pool.
    plan: (random) => ({ bytesPerSecond: random.pick([64_000, 256_000, 1_000_000]) }),
    arm: (params, target) => target && { fault: 'slow-link', count: 1, podId: target.id, bytesPerSecond: num(params, 'bytesPerSecond') },
  },
  'clock-skew': {
    targetsPod: true,
    // A community host hours off (or minutes): the pod's times and its watchdog's clock are not the controller's.
    plan: (random) => ({ offsetSeconds: random.pick([-7200, -600, 600, 7200]) }),
    arm: (params, target) => target && { fault: 'clock-skew', count: 1, podId: target.id, offsetSeconds: num(params, 'offsetSeconds') },
  },
  'container-exit': {
    targetsPod: true,
    // Mostly a crash that Runpod restarts (the job dies with it); sometimes a pod left EXITED or ERROR.
    plan: (random) => ({ count: 1, status: random.pick(['RUNNING', 'RUNNING', 'EXITED', 'ERROR']), afterMs: random.pick([0, 2000]) }),
    arm: (params, target) => target && {
      fault: 'container-exit', count: num(params, 'count'), podId: target.id,
      status: String(params.status) as 'RUNNING', afterMs: num(params, 'afterMs'),
    },
  },
} satisfies Record<string, FaultGenerator>;

export type FaultGeneratorName = keyof typeof faultGenerators;
export const faultNames = Object.keys(faultGenerators) as FaultGeneratorName[];

export function isFaultName(name: string): name is FaultGeneratorName {
  return Object.hasOwn(faultGenerators, name);
}
