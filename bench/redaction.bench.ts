// The redaction matcher at scale: 10^5 registered entries (secrets of many runs: keys, key-file lines,
// job secrets), then a 300-character log line scrubbed many times. Printed: the time to register, the
// time per line (one with a secret in it, one without), the index's worst case (many entries sharing
// their first 16 characters, a line that holds them: one config line in every run's file), and what the
// old way (one split per entry per line) costs at that size. Target: well under 1 ms a line.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { SecretSet } from '../src/redaction.ts';

const entries = Number(process.env.REDACTION_ENTRIES ?? 100_000);
const lineLength = 300;
const rounds = Number(process.env.REDACTION_ROUNDS ?? 2000);

const secret = (i: number): string => `${['rpa_', 'tok_', 'AKIA', 'sk-'][i % 4]}${randomBytes(12 + (i % 20)).toString('base64url')}`;
const values = Array.from({ length: entries }, (_, i) => secret(i));
const set = new SecretSet({ maxEntries: entries * 2 });
let started = performance.now();
values.forEach((value, i) => set.add(value, `uid-${Math.floor(i / 13)}`));
const registerMs = performance.now() - started;
const forms = set.size;

const filler = (n: number): string => 'x'.repeat(n);
const plain = `{"level":"info","time":"2026-12-02T10:00:00.000Z","run":"train","msg":"reconcile step ${filler(lineLength)}`.slice(0, lineLength);
const hidden = values[entries >> 1] ?? '';
const withSecret = `${plain.slice(0, 120)}${hidden}${plain.slice(120)}`.slice(0, lineLength);
if (!set.redact(withSecret).includes('[REDACTED]') || set.redact(withSecret).includes(hidden)) throw new Error('the secret was not redacted');

function perLineMs(line: string): number {
  for (let i = 0; i < 100; i++) set.redact(line); // warm up
  const from = performance.now();
  for (let i = 0; i < rounds; i++) set.redact(line);
  return (performance.now() - from) / rounds;
}
const cleanMs = perLineMs(plain);
const dirtyMs = perLineMs(withSecret);
const shared = Math.min(10_000, entries / 10);
for (let i = 0; i < shared; i++) set.add(`api_token_value=${randomBytes(9).toString('base64url')}`, `uid-shared-${i}`);
const sharedLine = `${plain.slice(0, 100)}api_token_value=not-a-registered-one${plain.slice(100)}`.slice(0, lineLength);
const sharedMs = perLineMs(sharedLine);

// The matcher it replaced: every entry split against the line, in turn.
started = performance.now();
const splitRounds = 20;
for (let r = 0; r < splitRounds; r++) {
  let out = withSecret;
  for (const value of values) out = out.split(value).join('[REDACTED]');
}
const splitMs = (performance.now() - started) / splitRounds;

console.log(`redaction: ${entries} entries (${forms} forms), registered in ${registerMs.toFixed(0)} ms`);
console.log(`  per ${lineLength}-character line, without a secret: ${(cleanMs * 1000).toFixed(1)} µs`);
console.log(`  per ${lineLength}-character line, with one:         ${(dirtyMs * 1000).toFixed(1)} µs`);
console.log(`  per line holding the first 16 characters of ${shared} entries: ${(sharedMs * 1000).toFixed(1)} µs`);
console.log(`  one split per entry (the former matcher):   ${(splitMs * 1000).toFixed(0)} µs`);
if (Math.max(cleanMs, dirtyMs) >= 1) {
  console.error('redaction: over 1 ms a line');
  process.exit(1);
}
