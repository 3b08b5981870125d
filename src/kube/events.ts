// An events.k8s.io/v1 recorder in the manner of client-go's tools/events: the first occurrence
// creates an Event; repeats of the same (object, type, reason, action, note) within a window become
// a `series` on that Event (count + lastObservedTime, PATCHed at most every few seconds) instead of
// new objects. Best effort throughout: a token bucket bounds the writes, and nothing here throws or
// makes a reconcile wait. Every note goes through redact().
import { EventsV1Api, PatchStrategy, V1MicroTime, type EventsV1Event, type KubeConfig, type V1ObjectReference } from '@kubernetes/client-node';
import { redact, type Logger } from '../log.ts';
import { realClock, type Clock, type TimerHandle } from './clock.ts';
import { describeError } from './errors.ts';
import { TokenBucket } from './rate-limit.ts';
import { requestOptions } from './request-options.ts';

const defaultReportingController = 'runpod-operator.dev/controller';

/** What an Event is about: any object as read (apiVersion, kind, metadata). */
export interface Regarding {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

export interface EventInput {
  type: 'Normal' | 'Warning';
  /** CamelCase, machine-readable (e.g. `PodCreated`). */
  reason: string;
  note: string;
  /** What was done or attempted (e.g. `CreatePod`); defaults to `Reconcile`. */
  action?: string;
  related?: Regarding;
}

export interface EventRecorderOptions {
  kubeConfig: KubeConfig;
  logger: Logger;
  /** This process (pod name); at most 128 characters. */
  reportingInstance: string;
  reportingController?: string;
  /** Global write budget (creates and series patches). */
  ratePerSecond?: number;
  burst?: number;
  /** A repeat later than this after the last occurrence starts a new Event (client-go: 6 min). */
  seriesWindowMs?: number;
  /** A series is patched at most this often; repeats in between only bump the count. */
  seriesPatchIntervalMs?: number;
  maxTracked?: number;
  clock?: Clock;
}

export interface EventRecorderStats {
  created: number;
  patched: number;
  /** Not written at all: over the rate limit. */
  dropped: number;
  failed: number;
}

interface Series {
  namespace: string;
  /** Known once the create succeeded. */
  name?: string;
  count: number;
  /** Count last written to the API server. */
  written: number;
  lastObserved: number;
  lastObservedTime: V1MicroTime;
  lastPatch: number;
  timer?: TimerHandle;
}

const noteLimitBytes = 1024;
const fieldLimit = 128;

/** Cuts to at most `max` UTF-8 bytes without splitting a character. */
export function truncateBytes(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  const ellipsis = '…';
  let out = Buffer.from(text).subarray(0, max - Buffer.byteLength(ellipsis)).toString('utf8');
  if (out.endsWith('\uFFFD')) out = out.slice(0, -1);
  while (Buffer.byteLength(out + ellipsis) > max) out = out.slice(0, -1);
  return out + ellipsis;
}

function reference(obj: Regarding): V1ObjectReference {
  const ref: V1ObjectReference = {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    name: obj.metadata?.name,
    namespace: obj.metadata?.namespace,
    uid: obj.metadata?.uid,
    resourceVersion: obj.metadata?.resourceVersion,
  };
  return Object.fromEntries(Object.entries(ref).filter(([, v]) => v !== undefined));
}

export class EventRecorder {
  readonly #opts: EventRecorderOptions;
  readonly #api: EventsV1Api;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #bucket: TokenBucket;
  readonly #series = new Map<string, Series>();
  readonly #inFlight = new Set<Promise<void>>();
  readonly #stats: EventRecorderStats = { created: 0, patched: 0, dropped: 0, failed: 0 };
  #seq = 0;

  constructor(opts: EventRecorderOptions) {
    this.#opts = opts;
    this.#api = opts.kubeConfig.makeApiClient(EventsV1Api);
    this.#log = opts.logger.child({ component: 'events' });
    this.#clock = opts.clock ?? realClock;
    this.#bucket = new TokenBucket({ ratePerSecond: opts.ratePerSecond ?? 5, burst: opts.burst ?? 25, clock: this.#clock });
  }

  /** Records an Event about `regarding`; returns at once and never throws. */
  record(regarding: Regarding, event: EventInput): void {
    try {
      this.#record(regarding, event);
    } catch (err) {
      this.#stats.failed++;
      this.#log.warn({ err: describeError(err), reason: event.reason }, 'could not record event');
    }
  }

  /** Writes every pending series update and waits for all writes in flight. */
  async flush(): Promise<void> {
    for (const series of this.#series.values()) {
      if (series.timer !== undefined && series.name) {
        this.#clock.clearTimeout(series.timer);
        series.timer = undefined;
        this.#track(this.#patch(series, true));
      }
    }
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
  }

