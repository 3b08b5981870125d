// GET /v2/pods/{id}/logs as server-sent events (API-NOTES 2026-12 addendum, part 2; runpodctl PR #325):
// each event `id: <ts>` and `data: {"ts","source","line"}`, ts RFC 3339 with milliseconds. Query
// `source=container|system` (both when absent), `tail` (default 100, 0 = live only, at most 5000;
// ignored with `since` or Last-Event-ID), `since` (RFC 3339); header Last-Event-ID resumes after that
// id. The stream replays, then stays open with every new line until the pod is deleted or the
// simulator stops; nothing else ends it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fail, type Reply } from './http.ts';
import type { LogLine, LogSelection, LogSource, PodLog } from './podlog.ts';
import { problem } from './problems.ts';

const DEFAULT_TAIL = 100;
const MAX_TAIL = 5000;
/** A reader this far behind (bytes written but not taken) is cut off rather than buffered without end. */
const MAX_UNREAD = 8 << 20;

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/** Milliseconds since the epoch of an RFC 3339 time, or undefined. */
export function parseRfc3339(value: string): number | undefined {
  if (!RFC3339.test(value)) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/** The reader's selection from the query and Last-Event-ID, or the 400 that refuses it. */
export function logSelection(query: URLSearchParams, lastEventId: string | undefined): { ok: true; selection: LogSelection } | { ok: false; reply: Reply } {
  const bad = (detail: string) => ({ ok: false as const, reply: fail(problem(400, detail)) });
  const source = query.get('source');
  if (source !== null && source !== 'container' && source !== 'system') return bad(`source must be container or system, not ${JSON.stringify(source)}`);
  const sources = new Set<LogSource>(source === null ? ['container', 'system'] : [source]);
  const tailText = query.get('tail');
  const tail = tailText === null ? DEFAULT_TAIL : /^\d{1,9}$/.test(tailText) ? Number(tailText) : NaN;
  if (!(tail >= 0 && tail <= MAX_TAIL)) return bad(`tail must be a whole number from 0 to ${MAX_TAIL}, not ${JSON.stringify(tailText)}`);
  const sinceText = query.get('since');
  const since = sinceText === null ? undefined : parseRfc3339(sinceText);
  if (sinceText !== null && since === undefined) return bad(`since must be an RFC 3339 time such as 2026-12-01T12:00:00Z, not ${JSON.stringify(sinceText)}`);
  const resume = lastEventId === undefined || lastEventId === '' ? undefined : parseRfc3339(lastEventId);
  if (lastEventId !== undefined && lastEventId !== '' && resume === undefined) {
    return bad(`Last-Event-ID must be an event id of this stream (an RFC 3339 time), not ${JSON.stringify(lastEventId)}`);
  }
  return { ok: true, selection: { sources, since, after: resume, tail } };
}

/** One event: its id is its time. */
export function logEvent(line: LogLine): string {
  const ts = new Date(line.at).toISOString();
  return `id: ${ts}\ndata: ${JSON.stringify({ ts, source: line.source, line: line.line })}\n\n`;
}

/** The stream of a pod's log for one reader: what it asked for, then every new line that matches. */
export function logStream(req: IncomingMessage, query: URLSearchParams, log: PodLog): Reply {
  const header = req.headers['last-event-id'];
  const parsed = logSelection(query, Array.isArray(header) ? header[0] : header);
  if (!parsed.ok) return parsed.reply;
  const { selection } = parsed;
  const open = (res: ServerResponse): void => {
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' });
    res.flushHeaders();
    const send = (line: LogLine): void => {
      if (res.destroyed) return;
      res.write(logEvent(line));
      if (res.writableLength > MAX_UNREAD) res.destroy();
    };
    // Replay and subscribe in one turn of the event loop: no line can fall between them.
    for (const line of log.select(selection)) send(line);
    const unsubscribe = log.subscribe((line) => {
      if (line === null) {
        res.end();
        return;
      }
      const { sources, after, since } = selection;
      if (sources.has(line.source) && (after === undefined || line.at > after) && (since === undefined || line.at >= since)) send(line);
    });
    res.once('close', unsubscribe);
  };
  return { kind: 'stream', status: 200, open };
}
