// `kubectl runpod cost`, `cancel` and `keep`: what the runs' status says they cost, and the two spec
// switches a person flips by hand (a merge patch, as `kubectl patch --type merge` would).
import type { RunpodRun } from '../api/runpodrun.ts';
import { listRuns, patchSpec, type Target } from './cluster.ts';

export interface CostRow { namespace: string; runs: number; gpuHours: number; costUsd: number }

/** Runs that started after `since` (all when undefined), per namespace, GPU-hours of their pods and estimatedCostUsd. */
export function costTable(runs: readonly RunpodRun[], now: Date, since?: Date): CostRow[] {
  const rows = new Map<string, CostRow>();
  for (const run of runs) {
    const created = run.metadata.creationTimestamp;
    const started = Date.parse(run.status?.startTime ?? (created instanceof Date ? created.toISOString() : created ?? ''));
    if (since && !(started >= since.getTime())) continue;
    const namespace = run.metadata.namespace ?? '';
    const row = rows.get(namespace) ?? { namespace, runs: 0, gpuHours: 0, costUsd: 0 };
    const pod = run.status?.pod;
    const from = Date.parse(pod?.createdAt ?? '');
    const to = pod?.deletedAt ? Date.parse(pod.deletedAt) : now.getTime();
    row.runs += 1;
    if (Number.isFinite(from) && to > from) row.gpuHours += ((to - from) / 3_600_000) * (pod?.gpuCount ?? 1);
    // Cents, as the status records them: no float drift in a sum of many runs.
    row.costUsd = Math.round((row.costUsd + (Number(run.status?.estimatedCostUsd ?? 0) || 0)) * 100) / 100;
    rows.set(namespace, row);
  }
  return [...rows.values()].sort((a, b) => a.namespace.localeCompare(b.namespace));
}

export function formatCostTable(rows: readonly CostRow[]): string {
  const total = rows.reduce((sum, row) => ({ namespace: 'TOTAL', runs: sum.runs + row.runs, gpuHours: sum.gpuHours + row.gpuHours, costUsd: sum.costUsd + row.costUsd }),
    { namespace: 'TOTAL', runs: 0, gpuHours: 0, costUsd: 0 });
  const lines = [['NAMESPACE', 'RUNS', 'GPU-HOURS', 'COST-USD'], ...[...rows, total].map((row) => [row.namespace, String(row.runs), row.gpuHours.toFixed(2), row.costUsd.toFixed(2)])];
  const widths = lines[0]?.map((_, column) => Math.max(...lines.map((line) => line[column]?.length ?? 0))) ?? [];
  return lines.map((line) => line.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('   ').trimEnd()).join('\n') + '\n';
}

export async function cost(target: Target, allNamespaces: boolean, since: Date | undefined, out: NodeJS.WritableStream): Promise<number> {
  out.write(formatCostTable(costTable(await listRuns(target, allNamespaces), new Date(), since)));
  return 0;
}

export async function setSpec(target: Target, name: string, spec: { cancel?: boolean; keepPod?: boolean }, out: NodeJS.WritableStream): Promise<number> {
  await patchSpec(target, name, spec);
  const what = spec.cancel !== undefined ? 'cancelled' : spec.keepPod ? 'kept (keepPod: true)' : 'no longer kept (keepPod: false)';
  out.write(`runpodrun.runpod-operator.dev/${name} ${what}\n`);
  return 0;
}
