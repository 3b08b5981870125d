// The redaction set: what a run registers goes when the run ends (a value another owner holds stays),
// a multi-line secret is redacted line by line, the set is bounded (the oldest run entries go first,
// never the process's, and the caller is told), and every occurrence is covered, JSON-escaped too.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { createLogger, redact, registerSecret, registeredSecrets, releaseSecrets } from '../src/log.ts';
import { PROCESS_OWNER, SecretSet, withSecretOwner } from '../src/redaction.ts';

const SECRET_FILE = [
  '# team config',
  'endpoint: https://example.com',
  'token: tok_4f9a1c2e8b7d6a5f3e2c',
  'region: eu',
].join('\n');

test('a multi-line secret is redacted whole and line by line: one printed line of it is [REDACTED]', () => {
  registerSecret(SECRET_FILE, 'uid-lines');
  assert.equal(redact('Traceback: bad value token: tok_4f9a1c2e8b7d6a5f3e2c here'), 'Traceback: bad value [REDACTED] here');
  assert.equal(redact(`cat said:\n${SECRET_FILE}\nend`), 'cat said:\n[REDACTED]\nend');
  assert.equal(redact('region: eu'), 'region: eu', 'a line too short to be worth redacting is left');
  const lines: string[] = [];
  const logger = createLogger('info', { write: (line: string) => { lines.push(line); } });
  logger.info({ tail: `line one\n${SECRET_FILE}` }, 'job log');
  assert.ok(!lines.join('').includes('tok_4f9a1c2e8b7d6a5f3e2c'), lines.join(''));
  assert.ok(!lines.join('').includes('https://example.com'), 'the JSON-escaped whole value and its lines are redacted in a log line');
  releaseSecrets('uid-lines');
});

test('a finished run\'s secrets are released, a running run\'s stay, and a value another owner holds stays redacted', () => {
  const before = registeredSecrets();
  registerSecret('finished-run-secret-0123', 'uid-finished');
  registerSecret('running-run-secret-4567', 'uid-running');
  registerSecret('rpa_SHARED_ACCOUNT_KEY_89ab', 'uid-finished');
  registerSecret('rpa_SHARED_ACCOUNT_KEY_89ab', PROCESS_OWNER);
  assert.equal(registeredSecrets(), before + 3);
  releaseSecrets('uid-finished');
  assert.equal(registeredSecrets('uid-finished'), 0);
  assert.equal(registeredSecrets(), before + 2, 'the set shrinks');
  assert.equal(redact('x finished-run-secret-0123 y'), 'x finished-run-secret-0123 y', 'released: no longer redacted');
  assert.equal(redact('running-run-secret-4567'), '[REDACTED]', 'a running run\'s stay');
  assert.equal(redact('rpa_SHARED_ACCOUNT_KEY_89ab'), '[REDACTED]', 'the process still holds the account key');
  releaseSecrets('uid-running');
  assert.equal(registeredSecrets(), before + 1);
});

test('a registration without an owner belongs to the run whose scope it runs in, else to the process', async () => {
  await withSecretOwner('uid-scoped', async () => {
    await Promise.resolve();
    registerSecret('scoped-secret-value-0001');
  });
  registerSecret('process-secret-value-0002');
  assert.equal(registeredSecrets('uid-scoped'), 1);
  assert.ok(registeredSecrets(PROCESS_OWNER) >= 1);
  releaseSecrets('uid-scoped');
  assert.equal(redact('scoped-secret-value-0001'), 'scoped-secret-value-0001');
  assert.equal(redact('process-secret-value-0002'), '[REDACTED]');
});

