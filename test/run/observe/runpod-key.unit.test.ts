// A credentials Secret's bytes as a Runpod API key: surrounding whitespace is trimmed, anything else
// that cannot go into an Authorization header is described by position and kind, never by value.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { printableRuns, readRunpodKey } from '../../../src/run/observe/runpod-key.ts';

const key = 'rpa_ABCDEF0123456789abcdef';
const bytes = (text: string): Buffer => Buffer.from(text, 'latin1');

test('a trailing newline, CRLF, tab or surrounding spaces are trimmed', () => {
  for (const value of [`${key}\n`, `${key}\r\n`, `  ${key}\t`, `\n${key}\n\n`, key]) {
    assert.deepEqual(readRunpodKey(bytes(value)), { ok: true, apiKey: key }, JSON.stringify(value));
  }
});

test('only whitespace is an empty key', () => {
  assert.deepEqual(readRunpodKey(bytes(' \n')), { ok: false, empty: true });
  assert.deepEqual(readRunpodKey(bytes('')), { ok: false, empty: true });
});

test('an embedded control character, space or non-ASCII byte is named by position and kind, never by value', () => {
  const cases: [string, RegExp][] = [
    ['rpa_BAD\x01KEY_DO_NOT_LOG', /a control character \(0x01\) at byte 8$/],
    ['rpa_BAD KEY\x7fDO_NOT_LOG', /whitespace \(0x20\) inside it at byte 8 \(and 1 more such bytes\)$/],
    ['rpa_BAD\u00e9KEY_DO_NOT_LOG', /a byte outside printable ASCII \(0xe9\) at byte 8$/],
    ['rpa_BAD\nKEY_DO_NOT_LOG\n', /whitespace \(0x0a\) inside it at byte 8$/],
  ];
  for (const [value, expected] of cases) {
    const verdict = readRunpodKey(bytes(value));
    assert.equal(verdict.ok, false);
    assert.ok(!verdict.ok && !verdict.empty);
    assert.match(verdict.problem, expected);
    assert.ok(!verdict.problem.includes('BAD') && !verdict.problem.includes('DO_NOT_LOG'), verdict.problem);
  }
});

test('the printable runs of a rejected value (for redaction)', () => {
  assert.deepEqual(printableRuns(bytes('rpa_BAD\x01KEY_DO_NOT_LOG\n')), ['KEY_DO_NOT_LOG']);
  assert.deepEqual(printableRuns(bytes('rpa_LONGER_PART\x01short')), ['rpa_LONGER_PART']);
});
