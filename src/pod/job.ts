// The commands the controller runs on a pod over SSH (one string each, for the remote login shell)
// and the parsers of what they print. Each prints one line starting with its own tag, so the
// parsers ignore anything else a login shell might print. File names: protocol.ts / protocol.md.
//
// The job runs under a small sh supervisor in its own session (setsid): it survives the SSH session
// and the controller, and it records the pid, the end time and the exit code itself. The job gets a
// session of its own too, so that a cancel signals the job's process group and never the supervisor.
// The job writes to job.log itself; the supervisor copies job.log, as it grows, to the container's
// stdout (PID 1's), so that Runpod's console and the `container` lines of its log stream show it.
import { z } from 'zod';
import { shellJoin, shellQuote } from '../ssh/shell.ts';
import { DEFAULT_RUN_DIR, DEFAULT_STATE_DIR, POD_FILES } from './protocol.ts';
import { taggedLine } from './tagged-line.ts';

/** The shells the on-pod scripts are written for (all POSIX sh). */
export const POD_SHELLS = ['sh', 'dash', 'bash --posix'] as const;
export type PodShell = (typeof POD_SHELLS)[number];

const shellSchema = z.enum(POD_SHELLS).default('sh');

/** An absolute path that cannot walk out of itself (quoted wherever it is used: any other byte is fine). */
const absolutePath = z
  .string()
  .regex(/^\/[^\0\n\r]*$/, 'an absolute path on one line')
  .refine((path) => !path.split('/').includes('..'), 'no .. components');
/** The run's directory on the pod (the job's working files and results). */
export const runDirSchema = absolutePath.default(DEFAULT_RUN_DIR);
/** The pod's state directory, on the container's own disk (stateDirOf). */
export const stateDirSchema = absolutePath.default(DEFAULT_STATE_DIR);

const envNameSchema = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name');
const envValueSchema = z.string().refine((value) => !value.includes('\0'), 'no NUL bytes');

export const START_TAG = 'runpod-operator-start';
export const CANCEL_TAG = 'runpod-operator-cancel';
export const RETRIEVED_TAG = 'runpod-operator-retrieved';
export const KEEP_TAG = 'runpod-operator-keep';
export const ENV_TAG = 'runpod-operator-env';
export const GRACE_TAG = 'runpod-operator-grace';

/** Relative to the pod's state directory, which every command enters first. */
const F = POD_FILES;

function enterStateDir(stateDir: string, tag: string): string {
  return `cd ${shellQuote(stateDir)} 2>/dev/null || { echo '${tag} failed no-state-directory'; exit 1; }`;
}

function writeAtomically(file: string, value: string): string {
  return `printf '%s\\n' ${value} >${file}.tmp && mv -f ${file}.tmp ${file}`;
}

/**
 * The job's environment file (job.env in the state directory): one `export NAME='value'` per variable. The controller
 * writes it with mode 0600 (SFTP, or writeJobEnvCommand with this text on stdin), never on a
 * command line, and never logs it.
 */
