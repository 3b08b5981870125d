// What the create call carries for the pod side: `args` (a one-line stub that decodes and starts the
// bootstrap) and `env` (the bootstrap and watchdog, base64; markers, limits, the pinned host key,
// the client's public key). Never the account API key (the pod has its own pod-scoped one) and never
// a job secret: those reach the pod over SSH only.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { POD_SHELLS, runDirSchema, stateDirSchema } from './job.ts';
import { DEFAULT_STATE_DIR, POD_ENV, VERDICT_BOUND_SECONDS, runDirOf, stateDirOf } from './protocol.ts';

/** The scripts as they ship: comment lines, blank lines and indentation dropped. */
export function minifyScript(text: string): string {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .join('\n');
}

function loadScript(name: string): string {
  return minifyScript(readFileSync(new URL(`./${name}`, import.meta.url), 'utf8'));
}

/** The bootstrap and watchdog as they run on the pod. */
export const BOOTSTRAP_SCRIPT = loadScript('bootstrap.sh');
export const WATCHDOG_SCRIPT = loadScript('watchdog.sh');

const base64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');

/** The create env entries that carry the two scripts (the same for every pod). */
export function renderPodScriptsEnv(): Record<string, string> {
  return { [POD_ENV.bootstrap]: base64(BOOTSTRAP_SCRIPT), [POD_ENV.watchdog]: base64(WATCHDOG_SCRIPT) };
}

const renderArgsOptionsSchema = z.strictObject({
  /** The shell that runs both scripts on the pod ("sh" in production; tests also use dash and bash --posix). */
  shell: z.enum(POD_SHELLS).default('sh'),
});
export type RenderArgsOptions = z.input<typeof renderArgsOptionsSchema>;

/**
 * The create call's `args`: `sh -c '<stub>'`, one line. Runpod splits `args` into words by shell
 * quoting and hands them to the image's entrypoint without adding a shell (API-NOTES §2, §7), so the
 * first word is a program and the stub is one single-quoted word holding no single quote. Behind an
 * NGC-style ENTRYPOINT that ends in `exec "$@"` the same words are exec'd after its setup; without
 * an ENTRYPOINT they are the container's command. The scripts travel in the env, base64 (env values
 * are free text, `args` stays well under 1 KB): the stub decodes the bootstrap and execs it; the
 * bootstrap decodes the watchdog and, once done, execs it as the container's main process.
 *
 * Without base64 (or with the env mangled) nothing of ours can run, so the stub itself reports it
 * where it still can: a line on stdout (the pod's log in Runpod's console), the bootstrap verdict in
 * the state directory (read over SSH by nobody, since sshd never starts; for a person in the pod's
 * console), and it deletes the pod with the pod-scoped key through curl, again every 30 s until
 * that works. It then keeps the container running rather than exiting: an exit would only
 * restart-loop. Without curl as well, the controller deletes the pod once SSH has not answered
 * within readyTimeoutSeconds.
 */
export function renderPodArgs(options: RenderArgsOptions = {}): string {
  const { shell } = renderArgsOptionsSchema.parse(options);
  const pod = `\${${POD_ENV.stateDir}:-${DEFAULT_STATE_DIR}}`;
  const stub = [
    `b=$(printf %s "$${POD_ENV.bootstrap}"|base64 -d)&&exec ${shell} -c "$b" runpod-operator-bootstrap "${shell}"`,
    `r="the image lacks: base64";command -v base64 >/dev/null&&r="${POD_ENV.bootstrap} does not decode"`,
    `echo "runpod-operator bootstrap: FAILED: $r; deleting the pod"`,
    `mkdir -p "${pod}"&&echo "failed: $r" >"${pod}/bootstrap"`,
    `until curl -fsS -o /dev/null -X DELETE -H "Authorization: Bearer $RUNPOD_API_KEY" "$${POD_ENV.apiUrl}/pods/$RUNPOD_POD_ID";do sleep 30;done`,
    'while :;do sleep 3600;done',
  ].join(';');
  return `${shell} -c '${stub}'`;
}

