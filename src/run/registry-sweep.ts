// The sweep of this install's Runpod registry credentials (spec.imagePullSecret, observe/registry-auth.ts):
// one that no run needs any more (a live read of the runs, after the account's list) for the whole stray
// grace is deleted. The grace covers a credential created a moment ago whose run has not written it to
// its status yet; Runpod itself refuses to delete one a pod still uses (400), which is said and retried
// at the next sweep. Credentials of other installs (another prefix) are never touched.
import type { Logger } from '../log.ts';
import { isRunpodError, type RunpodClient } from '../runpod/index.ts';
import { registryNamePrefix } from './observe/registry-auth.ts';
import type { Owner } from './ownership.ts';

export interface RegistrySweepOptions {
  /** This install: its credential names carry its prefix (registryNamePrefix). */
  owner: Owner;
  /** The credential names runs in scope still need, read live. */
  inUse: () => Promise<Set<string>>;
  graceMs: number;
  logger: Logger;
}

export class RegistrySweep {
  #options: RegistrySweepOptions;
  #prefix: string;
  /** Credential id → when a sweep first found it unneeded. */
  #unneededSince = new Map<string, number>();

  constructor(options: RegistrySweepOptions) {
    this.#options = options;
    this.#prefix = registryNamePrefix(options.owner.clusterId, options.owner.scope);
  }

  /** One account's credentials; true when a list, a read or a delete failed (swept again soon). */
  async sweep(accountId: string, client: Pick<RunpodClient, 'listRegistries' | 'deleteRegistry'>, signal: AbortSignal): Promise<boolean> {
    const { logger } = this.#options;
    const prefix = this.#prefix;
    try {
      const owned = (await client.listRegistries({ signal })).filter((registry) => registry.name.startsWith(prefix));
      if (owned.length === 0) return false;
      const needed = await this.#options.inUse();
      const now = Date.now();
      let failed = false;
      for (const registry of owned) {
        if (needed.has(registry.name)) {
          this.#unneededSince.delete(registry.id);
          continue;
        }
        const since = this.#unneededSince.get(registry.id) ?? now;
        this.#unneededSince.set(registry.id, since);
        if (now - since < this.#options.graceMs || signal.aborted) continue;
        try {
          await client.deleteRegistry(registry.id, { signal });
          this.#unneededSince.delete(registry.id);
          logger.info({ account: accountId, registry: registry.name }, 'deleted a registry credential no run needs any more');
        } catch (error) {
          if (isRunpodError(error, 'not-found')) {
            this.#unneededSince.delete(registry.id);
            continue;
          }
          logger.info({ err: error, account: accountId, registry: registry.name }, 'deleting a registry credential no run needs failed (a pod may still use it); trying again at the next sweep');
          failed = true;
        }
      }
      return failed;
    } catch (error) {
      if (!signal.aborted) logger.warn({ err: error, account: accountId }, 'the registry credential sweep of this account failed');
      return !signal.aborted;
    }
  }
}