export function jobEnvFile(env: Record<string, string> | readonly (readonly [string, string])[]): string {
  const entries = Array.isArray(env) ? env : Object.entries(env as Record<string, string>);
  return entries
    .map(([name, value]) => `export ${envNameSchema.parse(name)}='${envValueSchema.parse(value).replace(/'/g, `'\\''`)}'\n`)
    .join('');
}

/** Writes stdin to job.env in the state directory (0600, atomically). Prints `runpod-operator-env ok`. */
export function writeJobEnvCommand(options: { stateDir?: string } = {}): string {
  const stateDir = stateDirSchema.parse(options.stateDir);
  return [
    enterStateDir(stateDir, ENV_TAG),
    `umask 077 && cat >${F.jobEnv}.tmp && chmod 600 ${F.jobEnv}.tmp && mv -f ${F.jobEnv}.tmp ${F.jobEnv} && echo '${ENV_TAG} ok'`,
  ].join('\n');
}

/**
 * PID 1's stdout: the container's log (Runpod's console, the `container` lines of GET
 * /v2/pods/{id}/logs). A pipe, reopened by its /proc path.
 */
export const CONTAINER_STDOUT = '/proc/1/fd/1';

const startJobOptionsSchema = z.strictObject({
  runDir: runDirSchema,
  stateDir: stateDirSchema,
  /** Where job.log is copied as it grows (the container's stdout); a test run outside a pod names a file. */
  console: absolutePath.default(CONTAINER_STDOUT),
  /** Exec form, run in the run directory. */
  command: z.array(z.string().refine((arg) => !arg.includes('\0'), 'no NUL bytes')).min(1),
  shell: shellSchema,
});
export type StartJobOptions = z.input<typeof startJobOptionsSchema>;

/**
 * Starts the job detached, at most once (job.started is created exclusively). Prints one of
 * `runpod-operator-start started <unix>`, `... already-started`, `... cancelled` (a cancel came
 * first), `... failed <why>`. Returns at once: the job's output goes to job.log in the state directory;
 * the job itself runs in the run directory.
 */
export function startJobCommand(options: StartJobOptions): string {
  const { runDir, stateDir, command, shell, console: consolePath } = startJobOptionsSchema.parse(options);
  // The job's own shell reads the image's env, then the job's, then execs the command: the
  // supervisor's env stays untouched, so a job PATH cannot hide mv or date from it.
  const jobShell = [
    `if [ -f ${F.imageEnv} ]; then . ./${F.imageEnv}; fi`,
    // rm is found before the job's env can change PATH.
    'runpod_operator_rm=$(command -v rm)',
    `if [ -f ${F.jobEnv} ]; then . ./${F.jobEnv}; fi`,
    // The job's secrets leave the disk once its shell holds them: no result set, later run or
    // shared volume can pick them up from there.
    `"$runpod_operator_rm" -f ./${F.jobEnv}; unset runpod_operator_rm`,
    // The job works in the run directory; the state directory is not named to it anywhere.
    `cd ${shellQuote(runDir)} || exit 126`,
    'exec "$@"',
  ].join('\n');
  const supervisor = [
    `printf '%s\\n' "$$" >${F.jobSupervisor}`,
    `setsid ${shell} -c ${shellQuote(jobShell)} runpod-operator-job "$@" </dev/null &`,
    'pid=$!',
    writeAtomically(F.jobPid, '"$pid"'),
    consoleCopy(consolePath),
    'wait "$pid"',
    'code=$?',
    writeAtomically(F.jobEnded, '"$(date +%s)"'),
    writeAtomically(F.jobExit, '"$code"'),
  ].join('\n');
  return [
    enterStateDir(stateDir, START_TAG),
    `[ -d ${shellQuote(runDir)} ] || { rm -f ${F.jobEnv}; echo '${START_TAG} failed no-run-directory'; exit 1; }`,
    `if [ -e ${F.jobCancelled} ]; then rm -f ${F.jobEnv}; echo '${START_TAG} cancelled'; exit 0; fi`,
    `if ! (set -C; : >${F.jobStarted}) 2>/dev/null; then rm -f ${F.jobEnv}; echo '${START_TAG} already-started'; exit 0; fi`,
    't=$(date +%s)',
    `printf '%s\\n' "$t" >${F.jobStarted}`,
    `setsid ${shell} -c ${shellQuote(supervisor)} runpod-operator-supervisor ${shellJoin(command)} </dev/null >>${F.jobLog} 2>&1 &`,
    `echo "${START_TAG} started $t"`,
  ].join('\n');
}

/**
 * The console copy, in the background of the supervisor: every second, what job.log gained since the
 * last look (taken only when job.log changed since: job.look holds that look's time), to `target`; once
 * job.exit is there (checked before the look, so every byte the job wrote is in job.log), a last look,
 * then it ends. job.log itself is never touched: the job writes to it directly, and the copy's own
 * failures (no console, a reader gone) go nowhere. Bytes, not lines: a line in two looks reaches the
 * console in two writes, in order.
 */
function consoleCopy(target: string): string {
  const loop = [
    'o=0',
    'while :; do',
    "  l=''",
    `  if [ -e ${F.jobExit} ]; then l=1; fi`,
    // No look while job.look is newer than job.log (reading the size is a process: a quiet job costs its
    // pod one a second, the sleep). The same time counts as a change: file times tick coarsely. A look
    // newer than job.tick, touched now, was dated by a clock since stepped back: it proves nothing. A
    // shell whose test cannot tell looks every time.
    `  : >${F.jobTick}`,
    `  if [ -n "$l" ] || ! [ ${F.jobLook} -nt ${F.jobLog} ] || [ ${F.jobLook} -nt ${F.jobTick} ]; then`,
    // Before the size: a write after this instant makes job.log newer, for the next look.
    `    : >${F.jobLook}`,
    `    s=$(($(wc -c <${F.jobLog})))`,
    `    if [ "$s" -gt "$o" ] && tail -c +$((o + 1)) ${F.jobLog} >${F.jobConsole}; then`,
    `      n=$(($(wc -c <${F.jobConsole})))`,
    `      cat ${F.jobConsole}`,
    '      o=$((o + n))',
    '    fi',
    '  fi',
    '  if [ -n "$l" ]; then break; fi',
    '  sleep 1',
    'done',
    `rm -f ${F.jobConsole} ${F.jobLook} ${F.jobTick}`,
  ];
  // stderr first: a console that cannot be opened is said to /dev/null, not to job.log.
  return `(\n${loop.join('\n')}\n) </dev/null 2>/dev/null >${shellQuote(target)} &`;
}

const startLineSchema = z.union([
  z.tuple([z.literal(START_TAG), z.literal('started'), z.string().regex(/^\d+$/)]).transform(([, , t]) => ({ outcome: 'started' as const, startedAt: Number(t) })),
  z.tuple([z.literal(START_TAG), z.enum(['already-started', 'cancelled'])]).transform(([, outcome]) => ({ outcome })),
  z.tuple([z.literal(START_TAG), z.literal('failed'), z.string()]).transform(([, , why]) => ({ outcome: 'failed' as const, reason: why })),
]);
export type StartResult = z.output<typeof startLineSchema>;

export function parseStartOutput(stdout: string): StartResult {
  return startLineSchema.parse(taggedLine(stdout, START_TAG).split(' '));
}

const cancelJobOptionsSchema = z.strictObject({
  stateDir: stateDirSchema,
  /** Seconds between SIGTERM and SIGKILL to the job's process group. */
  graceSeconds: z.number().int().min(0).max(3600).default(10),
  shell: shellSchema,
});
export type CancelJobOptions = z.input<typeof cancelJobOptionsSchema>;

/**
 * Cancels the job: SIGTERM to its process group, SIGKILL after the grace, done by a detached
 * canceller so that a dropped SSH session cannot leave it half done. Prints one of
 * `runpod-operator-cancel cancelling | ended | not-started | failed <why>`; the state query
 * tells when it is over (the supervisor records the exit code, 143 or 137).
 */
export function cancelJobCommand(options: CancelJobOptions = {}): string {
  const { stateDir, graceSeconds, shell } = cancelJobOptionsSchema.parse(options);
  const note = (text: string): string => `echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) runpod-operator: ${text}"`;
  const canceller = [
    'g=$1',
    'i=0',
    `while [ ! -s ${F.jobPid} ] && [ ! -e ${F.jobExit} ] && [ "$i" -lt 30 ]; do sleep 1; i=$((i + 1)); done`,
    "pid=''",
    `if [ -f ${F.jobPid} ]; then IFS= read -r pid <${F.jobPid}; fi`,
    "case $pid in '' | *[!0-9]*) exit 0 ;; esac",
    '[ "$pid" -gt 1 ] || exit 0',
    'kill -0 -"$pid" 2>/dev/null || exit 0',
    note('cancel: SIGTERM to the job (process group $pid)'),
    'kill -TERM -"$pid" 2>/dev/null',
    'i=0',
    'while kill -0 -"$pid" 2>/dev/null && [ "$i" -lt "$g" ]; do sleep 1; i=$((i + 1)); done',
    `if kill -0 -"$pid" 2>/dev/null; then ${note('cancel: SIGKILL to the job after $g s')}; kill -KILL -"$pid" 2>/dev/null; fi`,
  ].join('\n');
  return [
    enterStateDir(stateDir, CANCEL_TAG),
    `if [ -e ${F.jobExit} ]; then echo '${CANCEL_TAG} ended'; exit 0; fi`,
    `if ! (set -C; : >${F.jobCancelled}) 2>/dev/null; then echo '${CANCEL_TAG} cancelling'; exit 0; fi`,
    `date +%s >${F.jobCancelled}`,
    `if [ ! -e ${F.jobStarted} ]; then echo '${CANCEL_TAG} not-started'; exit 0; fi`,
    `setsid ${shell} -c ${shellQuote(canceller)} runpod-operator-cancel ${graceSeconds} </dev/null >>${F.jobLog} 2>&1 &`,
    `echo '${CANCEL_TAG} cancelling'`,
  ].join('\n');
}

