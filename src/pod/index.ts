// The pod side: what the create call carries (render), the on-pod file protocol, and the commands
// the controller runs on a pod over SSH with their parsers (job; the poll's read of a pod: state).
export { renderPodArgs, renderPodEnv, podEnvInputSchema, minifyScript, BOOTSTRAP_SCRIPT, WATCHDOG_SCRIPT } from './render.ts';
export type { PodEnvInput, RenderArgsOptions } from './render.ts';
export {
  DEFAULT_RUN_DIR, DEFAULT_STATE_DIR, STATES_DIR, POD_FILES, POD_ENV, RUNPOD_ENV, IMAGE_REQUIREMENTS, HTTP_CLIENTS, DELETE_RULES, WATCHDOG_DEFAULTS,
  VERDICT_BOUND_SECONDS, VERDICT_LAST_CALL_SECONDS,
  SSHD_HOST_KEY_PATH, SSHD_CONFIG_PATH, RUNS_DIR, podPath, runDirOf, stateDirOf, claimOf,
} from './protocol.ts';
export type { PodFile, DeleteRule } from './protocol.ts';
export {
  POD_SHELLS, jobEnvFile, writeJobEnvCommand, startJobCommand, parseStartOutput, cancelJobCommand, parseCancelOutput,
  markRetrievedCommand, setKeepCommand, renewRetrieveGraceCommand, parseAck, runDirSchema, stateDirSchema,
  START_TAG, CANCEL_TAG, RETRIEVED_TAG, KEEP_TAG, ENV_TAG, GRACE_TAG,
} from './job.ts';
export { podStateCommand, parsePodState, parseVerdict, parseDeleteFailure, STATE_TAG } from './state.ts';
export { clockOffsetSeconds, onControllerClock } from './pod-clock.ts';
export type { ClockReading } from './pod-clock.ts';
export type { PodShell, StartJobOptions, StartResult, CancelJobOptions, CancelResult } from './job.ts';
export type { PodStateOptions, PodState, Verdict, DeleteFailure } from './state.ts';
