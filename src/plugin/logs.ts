// `kubectl runpod logs RUN [-f] [--tail N]`: the job's output. While the pod lives it is read over SSH
// (job.log on the pod); with -f it is followed until the job ends, then the exit code is said on stderr.
// After the pod is gone the log is with the results: where, in one sentence.
import type { RunpodRun } from '../api/runpodrun.ts';
import { exec, shellQuote, type SshConnection } from '../ssh/index.ts';
import { getRun, type Target } from './cluster.ts';
import { PluginError } from './errors.ts';
import { connectToRunPod, podFile } from './pod.ts';

export interface LogsOptions {
  follow: boolean;
  /** Lines from the end to start with; -1: all. */
  tail: number;
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
  /** How often a followed log is read again. */
  everyMs?: number;
}

/** Bytes read per look: a job printing faster than this is caught up over several looks, never dropped. */
const chunkBytes = 1024 * 1024;

export async function logs(target: Target, name: string, options: LogsOptions): Promise<number> {
  const run = await getRun(target, name);
  if (isGone(run)) throw new PluginError(whereTheLogIs(run));
  const { connection } = await connectToRunPod(target, run);
  try {
    const [log, exitFile] = [podFile(run, 'jobLog'), podFile(run, 'jobExit')];
    let { bytes, size, exit } = await look(connection, firstLook(log, exitFile, options.tail));
    options.out.write(bytes);
    let offset = size;
    while (options.follow && !(exit !== undefined && offset >= size)) {
      if (offset >= size) await new Promise((resolve) => setTimeout(resolve, options.everyMs ?? 1000));
      ({ bytes, size, exit } = await look(connection, nextLook(log, exitFile, offset)));
      options.out.write(bytes);
      offset += bytes.length;
    }
    if (exit !== undefined && options.follow) options.err.write(`the job exited with code ${exit}\n`);
    return 0;
  } finally {
    connection.close();
  }
}

interface Look { bytes: Buffer; size: number; exit: string | undefined }

/**
 * One exec: the exit code is read before the size, so once it is there every byte the job wrote is
 * within the size. stderr carries "size exit" (exit "-" while the job runs or before it started).
 */
async function look(connection: SshConnection, command: string): Promise<Look> {
  let result;
  try {
    result = await exec(connection, command, { timeoutMs: 60_000, maxOutputBytes: chunkBytes + 65_536 });
  } catch (error) {
    throw new PluginError(`the connection to the pod ended while reading the job's log: ${error instanceof Error ? error.message : String(error)}`);
  }
  const [size = '0', exit = '-'] = result.stderr.toString('utf8').trim().split(/\s+/).slice(-2);
  const known = exit === '-' ? undefined : exit;
  return { bytes: result.stdout, size: Number(size) || 0, exit: known };
}

const statusOf = (exitFile: string) => `e=$(cat ${shellQuote(exitFile)} 2>/dev/null); [ -n "$e" ] || e=-`;
const sizeOf = (log: string) => `n=$(wc -c < ${shellQuote(log)} 2>/dev/null || echo 0)`;

function firstLook(log: string, exitFile: string, tail: number): string {
  const lines = tail < 0 ? `head -c "$n" ${shellQuote(log)}` : `head -c "$n" ${shellQuote(log)} | tail -n ${tail}`;
  return `${statusOf(exitFile)}; ${sizeOf(log)}; [ "$n" -gt 0 ] 2>/dev/null && ${lines}; printf '%s %s\\n' "$n" "$e" >&2`;
}

function nextLook(log: string, exitFile: string, offset: number): string {
  return `${statusOf(exitFile)}; ${sizeOf(log)}; [ "$n" -gt ${offset} ] 2>/dev/null && tail -c +${offset + 1} ${shellQuote(log)} | head -c ${chunkBytes}; printf '%s %s\\n' "$n" "$e" >&2`;
}

const isGone = (run: RunpodRun): boolean => run.status?.pod?.state === 'Deleted' || (run.status?.pod === undefined && run.status?.results?.location !== undefined);

function whereTheLogIs(run: RunpodRun): string {
  const { name } = run.metadata;
  const location = run.status?.results?.location;
  if (location) return `the pod of run "${name}" is gone; the job's log was retrieved with its results: ${location.replace(/\/?$/, '/')}job.log`;
  return `the pod of run "${name}" is gone and no results were retrieved, so its log went with it${run.status?.message ? ` (${run.status.phase ?? ''}: ${run.status.message})` : ''}`;
}
