// One watch of a collection from a resourceVersion, until the server closes it, the resourceVersion
// expires (410 Gone), it fails, or the caller stops: the Reflector's inner step.
import type { Logger } from '../log.ts';
import { describeError, isAbort, isGone } from './errors.ts';

/** Watch.watch's shape: a seam for tests that need to interfere with the stream. */
export type WatchFn = (
  path: string,
  query: Record<string, string | number | boolean | undefined>,
  onEvent: (type: string, obj: unknown) => void,
  done: (err: unknown) => void,
) => Promise<AbortController>;

export type WatchOutcome = 'closed' | 'gone' | 'stopped';

interface StatusObject {
  kind?: string;
  code?: number;
  reason?: string;
  message?: string;
}

export interface WatchOnceOptions {
  /** Ends the watch at once ('stopped'), even while its request is still connecting. */
  signal: AbortSignal;
  log: Logger;
  /** Every event but ERROR (which ends the watch), in order. */
  onEvent: (type: string, raw: unknown) => void;
  /** The open watch's handle while it runs, undefined once it ended (the caller's stop aborts it). */
  setCurrent: (controller: AbortController | undefined) => void;
}

/** Resolves with how the watch ended; rejects with a failure the caller retries with backoff. */
export function watchOnce(watch: WatchFn, path: string, query: Record<string, string | number | boolean | undefined>, options: WatchOnceOptions): Promise<WatchOutcome> {
  const stopped = options.signal;
  if (stopped.aborted) return Promise.resolve('stopped'); // an abort event would never come
  return new Promise<WatchOutcome>((resolve, reject) => {
    let finished = false;
    let gone = false;
    let streamError: Error | undefined;
    let controller: AbortController | undefined;
    const finish = (outcome: WatchOutcome | Error): void => {
      if (finished) return;
      finished = true;
      stopped.removeEventListener('abort', onStop);
      controller?.abort(); // closes the stream (no-op if it already ended)
      options.setCurrent(undefined);
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    // Resolve at once on stop, even if the watch request itself is still connecting.
    const onStop = (): void => finish('stopped');
    stopped.addEventListener('abort', onStop, { once: true });

    const onEvent = (type: string, raw: unknown): void => {
      if (finished) return;
      if (type === 'ERROR') {
        const status = (raw ?? {}) as StatusObject;
        if (status.code === 410) gone = true;
        else streamError = new Error(`watch error event: ${status.code ?? '?'} ${status.reason ?? ''} ${status.message ?? ''}`.trim());
        controller?.abort();
        return;
      }
      options.onEvent(type, raw);
    };

    const done = (err: unknown): void => {
      if (gone) return finish('gone');
      if (streamError) return finish(streamError);
      if (err === null || err === undefined) return finish('closed');
      if (stopped.aborted && isAbort(err)) return finish('stopped');
      if (isGone(err)) return finish('gone');
      if ((err as { name?: unknown }).name === 'TimeoutError') {
        options.log.debug('watch idle past the inactivity timeout; reconnecting');
        return finish('closed');
      }
      finish(err instanceof Error ? err : new Error(describeError(err)));
    };

    watch(path, query, onEvent, done).then(
      (ctrl) => {
        controller = ctrl;
        if (finished || gone || streamError) ctrl.abort();
        else options.setCurrent(ctrl);
      },
      (err: unknown) => done(err),
    );
  });
}
