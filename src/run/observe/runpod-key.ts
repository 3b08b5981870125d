// What a credentials Secret's bytes say as a Runpod API key. Surrounding whitespace (the trailing
// newline of `echo | base64` or `--from-file`, a CR, a space) is dropped, as kubectl users expect;
// anything else that cannot travel in an Authorization header is the run's own problem, described
// by position and kind of byte, never by value.

export type RunpodKeyVerdict =
  | { ok: true; apiKey: string }
  | { ok: false; empty: true }
  | { ok: false; empty: false; problem: string };

const isSurroundingSpace = (byte: number): boolean => byte === 0x20 || (byte >= 0x09 && byte <= 0x0d);
/** What an HTTP header value and a Runpod key may hold: visible ASCII, no space. */
const isKeyByte = (byte: number): boolean => byte >= 0x21 && byte <= 0x7e;
const hex = (byte: number): string => `0x${byte.toString(16).padStart(2, '0')}`;

export function readRunpodKey(bytes: Uint8Array): RunpodKeyVerdict {
  let start = 0;
  let end = bytes.length;
  while (start < end && isSurroundingSpace(bytes[start]!)) start++;
  while (end > start && isSurroundingSpace(bytes[end - 1]!)) end--;
  if (start === end) return { ok: false, empty: true };
  const key = bytes.subarray(start, end);
  const bad = key.findIndex((byte) => !isKeyByte(byte));
  if (bad < 0) return { ok: true, apiKey: Buffer.from(key).toString('ascii') };
  const byte = key[bad]!;
  const what = byte === 0x20 || isSurroundingSpace(byte) ? `whitespace (${hex(byte)}) inside it`
    : byte < 0x20 || byte === 0x7f ? `a control character (${hex(byte)})`
      : `a byte outside printable ASCII (${hex(byte)})`;
  const others = key.filter((b) => !isKeyByte(b)).length - 1;
  return { ok: false, empty: false, problem: `it contains ${what} at byte ${bad + 1}${others > 0 ? ` (and ${others} more such bytes)` : ''}` };
}

/** The printable runs of a rejected value: registered for redaction, so that no part of it is ever logged. */
export function printableRuns(bytes: Uint8Array): string[] {
  return Buffer.from(bytes).toString('latin1').split(/[^\x21-\x7e]+/).filter((run) => run.length >= 8);
}

/** What a run says when its key may not list pods: which call Runpod refused, and where the key is. */
export function listForbidden(detail: string | undefined, namespace: string, spec: { credentials: { secretName: string; key: string } } | undefined): string | undefined {
  if (detail === undefined) return undefined;
  const where = spec ? ` (Secret ${namespace}/${spec.credentials.secretName}, key ${spec.credentials.key})` : '';
  return `the Runpod API key${where} may not list pods, which the controller needs: ${detail}`;
}
