// Server-sent events as the WHATWG HTML standard parses them (§9.2.6, "Interpreting an event stream"),
// fed text as it arrives: lines end with CRLF, LF or CR (a CR at a chunk's end may be half of a CRLF);
// a line starting with ":" is a comment; "field: value" (one leading space dropped), a line without a
// colon is a field with an empty value; `data` lines join with "\n"; an empty line dispatches the event
// if it has data; `id` (unless it holds NUL) sets the last event id, which outlives the event; `retry`
// is kept when all digits; other fields are ignored. A leading byte order mark is dropped.

export interface SseEvent {
  /** `event`, "message" when absent. */
  type: string;
  data: string;
  /** The last event id as of this event (the stream's, not only this event's). */
  lastEventId: string;
}

export class SseParser {
  private pending = '';
  private started = false;
  /** The previous chunk ended with CR: a LF first in the next one belongs to it. */
  private afterCr = false;
  private data: string[] = [];
  private type = '';
  private lastId = '';
  /** The reconnection time the server asked for (`retry`), if it did. */
  retryMs: number | undefined;

  get lastEventId(): string {
    return this.lastId;
  }

  /** The events completed by this text, in order. */
  push(text: string): SseEvent[] {
    let chunk = text;
    if (!this.started && chunk !== '') {
      this.started = true;
      if (chunk.startsWith('\uFEFF')) chunk = chunk.slice(1);
    }
    if (this.afterCr && chunk.startsWith('\n')) chunk = chunk.slice(1);
    this.afterCr = false;
    const lines = (this.pending + chunk).split(/\r\n|\r|\n/);
    this.pending = lines.pop() ?? '';
    // A CR ending the text ended a line already (split saw it); remember it for a LF to come.
    if (chunk.endsWith('\r')) this.afterCr = true;
    const events: SseEvent[] = [];
    for (const line of lines) {
      const event = this.line(line);
      if (event) events.push(event);
    }
    return events;
  }

  private line(line: string): SseEvent | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event': this.type = value; break;
      case 'data': this.data.push(value); break;
      case 'id': if (!value.includes('\0')) this.lastId = value; break;
      case 'retry': if (/^\d+$/.test(value)) this.retryMs = Number(value); break;
      default: break;
    }
    return undefined;
  }

  private dispatch(): SseEvent | undefined {
    const [data, type] = [this.data, this.type];
    this.data = [];
    this.type = '';
    if (data.length === 0) return undefined;
    return { type: type === '' ? 'message' : type, data: data.join('\n'), lastEventId: this.lastId };
  }
}
