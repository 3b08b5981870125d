import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connectPinned, type SshConnection } from '../../src/ssh/connect.ts';
import { SshError } from '../../src/ssh/errors.ts';
import { RemoteCommandError, exec, execChecked } from '../../src/ssh/exec.ts';
import { shellJoin, shellQuote } from '../../src/ssh/shell.ts';
import { startSshd, type TestSshd } from './sshd.ts';

const TRICKY = ['', 'plain', 'two words', "it's", '"double"', '$HOME', '`id`', '$(id)', 'a\nb', 'tab\there', '*', '~', 'A=b', '-n', '\\', "'", "''", 'ünïcödé', '; rm -rf /'];

void describe('exec over a real sshd', () => {
  let sshd: TestSshd;
  let conn: SshConnection;
  before(async () => {
    sshd = await startSshd();
    conn = await connectPinned(sshd.connectOptions());
  });
  after(async () => {
    conn.close();
    await sshd.stop();
  });

  void it('returns stdout, stderr and the exit code', async () => {
    const result = await exec(conn, 'echo out; echo err >&2; exit 7', { timeoutMs: 10_000 });
    assert.equal(result.code, 7);
    assert.equal(result.signal, null);
    assert.equal(result.stdout.toString(), 'out\n');
    assert.equal(result.stderr.toString(), 'err\n');
    assert.equal(result.stdoutTruncated, false);
    assert.equal(result.stderrTruncated, false);
  });

  void it('returns exit code 0 for success', async () => {
    const result = await exec(conn, 'true', { timeoutMs: 10_000 });
    assert.equal(result.code, 0);
    assert.equal(result.stdout.length, 0);
  });

  void it('reports a command killed by a signal', async () => {
    const result = await exec(conn, 'kill -TERM $$', { timeoutMs: 10_000 });
    assert.equal(result.code, null);
    assert.equal(result.signal, 'SIGTERM');
  });

  void it('keeps at most maxOutputBytes of each stream and flags the cut', async () => {
    const result = await exec(conn, 'head -c 300000 /dev/zero; head -c 5000 /dev/zero >&2', { timeoutMs: 10_000, maxOutputBytes: 4096 });
    assert.equal(result.code, 0);
    assert.equal(result.stdout.length, 4096);
    assert.equal(result.stdoutTruncated, true);
    assert.equal(result.stderr.length, 4096);
    assert.equal(result.stderrTruncated, true);
  });

  void it('reads the whole output by default when under 1 MiB', async () => {
    const result = await exec(conn, 'head -c 1048576 /dev/zero', { timeoutMs: 10_000 });
    assert.equal(result.stdout.length, 1048576);
    assert.equal(result.stdoutTruncated, false);
  });

  void it('feeds stdin and closes it', async () => {
    const result = await exec(conn, 'IFS= read -r A && IFS= read -r B && printf "%s|%s" "$A" "$B"; cat', { timeoutMs: 10_000, stdin: 'first line\nsecond\nrest' });
    assert.equal(result.stdout.toString(), 'first line|secondrest');
  });

  void it('closes stdin at once when there is none, so readers see end of file', async () => {
    const result = await exec(conn, 'cat; echo done', { timeoutMs: 10_000 });
    assert.equal(result.stdout.toString(), 'done\n');
  });

  void it('fails a command that outlives its timeout, and the connection stays usable', async () => {
    const err = await exec(conn, 'sleep 30', { timeoutMs: 300 }).then(
      () => assert.fail('expected a timeout'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof SshError);
    assert.equal(err.kind, 'timeout');
    const next = await exec(conn, 'echo still here', { timeoutMs: 10_000 });
    assert.equal(next.stdout.toString(), 'still here\n');
  });

  void it('execChecked throws RemoteCommandError with printable stderr on failure', async () => {
    await assert.rejects(execChecked(conn, 'printf "bad\\033[31m thing\\n" >&2; exit 3', 'the step', { timeoutMs: 10_000 }), (err: unknown) => {
      assert.ok(err instanceof RemoteCommandError);
      assert.equal(err.result.code, 3);
      assert.equal(err.message, 'the step failed (exit code 3): bad [31m thing');
      return true;
    });
  });

  void it('quotes arguments so the remote shell reads them back unchanged', async () => {
    const result = await exec(conn, `printf '%s\\0' ${shellJoin(TRICKY)}`, { timeoutMs: 10_000 });
    assert.equal(result.code, 0);
    assert.deepEqual(result.stdout.toString().split('\0').slice(0, -1), TRICKY);
  });

  void it('quotes for POSIX sh (dash) as well as the login shell', async () => {
    const inner = `printf '%s\\0' ${shellJoin(TRICKY)}`;
    const result = await exec(conn, `sh -c ${shellQuote(inner)}`, { timeoutMs: 10_000 });
    assert.deepEqual(result.stdout.toString().split('\0').slice(0, -1), TRICKY);
  });

  void it('refuses to quote a NUL', () => {
    assert.throws(() => shellQuote('a\0b'), TypeError);
  });

  void it('fails cleanly on a closed connection', async () => {
    const other = await connectPinned(sshd.connectOptions());
    other.close();
    await assert.rejects(exec(other, 'true', { timeoutMs: 10_000 }), (err: unknown) => err instanceof SshError && err.kind === 'closed');
  });

  void it('fails a running command whose connection drops, instead of hanging', async () => {
    const other = await connectPinned(sshd.connectOptions());
    const pending = exec(other, 'sleep 30', { timeoutMs: 60_000 });
    setImmediate(() => other.client.destroy());
    await assert.rejects(pending, (err: unknown) => err instanceof SshError && err.kind === 'closed');
  });
});
