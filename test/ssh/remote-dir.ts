// A scratch directory on the test sshd's side, created and removed over SSH itself.
import assert from 'node:assert/strict';
import type { SshConnection } from '../../src/ssh/connect.ts';
import { exec } from '../../src/ssh/exec.ts';
import { shellQuote } from '../../src/ssh/shell.ts';

export async function makeRemoteTempDir(conn: SshConnection, prefix = 'rpo-ssh-test'): Promise<string> {
  const result = await exec(conn, `mktemp -d ${shellQuote(`/tmp/${prefix}-XXXXXX`)}`, { timeoutMs: 10_000 });
  assert.equal(result.code, 0, result.stderr.toString());
  return result.stdout.toString().trim();
}

export async function removeRemoteDir(conn: SshConnection, dir: string): Promise<void> {
  assert.match(dir, /^\/tmp\/rpo-/, 'refusing to remove a directory the tests did not create');
  await exec(conn, `rm -rf -- ${shellQuote(dir)}`, { timeoutMs: 60_000 });
}

/** Runs a shell snippet on the remote side and fails the test if it fails. */
export async function remoteSh(conn: SshConnection, command: string): Promise<string> {
  const result = await exec(conn, command, { timeoutMs: 60_000 });
  assert.equal(result.code, 0, `${command}: ${result.stderr.toString()}`);
  return result.stdout.toString();
}