const AUTHORIZED_KEY =
  /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,2}( [^\n\r\0]*)?$/;

const positiveSeconds = z.number().int().min(1).max(10 * 365 * 24 * 3600);

export const podEnvInputSchema = z.strictObject({
  /** The cluster marker (sweeps only ever touch pods carrying this cluster's id). */
  clusterId: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/),
  /** The install's scope (`namespace/<ns>` or `cluster-wide`): with the cluster id, who owns the pod. */
  scope: z.string().regex(/^[A-Za-z0-9._:/-]{1,128}$/),
  /** The run's UID. */
  runUid: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/),
  attempt: z.number().int().min(1).max(10000),
  /** The Runpod REST v2 base URL the watchdog calls (the simulator's in tests). */
  apiUrl: z.url({ protocol: /^https?$/ }),
  /** Unix seconds: pod creation + maxRuntimeSeconds. */
  deadline: z.union([z.number().int().min(1), z.date().transform((date) => Math.floor(date.getTime() / 1000))]),
  maxCostUsd: z
    .union([z.string().regex(/^\d{1,9}(\.\d{1,6})?$/, 'a decimal amount such as "25.00"'), z.number().positive().finite().transform(String)])
    .optional(),
  bootGraceSeconds: positiveSeconds,
  retrieveGraceSeconds: positiveSeconds,
  /** How long the watchdog probes its pod before its verdict is final; the controller's bound follows from the same constant. */
  verdictBoundSeconds: positiveSeconds.default(VERDICT_BOUND_SECONDS),
  keepPod: z.boolean().default(false),
  /** The run's directory on the pod; by default its own, named by its UID (runDirOf). */
  runDir: runDirSchema.unwrap().optional(),
  /** The pod's state directory, on the container's disk; by default the run's (stateDirOf). */
  stateDir: stateDirSchema.unwrap().optional(),
  /** The pod's pinned host key: the OpenSSH private key file's text. It travels base64-encoded. */
  hostPrivateKey: z.string().regex(/^-----BEGIN [A-Z ]*PRIVATE KEY-----\r?\n/, 'an OpenSSH private key'),
  /** The run's client public key, one OpenSSH line (no options). */
  authorizedKey: z
    .string()
    .transform((key) => key.trim())
    .pipe(z.string().regex(AUTHORIZED_KEY, 'one OpenSSH public key line without options')),
  watchdogPeriodSeconds: z.number().int().min(1).max(300).optional(),
});
export type PodEnvInput = z.input<typeof podEnvInputSchema>;

/** The create call's `env` for the pod side, the scripts included (validated; throws a ZodError naming the bad field). */
export function renderPodEnv(input: PodEnvInput): Record<string, string> {
  const v = podEnvInputSchema.parse(input);
  const env: Record<string, string> = {
    [POD_ENV.cluster]: v.clusterId,
    [POD_ENV.scope]: v.scope,
    [POD_ENV.run]: v.runUid,
    [POD_ENV.attempt]: String(v.attempt),
    [POD_ENV.apiUrl]: v.apiUrl,
    [POD_ENV.deadline]: String(v.deadline),
    [POD_ENV.bootGrace]: String(v.bootGraceSeconds),
    [POD_ENV.retrieveGrace]: String(v.retrieveGraceSeconds),
    [POD_ENV.verdictBound]: String(v.verdictBoundSeconds),
    [POD_ENV.keepPod]: v.keepPod ? '1' : '0',
    [POD_ENV.runDir]: v.runDir ?? runDirOf(v.runUid),
    [POD_ENV.stateDir]: v.stateDir ?? stateDirOf(v.runUid),
    [POD_ENV.hostKey]: Buffer.from(v.hostPrivateKey, 'utf8').toString('base64'),
    [POD_ENV.authorizedKey]: v.authorizedKey,
    ...renderPodScriptsEnv(),
  };
  if (v.maxCostUsd !== undefined) env[POD_ENV.maxCostUsd] = v.maxCostUsd;
  if (v.watchdogPeriodSeconds !== undefined) env[POD_ENV.watchdogPeriod] = String(v.watchdogPeriodSeconds);
  return env;
}
