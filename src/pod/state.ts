// The poll's one read of a pod (podStateCommand) and its parser: the verdicts of the bootstrap and the
// watchdog, the job's state and the end of its log, on one tagged line. Read-only on the pod.
import { z } from 'zod';
import { shellQuote } from '../ssh/shell.ts';
import { stateDirSchema } from './job.ts';
import { DELETE_RULES, POD_FILES, type DeleteRule } from './protocol.ts';
import { taggedLine } from './tagged-line.ts';

export const STATE_TAG = 'runpod-operator-state';

/** Relative to the pod's state directory, which the command enters first. */
const F = POD_FILES;

const stateOptionsSchema = z.strictObject({
  stateDir: stateDirSchema,
  /** Bytes of the end of job.log to return. */
  logTailBytes: z.number().int().min(0).max(1024 * 1024).default(4096),
});
export type PodStateOptions = z.input<typeof stateOptionsSchema>;

/**
 * One short command for a poll: the verdicts, the job's state and the end of its log, on one line
 * `runpod-operator-state v=1 now=… bootstrap=<ok|b64|-> watchdog=<ok|b64|-> job=<none|starting|running|
 * exited|lost> started=… ended=… exit=… pid=… cancelled=0|1 retrieved=0|1 keep=0|1|- delete=<ok|b64|-> log=<b64|->`
 * (numbers or `-`; free text `ok` when a file is that one line, else in base64). Read-only.
 *
 * It runs on every ready pod at every poll, so it starts as few processes as it can: the shell's own
 * `read` and `[` read the files into variables (a command substitution would fork a subshell each), a
 * verdict of `ok` is written as it is (no base64), and the log's end, which only a job that exited
 * needs (its last lines go into an event), is read only then. A running job's poll starts one
 * process: `date`.
 */
export function podStateCommand(options: PodStateOptions = {}): string {
  const { stateDir, logTailBytes } = stateOptionsSchema.parse(options);
  return [
    `cd ${shellQuote(stateDir)} 2>/dev/null || { echo '${STATE_TAG} v=1 statedir=missing'; exit 0; }`,
    // Each sets the variable named by $1 from the file $2 ($1 is always one of the names below).
    "text() { t=-; if [ -f \"$2\" ]; then l=''; m=''; if { IFS= read -r l; ! IFS= read -r m && [ -z \"$m\" ]; } <\"$2\" && [ \"$l\" = ok ]; then t=ok; else t=$(base64 <\"$2\" | tr -d '\\n'); fi; fi; eval \"$1=\\$t\"; }",
    "num() { v=''; if [ -f \"$2\" ]; then IFS= read -r v <\"$2\"; fi; case $v in '' | *[!0-9]*) v=- ;; esac; eval \"$1=\\$v\"; }",
    "flag() { if [ -e \"$2\" ]; then eval \"$1=1\"; else eval \"$1=0\"; fi; }",
    "now=$(date +%s); case $now in '' | *[!0-9]*) now=0 ;; esac",
    `num started ${F.jobStarted}; num sup ${F.jobSupervisor}`,
    `if [ ! -e ${F.jobStarted} ]; then job=none`,
    `elif [ -e ${F.jobExit} ]; then job=exited`,
    `elif [ -e ${F.jobLost} ]; then job=lost`,
    'elif [ "$sup" != - ] && kill -0 "$sup" 2>/dev/null; then job=running',
    // Created but no supervisor yet: starting for a minute, then it never ran.
    `elif [ "$sup" = - ] && { [ "$started" = - ] || [ $((now - started)) -lt 60 ]; }; then job=starting`,
    // The supervisor may have written the exit code and ended since the first look.
    `elif [ -e ${F.jobExit} ]; then job=exited`,
    'else job=lost; fi',
    // After the job's state: an exit code the supervisor wrote since is read with it, never one short.
    `num ended ${F.jobEnded}; num exit ${F.jobExit}; num pid ${F.jobPid}`,
    "keep=-",
    `if [ -f ${F.keep} ]; then k=''; IFS= read -r k <${F.keep}; if [ "$k" = 0 ]; then keep=0; else keep=1; fi; fi`,
    `text bootstrap ${F.bootstrapVerdict}; text watchdog ${F.watchdogVerdict}; text delete ${F.deleteFailed}; flag cancelled ${F.jobCancelled}; flag retrieved ${F.retrieved}`,
    `log=-`,
    `if [ "$job" = exited ] && [ -f ${F.jobLog} ]; then log=$(tail -c ${logTailBytes} ${F.jobLog} | base64 | tr -d '\\n'); fi`,
    `echo "${STATE_TAG} v=1 now=$now bootstrap=$bootstrap watchdog=$watchdog job=$job started=$started ended=$ended exit=$exit pid=$pid` +
      ' cancelled=$cancelled retrieved=$retrieved keep=$keep delete=$delete log=$log"',
  ].join('\n');
}