test('the set is bounded: the run entries registered (or renewed) longest ago go first, the process\'s never, and the caller is told', () => {
  const told: [number, number][] = [];
  const set = new SecretSet({ maxEntries: 3, onBound: (dropped, size) => told.push([dropped, size]) });
  set.add('account-key-process-00', PROCESS_OWNER);
  set.add('run-a-secret-value-01', 'uid-a');
  set.add('run-b-secret-value-02', 'uid-b');
  set.add('run-a-secret-value-01', 'uid-a'); // renewed by a later reconcile of run a
  set.add('run-c-secret-value-03', 'uid-c');
  assert.equal(set.size, 3);
  assert.deepEqual(told, [[1, 3]]);
  assert.equal(set.redact('run-b-secret-value-02'), 'run-b-secret-value-02', 'the oldest run entry went');
  for (const kept of ['account-key-process-00', 'run-a-secret-value-01', 'run-c-secret-value-03']) assert.equal(set.redact(kept), '[REDACTED]', kept);
  assert.equal(set.ownedBy('uid-b'), 0);
});

test('every occurrence of every entry is covered; overlapping ones become one [REDACTED]', () => {
  const set = new SecretSet();
  set.add('abcdefgh1234', 'uid');
  set.add('efgh1234wxyz', 'uid');
  set.add('zzzzzzzz', 'uid');
  assert.equal(set.redact('1 abcdefgh1234wxyz 2 zzzzzzzzz 3 abcdefgh1234'), '1 [REDACTED] 2 [REDACTED] 3 [REDACTED]', 'zzzzzzzzz holds the entry twice, overlapping');
  assert.equal(set.redact('short'), 'short');
});

test('entries that share their beginnings, or are the beginning of one another: the longest present is covered, and removing one keeps the rest', () => {
  const set = new SecretSet();
  const entries = ['abcdefgh', 'abcdefghijkl', 'abcdefghijklmnopqrst', 'abcdefghijklmnopXYZ', 'abcdefghijklmnopqrstuvwxyz012'];
  for (const entry of entries) set.add(entry, 'uid');
  for (const entry of entries) assert.equal(set.redact(`<${entry}>`), '<[REDACTED]>', entry);
  assert.equal(set.redact('abcdefghijklmnopqrstuvwxyz01'), '[REDACTED]uvwxyz01', 'the longest entry that is there');
  set.release('uid');
  set.add('abcdefgh', 'a');
  set.add('abcdefghijkl', 'b');
  set.add('abcdefghijklmnopqrst', 'c');
  set.release('b');
  assert.equal(set.redact('abcdefghijkl'), '[REDACTED]ijkl');
  assert.equal(set.redact('abcdefghijklmnopqrst'), '[REDACTED]');
  set.release('c');
  set.release('a');
  assert.equal(set.size, 0);
  assert.equal(set.redact('abcdefghijklmnopqrst'), 'abcdefghijklmnopqrst');
});

test('the process-wide set at its bound logs an error with the counts, never a value', () => {
  // Its own process: the bound is the product's (MAX_SECRET_ENTRIES), and the log goes to stdout.
  const script = `
    import { MAX_SECRET_ENTRIES, registerSecret, registeredSecrets } from ${JSON.stringify(join(import.meta.dirname, '../src/log.ts'))};
    for (let i = 0; i <= MAX_SECRET_ENTRIES + 5; i++) registerSecret('bound-test-secret-' + String(i).padStart(7, '0'), 'uid-' + (i % 1000));
    console.log(JSON.stringify({ size: registeredSecrets(), max: MAX_SECRET_ENTRIES }));
  `;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  const lines = out.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
  const logged = lines.filter((line) => line.level === 'error');
  assert.equal(logged.length, 1, 'logged once (at most once a minute)');
  assert.match(String(logged[0]?.msg), /redaction set is full/);
  assert.equal(logged[0]?.dropped, 1);
  assert.ok(!out.includes('bound-test-secret-0000000'), 'no value in the log');
  // pino writes asynchronously: the script's own line may come before or after the error.
  const figures = lines.find((line) => line.level === undefined);
  assert.ok(figures && figures.size === figures.max, `the set stays at its bound: ${JSON.stringify(figures)}`);
});
