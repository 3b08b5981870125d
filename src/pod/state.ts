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
 * `runpod-operator-state v=1 now=… bootstrap=<b64|-> watchdog=<b64|-> job=<none|starting|running|
 * exited|lost> started=… ended=… exit=… pid=… cancelled=0|1 retrieved=0|1 keep=0|1|- delete=<b64|-> log=<b64|->`
 * (numbers or `-`; free text in base64). Read-only.
 */
export function podStateCommand(options: PodStateOptions = {}): string {
  const { stateDir, logTailBytes } = stateOptionsSchema.parse(options);
  return [
    `cd ${shellQuote(stateDir)} 2>/dev/null || { echo '${STATE_TAG} v=1 statedir=missing'; exit 0; }`,
    "b64() { if [ -f \"$1\" ]; then base64 <\"$1\" | tr -d '\\n'; else printf -; fi; }",
    "num() { v=''; if [ -f \"$1\" ]; then IFS= read -r v <\"$1\"; fi; case $v in '' | *[!0-9]*) printf - ;; *) printf '%s' \"$v\" ;; esac; }",
    "flag() { if [ -e \"$1\" ]; then printf 1; else printf 0; fi; }",
    "now=$(date +%s); case $now in '' | *[!0-9]*) now=0 ;; esac",
    `started=$(num ${F.jobStarted})`,
    `sup=$(num ${F.jobSupervisor})`,
    `if [ ! -e ${F.jobStarted} ]; then job=none`,
    `elif [ -e ${F.jobExit} ]; then job=exited`,
    `elif [ -e ${F.jobLost} ]; then job=lost`,
    'elif [ "$sup" != - ] && kill -0 "$sup" 2>/dev/null; then job=running',
    // Created but no supervisor yet: starting for a minute, then it never ran.
    `elif [ "$sup" = - ] && { [ "$started" = - ] || [ $((now - started)) -lt 60 ]; }; then job=starting`,
    // The supervisor may have written the exit code and ended since the first look.
    `elif [ -e ${F.jobExit} ]; then job=exited`,
    'else job=lost; fi',
    "keep=-",
    `if [ -f ${F.keep} ]; then k=''; IFS= read -r k <${F.keep}; if [ "$k" = 0 ]; then keep=0; else keep=1; fi; fi`,
    `log=-`,
    `if [ -f ${F.jobLog} ]; then log=$(tail -c ${logTailBytes} ${F.jobLog} | base64 | tr -d '\\n'); fi`,
    `echo "${STATE_TAG} v=1 now=$now bootstrap=$(b64 ${F.bootstrapVerdict}) watchdog=$(b64 ${F.watchdogVerdict}) job=$job` +
      ` started=$started ended=$(num ${F.jobEnded}) exit=$(num ${F.jobExit}) pid=$(num ${F.jobPid})` +
      ` cancelled=$(flag ${F.jobCancelled}) retrieved=$(flag ${F.retrieved}) keep=$keep delete=$(b64 ${F.deleteFailed}) log=$log"`,
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
const numberField = z.union([z.literal('-').transform(() => null), z.string().regex(/^\d{1,15}$/).transform(Number)]);
const flagField = z.enum(['0', '1']).transform((flag) => flag === '1');

const stateFieldsSchema = z.object({
  v: z.literal('1'),
  now: numberField,
  bootstrap: base64Field,
  watchdog: base64Field,
  job: z.enum(['none', 'starting', 'running', 'exited', 'lost']),
  started: numberField,
  ended: numberField,
  exit: numberField,
  pid: numberField,
  cancelled: flagField,
  retrieved: flagField,
  keep: z.enum(['0', '1', '-']).transform((keep) => (keep === '-' ? null : keep === '1')),
  // Absent from an older state command's line.
  delete: base64Field.optional(),
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
