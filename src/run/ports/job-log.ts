// job.log is the job's stdout and stderr, and a process the job left behind (nohup, tensorboard,
// `nvidia-smi dmon &`) may still append to it while the results are taken. So the log is taken as it
// was when its size was read: the hash covers exactly those first bytes, the copy stops there, and a
// log that keeps growing never fails a retrieval whose results are verified.
import { podPath } from '../../pod/index.ts';
import { exec, shellQuote, type ManifestFile, type SshConnection } from '../../ssh/index.ts';

const commandTimeout = { timeoutMs: 30_000 };

export interface JobLog { remotePath: string; file: ManifestFile }

/** The log's size now and the SHA-256 of that many first bytes; undefined when the job wrote none. */
export async function describeJobLog(ssh: SshConnection, stateDir: string, signal?: AbortSignal): Promise<JobLog | undefined> {
  const remotePath = podPath(stateDir, 'jobLog');
  const command = `f=${shellQuote(remotePath)}; [ -f "$f" ] || exit 3; s=$(wc -c < "$f") || exit 1; s=$((s)); `
    + 'h=$(head -c "$s" < "$f" | sha256sum) || exit 1; echo "${h%% *} $s"';
  const described = await exec(ssh, command, { ...commandTimeout, ...(signal ? { signal } : {}) });
  const match = described.code === 0 ? /^([0-9a-f]{64}) (\d+)\s*$/.exec(described.stdout.toString('utf8')) : null;
  if (!match) return undefined;
  return { remotePath, file: { path: 'job.log', sha256: match[1] as string, size: Number(match[2]) } };
}
