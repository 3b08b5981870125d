// How the simulated Runpod behaves for a whole session, drawn from the seed: the realism issue's
// behaviours that are settings rather than one-off faults. A pod list that lags creates and deletes,
// pods that go PROVISIONING → STARTING → RUNNING, an account spend limit that only a few pods fit
// under, pod keys that may read their pod but not delete it (so only the controller can), and a pod
// list in pages. Each seed meets another mix; `plain` is the simulator's defaults.
import type { SimConfigInput } from '../runpod-sim/server.ts';
import type { Random } from './random.ts';

export interface SimConditions {
  statusFlow: 'running-at-once' | 'provisioning-starting-running';
  listLag: { createdMs: number; deletedMs: number; get: boolean };
  /** USD/h of running pods the account may have: 80 (the default) or tight (a few pods). */
  spendRateUsdPerHour: number;
  /** Pod keys are refused DELETE on their own pod: the watchdog's delete fails, the controller's must do. */
  podKeysMayNotDelete: boolean;
  /** GET /v2/pods answers in pages of this many pods (null: one answer); the list faults then hit any page. */
  pageSize: number | null;
}

export const plainConditions: SimConditions = {
  statusFlow: 'running-at-once', listLag: { createdMs: 0, deletedMs: 0, get: false }, spendRateUsdPerHour: 80, podKeysMayNotDelete: false, pageSize: null,
};

export function drawConditions(random: Random): SimConditions {
  const lags = random.next() < 0.5;
  return {
    statusFlow: random.pick(['running-at-once', 'provisioning-starting-running'] as const),
    listLag: lags
      ? { createdMs: random.pick([1000, 3000, 8000]), deletedMs: random.pick([1000, 3000, 8000]), get: random.next() < 0.3 }
      : plainConditions.listLag,
    // 1.8 USD/h: two or three of the session's pods (0.40-0.69 USD/h each) at once; the rest wait for room.
    spendRateUsdPerHour: random.next() < 0.3 ? 1.8 : plainConditions.spendRateUsdPerHour,
    podKeysMayNotDelete: random.next() < 0.25,
    // A few pods live at a time (the stock): pages of 2 or 3 make most lists two pages or more.
    pageSize: random.next() < 0.5 ? random.pick([2, 3]) : null,
  };
}

/** The simulator settings that make the conditions. */
export function conditionsConfig(conditions: SimConditions): SimConfigInput {
  return {
    pods: { statusFlow: conditions.statusFlow, ...(conditions.pageSize === null ? {} : { pageSize: conditions.pageSize }) },
    listLag: conditions.listLag,
    account: { spendRateUsdPerHour: conditions.spendRateUsdPerHour },
    podKeys: { refuse: conditions.podKeysMayNotDelete ? ['delete'] : [] },
  };
}

export function describeConditions(conditions: SimConditions): string {
  const { listLag } = conditions;
  return [
    `pods ${conditions.statusFlow}`,
    listLag.createdMs || listLag.deletedMs ? `list lag ${listLag.createdMs} ms after creates, ${listLag.deletedMs} ms after deletes${listLag.get ? ' (GET too)' : ''}` : 'no list lag',
    `spend limit ${conditions.spendRateUsdPerHour} USD/h`,
    conditions.podKeysMayNotDelete ? 'pod keys may not delete their pod' : 'pod keys may delete their pod',
    conditions.pageSize === null ? 'pod lists in one answer' : `pod lists in pages of ${conditions.pageSize}`,
  ].join('; ');
}
