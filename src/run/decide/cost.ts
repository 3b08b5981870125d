// The run's estimated spend: every pod it rented, from each pod's price and lifetime.
import type { RunpodRunStatus } from '../../api/status.ts';
import type { Context } from './step.ts';

/** Every pod of the run counts: the earlier attempts' recorded spend plus the current pod's so far. */
export function updateCost(ctx: Context): void {
  const { status } = ctx;
  const earlier = (status.attempts ?? []).filter((a) => a.costUsd !== undefined && a.podId !== status.pod?.id);
  const current = podCost(status.pod, ctx.obs.now);
  if (current === undefined && earlier.length === 0) return;
  status.estimatedCostUsd = formatUsd(earlier.reduce((sum, a) => sum + Number(a.costUsd), current ?? 0));
}

function podCost(pod: RunpodRunStatus['pod'], now: Date): number | undefined {
  if (!pod?.createdAt || pod.costPerHour === undefined) return undefined;
  const end = pod.deletedAt ? Date.parse(pod.deletedAt) : now.getTime();
  return Number(pod.costPerHour) * Math.max(0, end - Date.parse(pod.createdAt)) / 3_600_000;
}

/** Before a new pod replaces the current one, its final spend goes into its attempt (exact, not rounded). */
export function retireCurrentPod(status: RunpodRunStatus): void {
  const pod = status.pod;
  const attempt = pod?.id ? status.attempts?.find((a) => a.podId === pod.id) : undefined;
  const cost = podCost(pod, new Date(pod?.deletedAt ?? pod?.createdAt ?? 0));
  if (attempt && cost !== undefined) attempt.costUsd = cost.toFixed(6);
}

/** Cents: finer would rewrite the status on every poll for no reader's benefit. */
export function formatUsd(value: number): string {
  return value.toFixed(2);
}
