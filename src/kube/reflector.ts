// List + watch of one resource into an in-memory store, client-go's Reflector in small: paginated
// list, watch from the list's resourceVersion with bookmarks, relist on 410 Gone (emitting deletes
// for what vanished meanwhile), reconnect with backoff on every other failure, periodic resync.
// client-node's own informer is avoided on purpose: it stops for good on some errors.
import { Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../log.ts';
import { realClock, sleep, type Clock, type TimerHandle } from './clock.ts';
import { describeError, isGone } from './errors.ts';
import { keyOf } from './keys.ts';
import { listPage } from './list.ts';
import { RetryBackoff } from './rate-limit.ts';
import { watchOnce, type WatchFn, type WatchOutcome } from './watch.ts';

export type { WatchFn } from './watch.ts';

export interface ReflectorHandlers<T> {
  onAdd?(obj: T): void;
  /** Also called with `oldObj === newObj` on every periodic resync. */
  onUpdate?(oldObj: T, newObj: T): void;
  /** Gets the last state seen (the watch event's object, or the stored one after a relist). */
  onDelete?(obj: T): void;
}

export interface ReflectorOptions<T extends KubernetesObject> {
  kubeConfig: KubeConfig;
  /** Collection path, e.g. `/apis/runpod-operator.dev/v1alpha1/runpodruns` or `/api/v1/namespaces/ns/configmaps`. */
  path: string;
  labelSelector?: string;
  fieldSelector?: string;
  handlers: ReflectorHandlers<T>;
  log: Logger;
  /** LIST page size (`limit`). */
  pageSize?: number;
  /** Re-deliver every stored object through onUpdate this often (0: never). */
  resyncMs?: number;
  backoff?: { initialMs?: number; maxMs?: number; resetAfterMs?: number };
  /** The server ends each watch after this long (client-go: 5-10 min at random). */
  watchTimeoutSeconds?: () => number;
  /** Client side: a watch with no bytes (not even a bookmark) for this long is presumed dead. */
  inactivityTimeoutMs?: number;
  /** Applied to every object before it is stored; by default drops managedFields. */
  transform?: (obj: T) => T;
  watch?: WatchFn;
  clock?: Clock;
  random?: () => number;
}

/** Handlers that only pass the object's key on: what a level-based controller needs. */
export function keyHandlers(onKey: (key: string) => void): ReflectorHandlers<KubernetesObject> {
  const enqueue = (obj: KubernetesObject): void => onKey(keyOf(obj));
  return { onAdd: enqueue, onUpdate: (_old, obj) => enqueue(obj), onDelete: enqueue };
}

function dropManagedFields<T extends KubernetesObject>(obj: T): T {
  if (obj.metadata?.managedFields) delete obj.metadata.managedFields;
  return obj;
}

export class Reflector<T extends KubernetesObject> {
  readonly #opts: ReflectorOptions<T>;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #watch: WatchFn;
  readonly #transform: (obj: T) => T;
  readonly #backoff: RetryBackoff;
  readonly #random: () => number;
  readonly #stop = new AbortController();
  #store = new Map<string, T>();
  #resourceVersion: string | undefined;
  #synced = false;
  #syncWaiters: { resolve: () => void; reject: (err: Error) => void }[] = [];
  #currentWatch: AbortController | undefined;
  #resyncTimer: TimerHandle | undefined;
  #running: Promise<void> | undefined;

  constructor(opts: ReflectorOptions<T>) {
    this.#opts = opts;
    this.#log = opts.log.child({ reflector: opts.path, ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}) });
    this.#clock = opts.clock ?? realClock;
    this.#transform = opts.transform ?? dropManagedFields;
    if (opts.watch) {
      this.#watch = opts.watch;
    } else {
      const watch = new Watch(opts.kubeConfig);
      // Private in the typings; the 30 s default would cut quiet watches between the server's
      // bookmarks (about one a minute), forcing a reconnect every 30 s.
      (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = opts.inactivityTimeoutMs ?? 150_000;
      this.#watch = (path, query, onEvent, done) => watch.watch(path, query, onEvent, done);
    }
    const random = (this.#random = opts.random ?? Math.random);
    this.#backoff = new RetryBackoff({
      initialMs: opts.backoff?.initialMs ?? 800,
      maxMs: opts.backoff?.maxMs ?? 30_000,
      resetAfterMs: opts.backoff?.resetAfterMs ?? 120_000,
      clock: this.#clock,
      random,
    });
  }

  start(): void {
    if (this.#running) throw new Error('reflector already started');
    this.#running = this.#run();
    this.#scheduleResync();
  }

  /** Ends the watch and the loop; quiet (the AbortError client-node raises on abort is expected here). */
  async stop(): Promise<void> {
    if (this.#stop.signal.aborted) return this.#running;
    this.#currentWatch?.abort();
    this.#stop.abort();
    if (this.#resyncTimer !== undefined) this.#clock.clearTimeout(this.#resyncTimer);
    const waiters = this.#syncWaiters;
    this.#syncWaiters = [];
    for (const w of waiters) w.reject(new Error(`reflector ${this.#opts.path} stopped before it synced`));
    await this.#running;
  }

  /** True once the first full list has been stored and delivered. */
  hasSynced(): boolean {
    return this.#synced;
  }

  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.#synced) return Promise.resolve();
    if (this.#stop.signal.aborted) return Promise.reject(new Error(`reflector ${this.#opts.path} stopped`));
    return new Promise((resolve, reject) => {
      const waiter = { resolve, reject };
      this.#syncWaiters.push(waiter);
      signal?.addEventListener('abort', () => {
        this.#syncWaiters = this.#syncWaiters.filter((w) => w !== waiter);
        reject(new Error('waitForSync aborted'));
      }, { once: true });
    });
  }

  get(key: string): T | undefined {
    return this.#store.get(key);
  }

  list(): T[] {
    return [...this.#store.values()];
  }

  keys(): string[] {
    return [...this.#store.keys()];
  }

  /** The resourceVersion the next watch resumes from (undefined: the next step is a relist). */
  lastResourceVersion(): string | undefined {
    return this.#resourceVersion;
  }

  async #run(): Promise<void> {
    const stopped = this.#stop.signal;
    while (!stopped.aborted) {
      try {
        if (this.#resourceVersion === undefined) await this.#relist();
        const outcome = await this.#watchOnce(this.#resourceVersion as string);
        if (outcome === 'gone') {
          this.#log.info({ resourceVersion: this.#resourceVersion }, 'watch resourceVersion expired (410); relisting');
          this.#resourceVersion = undefined;
        }
      } catch (err) {
        if (stopped.aborted) break;
        if (isGone(err)) {
          this.#resourceVersion = undefined;
          this.#log.info({ err: describeError(err) }, 'resourceVersion expired (410); relisting');
        } else {
          this.#log.warn({ err: describeError(err) }, 'list/watch failed; retrying with backoff');
        }
      }
      if (stopped.aborted) break;
      await sleep(this.#clock, this.#backoff.next(), stopped);
    }
  }

  async #relist(): Promise<void> {
    const fresh = new Map<string, T>();
    let continueToken: string | undefined;
    let resourceVersion = '';
    do {
      const page = await listPage<T>(this.#opts.kubeConfig, this.#opts.path, {
        limit: this.#opts.pageSize ?? 500,
        continueToken,
        labelSelector: this.#opts.labelSelector,
        fieldSelector: this.#opts.fieldSelector,
      }, this.#stop.signal);
      for (const item of page.items) {
        const obj = this.#transform(item);
        fresh.set(keyOf(obj), obj);
      }
      continueToken = page.continueToken;
      resourceVersion = page.resourceVersion;
    } while (continueToken);

    const previous = this.#store;
    this.#store = fresh;
    this.#resourceVersion = resourceVersion;
    for (const [key, obj] of fresh) {
      const old = previous.get(key);
      if (!old) this.#emit('onAdd', obj);
      else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.#emit('onUpdate', old, obj);
    }
    for (const [key, old] of previous) if (!fresh.has(key)) this.#emit('onDelete', old);
    this.#log.debug({ objects: fresh.size, resourceVersion }, 'listed');
    if (!this.#synced) {
      this.#synced = true;
      const waiters = this.#syncWaiters;
      this.#syncWaiters = [];
      for (const w of waiters) w.resolve();
    }
  }

  #watchOnce(resourceVersion: string): Promise<WatchOutcome> {
    const query = {
      resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds: this.#opts.watchTimeoutSeconds?.() ?? Math.floor(300 + 300 * this.#random()),
      labelSelector: this.#opts.labelSelector,
      fieldSelector: this.#opts.fieldSelector,
    };
    return watchOnce(this.#watch, this.#opts.path, query, {
      signal: this.#stop.signal,
      log: this.#log,
      onEvent: (type, raw) => {
        this.#backoff.reset(); // the stream works: the next failure starts from the initial delay
        this.#apply(type, raw as T);
      },
      setCurrent: (controller) => {
        this.#currentWatch = controller;
      },
    });
  }

  #apply(type: string, raw: T): void {
    const resourceVersion = raw.metadata?.resourceVersion;
    switch (type) {
      case 'ADDED':
      case 'MODIFIED': {
        const obj = this.#transform(raw);
        const key = keyOf(obj);
        const old = this.#store.get(key);
        this.#store.set(key, obj);
        if (old) this.#emit('onUpdate', old, obj);
        else this.#emit('onAdd', obj);
        break;
      }
      case 'DELETED': {
        const obj = this.#transform(raw);
        this.#store.delete(keyOf(obj));
        this.#emit('onDelete', obj);
        break;
      }
      case 'BOOKMARK':
        break;
      default:
        this.#log.warn({ type }, 'unknown watch event type; ignored');
        return;
    }
    if (resourceVersion) this.#resourceVersion = resourceVersion;
  }

  #emit(handler: 'onAdd' | 'onDelete', obj: T): void;
  #emit(handler: 'onUpdate', oldObj: T, newObj: T): void;
  #emit(handler: keyof ReflectorHandlers<T>, a: T, b?: T): void {
    try {
      if (handler === 'onUpdate') this.#opts.handlers.onUpdate?.(a, b as T);
      else this.#opts.handlers[handler]?.(a);
    } catch (err) {
      this.#log.error({ err: describeError(err), handler }, 'event handler threw');
    }
  }

  #scheduleResync(): void {
    const every = this.#opts.resyncMs ?? 10 * 60_000;
    if (!(every > 0) || this.#stop.signal.aborted) return;
    this.#resyncTimer = this.#clock.setTimeout(() => {
      if (this.#synced) {
        for (const obj of this.#store.values()) this.#emit('onUpdate', obj, obj);
        this.#log.debug({ objects: this.#store.size }, 'resynced');
      }
      this.#scheduleResync();
    }, every);
  }
}

/** `/apis/<group>/<version>[/namespaces/<ns>]/<plural>`, or `/api/v1/...` for the core group. */
export function resourcePath(res: { group: string; version: string; plural: string; namespace?: string }): string {
  const base = res.group ? `/apis/${res.group}/${res.version}` : `/api/${res.version}`;
  return `${base}${res.namespace ? `/namespaces/${encodeURIComponent(res.namespace)}` : ''}/${res.plural}`;
}
