// A pod's log lines as GET /v2/pods/{id}/logs serves them (API-NOTES 2026-12 addendum, part 2):
// `container` lines (the container's stdout and stderr, split into lines) and `system` lines (the
// platform narrating create, image pull, container create, start, stop, exit and restart), each with
// its time. The time is the event's id, so ids are kept strictly increasing per pod: a line in the
// same millisecond as the one before it gets the next millisecond. Bounded: `pods.logLines` per
// source, oldest dropped first. Readers subscribe for what comes next; close() ends them (the pod
// was deleted, or the simulator stops).
import { StringDecoder } from 'node:string_decoder';

export type LogSource = 'container' | 'system';

export interface LogLine {
  /** Milliseconds since the epoch: the line's time and its event id. */
  at: number;
  source: LogSource;
  line: string;
}

/** What a reader asks for: the sources, and either lines after an id / since a time, or the last `tail`. */
export interface LogSelection {
  sources: ReadonlySet<LogSource>;
  /** Only lines with a later id (Last-Event-ID). */
  after?: number | undefined;
  /** Only lines at or after this time (since). */
  since?: number | undefined;
  /** The last this many lines; ignored when `after` or `since` is given. */
  tail: number;
}

export type LogListener = (line: LogLine | null) => void;

/** A longer line is cut into pieces of this many characters (a binary blob on stdout has no newline). */
const MAX_LINE = 16_384;

export class PodLog {
  private readonly lines: Record<LogSource, LogLine[]> = { container: [], system: [] };
  private readonly listeners = new Set<LogListener>();
  private last = 0;
  private closedFlag = false;
  private readonly maxLines: number;

  constructor(maxLines: number) {
    this.maxLines = maxLines;
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  add(source: LogSource, text: string): void {
    if (this.closedFlag) return;
    for (let at = 0; at < Math.max(1, text.length); at += MAX_LINE) this.push(source, text.slice(at, at + MAX_LINE));
  }

  system(text: string): void {
    this.add('system', text);
  }

  /** The lines a reader asked for, oldest first. */
  select(selection: LogSelection): LogLine[] {
    const { after, since } = selection;
    const chosen = [...selection.sources].flatMap((source) => this.lines[source].slice(-this.maxLines))
      .filter((line) => (after === undefined || line.at > after) && (since === undefined || line.at >= since))
      .sort((a, b) => a.at - b.at);
    if (after !== undefined || since !== undefined) return chosen;
    return selection.tail === 0 ? [] : chosen.slice(-selection.tail);
  }

  /** Calls `listener` with each new line, and with null once the log is closed. Returns the unsubscribe. */
  subscribe(listener: LogListener): () => void {
    if (this.closedFlag) {
      listener(null);
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    for (const listener of [...this.listeners]) listener(null);
    this.listeners.clear();
  }

  private push(source: LogSource, text: string): void {
    const entry: LogLine = { at: Math.max(Date.now(), this.last + 1), source, line: text };
    this.last = entry.at;
    const kept = this.lines[source];
    kept.push(entry);
    // Trimmed in batches (select reads only the last maxLines): a chatty container does not pay a
    // copy of the whole buffer per line.
    if (kept.length > this.maxLines + Math.ceil(this.maxLines / 4)) kept.splice(0, kept.length - this.maxLines);
    for (const listener of [...this.listeners]) listener(entry);
  }
}

/** Splits one output stream (stdout, or stderr) into lines: UTF-8 decoded across chunks, "\r\n" as "\n". */
export class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private partial = '';

  push(chunk: Buffer | string): string[] {
    this.partial += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    const parts = this.partial.split('\n');
    this.partial = parts.pop() ?? '';
    return parts.map((part) => part.replace(/\r$/, ''));
  }

  /** The stream ended: an unfinished last line still counts. */
  end(): string[] {
    const rest = this.partial + this.decoder.end();
    this.partial = '';
    return rest === '' ? [] : [rest.replace(/\r$/, '')];
  }
}
