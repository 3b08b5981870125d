// GET /v2/pods/{id}/logs (API-NOTES 2026-12 addendum, part 2): server-sent events `{ts, source, line}`,
// replayed (`tail`) and then open forever (runpodctl PR #325). The controller reads only the replay: the
// call ends once the stream goes quiet, or at a byte or time cap, so it costs one request of the budget.
import { z } from 'zod';
import type { CallOptions, CallSpec, RetryPolicy } from './call.ts';
import { RunpodError } from './errors.ts';
import { SseParser } from '../sse.ts';

export interface PodLogLine { ts: string; source: string; line: string }

export interface PodLogQuery {
  /** Both when absent. */
  source?: 'container' | 'system' | undefined;
  /** Lines from the end (Runpod's default 100, at most 5000). */
  tail?: number | undefined;
}

export interface PodLogs {
  /** The replayed lines (the stream read until quiet); `not-found` when Runpod has no such pod. */
  podLogs(id: string, query?: PodLogQuery, options?: CallOptions): Promise<PodLogLine[]>;
}

type Call = <T>(spec: CallSpec<T>, callOptions?: CallOptions) => Promise<T>;

const logLine = z.object({ ts: z.string(), source: z.string(), line: z.string() });
const POD_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** The replay comes at once: a second without an event ends it. */
const QUIET_MS = 1000;
const MAX_BYTES = 512 * 1024;

/** Events whose data is not a log line are skipped (a comment, a keep-alive, a field we do not know). */
export function parseLogEvents(text: string): PodLogLine[] {
  const lines: PodLogLine[] = [];
  for (const event of new SseParser().push(`${text}\n\n`)) {
    try {
      const parsed = logLine.safeParse(JSON.parse(event.data));
      if (parsed.success) lines.push(parsed.data);
    } catch {
      // Not JSON: not a log line.
    }
  }
  return lines;
}

export function createPodLogCall(call: Call, timeouts: { readMs: number }, retry: RetryPolicy): PodLogs {
  return {
    podLogs: (id, query = {}, options) => {
      if (!POD_ID.test(id)) return Promise.reject(new RunpodError({ kind: 'invalid', operation: 'podLogs', detail: 'pod id must be 1-64 letters, digits, _ or -' }));
      return call({
        operation: 'podLogs', priority: 'read',
        request: {
          method: 'GET', path: `/pods/${encodeURIComponent(id)}/logs`,
          query: { source: query.source, tail: query.tail === undefined ? undefined : String(query.tail) },
          timeoutMs: Math.min(timeouts.readMs, 15_000), stream: { quietMs: QUIET_MS, maxBytes: MAX_BYTES },
        },
        attempts: retry.readAttempts,
        parse: (a) => parseLogEvents(typeof a.body === 'string' ? a.body : ''),
      }, options);
    },
  };
}