/** Why the watchdog wanted the pod gone ('unknown' for a rule this controller does not know) and what refused it. */
export interface DeleteFailure { rule: DeleteRule | 'unknown'; at: number | null; detail: string }

/** A verdict file: absent while its step runs, then "ok" or "failed: <reason>". */
export type Verdict = { status: 'pending' } | { status: 'ok' } | { status: 'failed'; reason: string };

export interface PodState {
  /** The pod's state directory does not exist (not a pod of ours, or its bootstrap never got that far). */
  runDirMissing: boolean;
  /** The pod's clock (unix seconds), as the pod read it. */
  now: number | null;
  /**
   * The pod's clock minus the controller's (pod-clock.ts), as applied to the times below: parsePodState
   * gives the pod's own times (0), a state read (readPodState) the controller's.
   */
  clockOffsetSeconds: number;
  bootstrap: Verdict;
  watchdog: Verdict;
  job: {
    status: 'none' | 'starting' | 'running' | 'exited' | 'lost';
    startedAt: number | null;
    endedAt: number | null;
    exitCode: number | null;
    pid: number | null;
    cancelled: boolean;
  };
  retrieved: boolean;
  /** keepPod as last set on the pod; null = never set (the create env decides). */
  keep: boolean | null;
  /** The watchdog's last failed delete (watchdog.delete): the controller must delete the pod. */
  deleteFailed: DeleteFailure | null;
  /** The end of the job's log (UTF-8, possibly cut mid-character at its start). */
  logTail: string;
}

const base64Field = z.union([z.literal('-').transform(() => null), z.literal('').transform(() => ''), z.base64().transform((text) => Buffer.from(text, 'base64').toString('utf8'))]);
/** A small text file: `ok` as it is (never valid base64: 2 characters), else like base64Field. */
const textField = z.union([z.literal('ok'), base64Field]);
const numberField = z.union([z.literal('-').transform(() => null), z.string().regex(/^\d{1,15}$/).transform(Number)]);
const flagField = z.enum(['0', '1']).transform((flag) => flag === '1');

const stateFieldsSchema = z.object({
  v: z.literal('1'),
  now: numberField,
  bootstrap: textField,
  watchdog: textField,
  job: z.enum(['none', 'starting', 'running', 'exited', 'lost']),
  started: numberField,
  ended: numberField,
  exit: numberField,
  pid: numberField,
  cancelled: flagField,
  retrieved: flagField,
  keep: z.enum(['0', '1', '-']).transform((keep) => (keep === '-' ? null : keep === '1')),
  // Absent from an older state command's line.
  delete: textField.optional(),
  log: base64Field,
});

export function parseVerdict(text: string | null): Verdict {
  if (text === null) return { status: 'pending' };
  const line = text.trim();
  if (line === 'ok') return { status: 'ok' };
  if (line.startsWith('failed:')) return { status: 'failed', reason: line.slice('failed:'.length).trim() };
  return { status: 'failed', reason: `unrecognised verdict: ${JSON.stringify(line.slice(0, 200))}` };
}

/** "<rule> <unix> <detail>", as the watchdog writes watchdog.delete. */
export function parseDeleteFailure(text: string): DeleteFailure {
  const [rule = '', at = '', ...rest] = text.trim().split(' ');
  return {
    rule: (DELETE_RULES as readonly string[]).includes(rule) ? (rule as DeleteRule) : 'unknown',
    at: /^\d{1,15}$/.test(at) ? Number(at) : null,
    detail: rest.join(' ').slice(0, 1000),
  };
}

/** Parses podStateCommand's line (throws a ZodError on anything else). */
export function parsePodState(stdout: string): PodState {
  const line = taggedLine(stdout, STATE_TAG);
  const fields = Object.fromEntries(
    line
      .split(' ')
      .slice(1)
      .map((word) => {
        const at = word.indexOf('=');
        return at < 0 ? [word, ''] : [word.slice(0, at), word.slice(at + 1)];
      }),
  );
  if (fields.statedir === 'missing') {
    return {
      runDirMissing: true,
      now: null,
      clockOffsetSeconds: 0,
      bootstrap: { status: 'pending' },
      watchdog: { status: 'pending' },
      job: { status: 'none', startedAt: null, endedAt: null, exitCode: null, pid: null, cancelled: false },
      retrieved: false,
      keep: null,
      deleteFailed: null,
      logTail: '',
    };
  }
  const f = stateFieldsSchema.parse(fields);
  return {
    runDirMissing: false,
    now: f.now,
    clockOffsetSeconds: 0,
    bootstrap: parseVerdict(f.bootstrap),
    watchdog: parseVerdict(f.watchdog),
    job: { status: f.job, startedAt: f.started, endedAt: f.ended, exitCode: f.exit, pid: f.pid, cancelled: f.cancelled },
    retrieved: f.retrieved,
    keep: f.keep,
    deleteFailed: f.delete ? parseDeleteFailure(f.delete) : null,
    logTail: f.log ?? '',
  };
}
