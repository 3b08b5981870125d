// What the suite knows of its runs as the session goes: the plan, the uid once applied, and the
// latest object the API server showed (polled; a watch would save little at this scale).
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { group, plural, version, type RunpodRun } from '../../src/api/runpodrun.ts';
import type { PlannedRun } from './workload.ts';

export interface RunEntry {
  planned: PlannedRun;
  uid?: string;
  /** When the apply that created it returned (epoch ms): only a list begun after that can miss it for gone. */
  appliedAt?: number;
  latest?: RunpodRun;
  /** The run is no longer listed (deleted and its finalizer gone). */
  gone: boolean;
  deleteRequested: boolean;
  /** bad-key runs: seen waiting Pending/CredentialsInvalid before the user deleted them. */
  heldInvalid?: boolean;
}

export class RunBook {
  readonly entries = new Map<string, RunEntry>();
  readonly #objects: CustomObjectsApi;
  readonly #namespace: string;

  constructor(kubeConfig: KubeConfig, namespace: string, planned: PlannedRun[]) {
    this.#objects = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#namespace = namespace;
    for (const run of planned) this.entries.set(run.name, { planned: run, gone: false, deleteRequested: false });
  }

  byUid(uid: string): RunEntry | undefined {
    return [...this.entries.values()].find((entry) => entry.uid === uid);
  }

  async get(name: string): Promise<RunpodRun | undefined> {
    try {
      return await this.#objects.getNamespacedCustomObject({ group, version, namespace: this.#namespace, plural, name }) as RunpodRun;
    } catch {
      return undefined;
    }
  }

  async list(): Promise<RunpodRun[]> {
    const list = await this.#objects.listNamespacedCustomObject({ group, version, namespace: this.#namespace, plural }) as { items: RunpodRun[] };
    return list.items;
  }

  /** The apply of `name` returned `uid`. */
  applied(name: string, uid: string): RunEntry {
    const entry = this.entries.get(name)!;
    entry.uid = uid;
    entry.appliedAt = Date.now();
    return entry;
  }

  /** One poll: every applied run either listed (latest updated) or gone. */
  async refresh(): Promise<void> {
    const startedAt = Date.now();
    takeListing(this.entries.values(), await this.list(), startedAt);
  }
}

/**
 * A list begun at `startedAt`: each run it shows is the latest; a run it misses is gone, unless its
 * apply returned after the list began (the list may predate it: such a run, marked gone, would escape
 * every invariant that skips deleted runs).
 */
export function takeListing(entries: Iterable<RunEntry>, items: readonly RunpodRun[], startedAt: number): void {
  const listed = new Map(items.map((run) => [run.metadata.name, run]));
  for (const entry of entries) {
    if (!entry.uid) continue;
    const run = listed.get(entry.planned.name);
    if (run) entry.latest = run;
    else if ((entry.appliedAt ?? Infinity) < startedAt) entry.gone = true;
  }
}

export const isTerminalPhase = (run: RunpodRun | undefined): boolean =>
  run?.status?.phase === 'Succeeded' || run?.status?.phase === 'Failed';

export const outcomeOf = (entry: RunEntry): string => {
  if (!entry.uid) return 'not applied';
  if (entry.gone) return 'deleted';
  const status = entry.latest?.status;
  const text = `${status?.phase ?? 'none'}/${status?.reason ?? 'none'}`;
  return entry.latest?.metadata.deletionTimestamp ? `${text} (deleting)` : text;
};