const cancelLineSchema = z.union([
  z.tuple([z.literal(CANCEL_TAG), z.enum(['cancelling', 'ended', 'not-started'])]).transform(([, outcome]) => ({ outcome })),
  z.tuple([z.literal(CANCEL_TAG), z.literal('failed'), z.string()]).transform(([, , why]) => ({ outcome: 'failed' as const, reason: why })),
]);
export type CancelResult = z.output<typeof cancelLineSchema>;

export function parseCancelOutput(stdout: string): CancelResult {
  return cancelLineSchema.parse(taggedLine(stdout, CANCEL_TAG).split(' '));
}

/** Writes the `retrieved` marker (only after a verified retrieval): the watchdog then deletes the pod. */
export function markRetrievedCommand(options: { stateDir?: string } = {}): string {
  const stateDir = stateDirSchema.parse(options.stateDir);
  return [enterStateDir(stateDir, RETRIEVED_TAG), `: >${F.retrieved} && echo '${RETRIEVED_TAG} ok'`].join('\n');
}

/** Sets keepPod on the pod (spec.keepPod can change after the create). Prints `runpod-operator-keep <0|1>`. */
export function setKeepCommand(options: { stateDir?: string; keep: boolean }): string {
  const stateDir = stateDirSchema.parse(options.stateDir);
  const value = options.keep ? '1' : '0';
  return [enterStateDir(stateDir, KEEP_TAG), `${writeAtomically(F.keep, value)} && echo '${KEEP_TAG} ${value}'`].join('\n');
}

