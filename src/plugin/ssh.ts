// `kubectl runpod ssh RUN [-- COMMAND...]`: the system ssh into the run's pod as root, trusting only the
// host key the run pinned: a known_hosts holding that one key and the run's client key, both 0600 in a
// private temp dir removed on exit. A pod whose sshd presents another key is refused by ssh itself.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shellJoin } from '../ssh/index.ts';
import { runDirOf } from '../pod/protocol.ts';
import { getRun, getSshKeys, type Target } from './cluster.ts';
import { PluginError } from './errors.ts';
import { reachablePod } from './pod.ts';

export async function ssh(target: Target, name: string, command: readonly string[]): Promise<number> {
  const run = await getRun(target, name);
  const pod = reachablePod(run);
  const keys = await getSshKeys(target, name);
  const dir = mkdtempSync(join(tmpdir(), 'kubectl-runpod-'));
  try {
    const identity = join(dir, 'id_ed25519');
    const knownHosts = join(dir, 'known_hosts');
    writeFileSync(identity, keys.clientPrivateKey.endsWith('\n') ? keys.clientPrivateKey : `${keys.clientPrivateKey}\n`, { mode: 0o600 });
    writeFileSync(knownHosts, `[${pod.host}]:${pod.port} ${keys.hostPublicKey}\n`, { mode: 0o600 });
    const args = [
      '-i', identity, '-p', String(pod.port),
      '-o', `UserKnownHostsFile=${knownHosts}`, '-o', 'GlobalKnownHostsFile=/dev/null', '-o', 'StrictHostKeyChecking=yes',
      '-o', 'HostKeyAlgorithms=ssh-ed25519', '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', 'PasswordAuthentication=no',
      '-o', 'KbdInteractiveAuthentication=no', '-o', 'LogLevel=ERROR', '-o', 'ConnectTimeout=20',
      // ssh would join the words with spaces for the remote shell; quoted, each reaches the pod as one argument (as kubectl exec's).
      // Both start in the run directory, where the job ran and its results are (as kubectl exec starts in the container's workdir).
      ...(command.length > 0 ? [] : ['-t']), `root@${pod.host}`, '--',
      `cd ${shellJoin([runDirOf(run.metadata.uid)])} 2>/dev/null; ${command.length > 0 ? shellJoin(command) : 'exec "${SHELL:-/bin/sh}" -l'}`,
    ];
    const code = await new Promise<number>((resolve, reject) => {
      const child = spawn('ssh', args, { stdio: 'inherit' });
      child.once('error', (error: NodeJS.ErrnoException) => reject(error.code === 'ENOENT' ? new PluginError('ssh is not installed (the OpenSSH client is needed)') : error));
      child.once('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 128 : 1)));
    });
    // ssh's own failures (host key, auth, network) are 255; anything else is the command's exit code.
    if (code === 255) throw new PluginError(`ssh to the pod of run "${name}" (${pod.name}, ${pod.host}:${pod.port}) failed; a host key other than the one the run pinned is refused`, 255);
    return code;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
