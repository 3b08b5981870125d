// The plugin's server-sent events parser against the rules of the HTML standard (§9.2.6): fields,
// comments, multi-line data, the last event id, retry, line ends split across chunks, a byte order mark.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SseParser } from '../src/sse.ts';

/** Feeds the text in pieces of `size` characters and collects every event. */
function parse(text: string, size = text.length): { events: ReturnType<SseParser['push']>; parser: SseParser } {
  const parser = new SseParser();
  const events = [];
  for (let at = 0; at < text.length; at += size) events.push(...parser.push(text.slice(at, at + size)));
  return { events, parser };
}

void test('events as Runpod sends them: id then data, a blank line ends each', () => {
  const text = 'id: 2026-12-04T20:18:21.553Z\ndata: {"ts":"2026-12-04T20:18:21.553Z","source":"system","line":"Started container"}\n\n' +
    'id: 2026-12-04T20:18:21.908Z\ndata: {"ts":"2026-12-04T20:18:21.908Z","source":"container","line":"sshd-started"}\n\n';
  for (const size of [1, 2, 7, text.length]) {
    const { events, parser } = parse(text, size);
    assert.deepEqual(events.map((event) => [event.type, event.lastEventId, (JSON.parse(event.data) as { line: string }).line]), [
      ['message', '2026-12-04T20:18:21.553Z', 'Started container'],
      ['message', '2026-12-04T20:18:21.908Z', 'sshd-started'],
    ], `in pieces of ${size}`);
    assert.equal(parser.lastEventId, '2026-12-04T20:18:21.908Z');
  }
});

void test('CRLF, CR and LF all end lines, also when a CRLF is split between chunks', () => {
  const text = '\uFEFFdata: a\r\ndata: b\r\rdata:c\n\nid: x\r\n\r\n';
  for (const size of [1, 3, text.length]) {
    const { events, parser } = parse(text, size);
    assert.deepEqual(events.map((event) => event.data), ['a\nb', 'c'], `in pieces of ${size}`);
    assert.equal(parser.lastEventId, 'x', 'an id alone sets the last event id without an event');
  }
});

void test('comments, unknown fields, an event type, a field without a colon, retry, and an id with NUL', () => {
  const { events, parser } = parse(': keep-alive\nevent: note\nfoo: bar\ndata\nid: one\n\nid: t\0wo\nretry: 2500\nretry: soon\ndata:  two spaces\n\ndata: left\n');
  assert.deepEqual(events, [
    { type: 'note', data: '', lastEventId: 'one' },
    { type: 'message', data: ' two spaces', lastEventId: 'one' },
  ]);
  assert.equal(parser.retryMs, 2500);
  assert.equal(parser.lastEventId, 'one', 'an id holding NUL is ignored');
});

void test('a blank line with no data dispatches nothing and resets the event type', () => {
  const { events } = parse('event: x\n\ndata: y\n\n');
  assert.deepEqual(events, [{ type: 'message', data: 'y', lastEventId: '' }]);
});