  /** flush(), then forget every series (no timers left behind). */
  async close(): Promise<void> {
    await this.flush();
    for (const series of this.#series.values()) if (series.timer !== undefined) this.#clock.clearTimeout(series.timer);
    this.#series.clear();
  }

  stats(): EventRecorderStats {
    return { ...this.#stats };
  }

  #record(regarding: Regarding, event: EventInput): void {
    const name = regarding.metadata?.name;
    if (!name) throw new Error('the regarding object has no metadata.name');
    const namespace = regarding.metadata?.namespace || 'default';
    const action = truncateBytes(event.action ?? 'Reconcile', fieldLimit);
    const reason = truncateBytes(event.reason, fieldLimit);
    const note = truncateBytes(redact(event.note), noteLimitBytes);
    const key = JSON.stringify([regarding.metadata?.uid ?? `${namespace}/${name}`, regarding.kind, event.type, reason, action, note]);
    const now = this.#clock.now();

    const existing = this.#series.get(key);
    if (existing && now - existing.lastObserved < (this.#opts.seriesWindowMs ?? 6 * 60_000)) {
      existing.count++;
      existing.lastObserved = now;
      existing.lastObservedTime = new V1MicroTime();
      this.#schedulePatch(existing);
      return;
    }
    if (existing?.timer !== undefined) this.#clock.clearTimeout(existing.timer);
    this.#series.delete(key);
    if (!this.#bucket.tryTake()) {
      this.#stats.dropped++;
      this.#log.debug({ reason, regarding: `${namespace}/${name}` }, 'event dropped by the rate limit');
      return;
    }
    this.#evict();
    const series: Series = { namespace, count: 1, written: 1, lastObserved: now, lastObservedTime: new V1MicroTime(), lastPatch: now };
    this.#series.set(key, series);
    const body: EventsV1Event = {
      metadata: { name: this.#eventName(name), namespace },
      eventTime: new V1MicroTime(),
      reportingController: this.#opts.reportingController ?? defaultReportingController,
      reportingInstance: truncateBytes(this.#opts.reportingInstance, fieldLimit),
      action,
      reason,
      type: event.type,
      note,
      regarding: reference(regarding),
      ...(event.related ? { related: reference(event.related) } : {}),
    };
    this.#track(this.#create(key, series, body));
  }

  async #create(key: string, series: Series, body: EventsV1Event): Promise<void> {
    try {
      const created = await this.#api.createNamespacedEvent({ namespace: series.namespace, body }, requestOptions({ timeoutMs: 10_000 }));
      series.name = created.metadata?.name;
      this.#stats.created++;
      if (series.count > series.written) this.#schedulePatch(series);
    } catch (err) {
      this.#stats.failed++;
      if (this.#series.get(key) === series) this.#series.delete(key); // the next occurrence tries a fresh create
      this.#log.warn({ err: describeError(err), reason: body.reason }, 'could not create event');
    }
  }

  #schedulePatch(series: Series): void {
    if (series.timer !== undefined || !series.name) return; // already due, or the create will schedule it
    const interval = this.#opts.seriesPatchIntervalMs ?? 10_000;
    const wait = Math.max(0, series.lastPatch + interval - this.#clock.now());
    series.timer = this.#clock.setTimeout(() => {
      series.timer = undefined;
      this.#track(this.#patch(series, false));
    }, wait);
  }

  async #patch(series: Series, flushing: boolean): Promise<void> {
    if (!series.name || series.count <= series.written) return;
    if (!flushing && !this.#bucket.tryTake()) {
      series.lastPatch = this.#clock.now();
      this.#schedulePatch(series);
      return;
    }
    const count = series.count;
    series.lastPatch = this.#clock.now();
    try {
      await this.#api.patchNamespacedEvent(
        { namespace: series.namespace, name: series.name, body: { series: { count, lastObservedTime: series.lastObservedTime } } },
        requestOptions({ timeoutMs: 10_000, contentType: PatchStrategy.MergePatch }),
      );
      series.written = Math.max(series.written, count);
      this.#stats.patched++;
    } catch (err) {
      this.#stats.failed++;
      this.#log.warn({ err: describeError(err), event: series.name }, 'could not update event series');
    }
  }

  #track(p: Promise<void>): void {
    this.#inFlight.add(p);
    void p.finally(() => this.#inFlight.delete(p));
  }

  /** Drops the oldest series beyond the limit (Map order is insertion order). */
  #evict(): void {
    const max = this.#opts.maxTracked ?? 4096;
    for (const [key, series] of this.#series) {
      if (this.#series.size < max) return;
      if (series.timer !== undefined) this.#clock.clearTimeout(series.timer);
      this.#series.delete(key);
    }
  }

  /** client-go names Events `<object>.<unix nanos in hex>`; a sequence number keeps same-millisecond ones apart. */
  #eventName(objectName: string): string {
    const suffix = (BigInt(Date.now()) * 1_000_000n + BigInt(this.#seq++ % 1_000_000)).toString(16);
    return `${objectName.slice(0, 253 - suffix.length - 1)}.${suffix}`;
  }
}