/**
 * Extends the retrieve grace to `seconds` from now on the pod's own clock (so a skewed clock changes
 * nothing): retrieve.until, which the watchdog honours. Prints `runpod-operator-grace <until>`.
 */
export function renewRetrieveGraceCommand(options: { stateDir?: string; seconds: number }): string {
  const stateDir = stateDirSchema.parse(options.stateDir);
  const seconds = z.number().int().min(1).max(86_400).parse(options.seconds);
  return [
    enterStateDir(stateDir, GRACE_TAG),
    "now=$(date +%s); case $now in '' | *[!0-9]*) echo '" + GRACE_TAG + " failed no-clock'; exit 1 ;; esac",
    `until=$((now + ${seconds}))`,
    `${writeAtomically(F.retrieveGrace, '"$until"')} && echo "${GRACE_TAG} $until"`,
  ].join('\n');
}

/** Parses the one-word answer of writeJobEnvCommand, markRetrievedCommand, setKeepCommand or renewRetrieveGraceCommand. */
export function parseAck(stdout: string, tag: typeof ENV_TAG | typeof RETRIEVED_TAG | typeof KEEP_TAG | typeof GRACE_TAG): string {
  const words = taggedLine(stdout, tag).split(' ');
  if (words[1] === 'failed') throw new Error(`${tag}: ${words.slice(2).join(' ')}`);
  return words[1] ?? '';
}
