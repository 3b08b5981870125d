// What the create call carries for the pod side: `args` (the bootstrap, with the watchdog handed to
// it as an argument) and `env` (markers, limits, the pinned host key, the client's public key).
// Never the account API key (the pod has its own pod-scoped one) and never a job secret: those
// reach the pod over SSH only.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { POD_SHELLS, runDirSchema } from './job.ts';
import { POD_ENV } from './protocol.ts';

/** The scripts as they ship in the args: comment lines, blank lines and indentation dropped. */
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

function singleQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export const renderArgsOptionsSchema = z.strictObject({
  /** The shell that runs both scripts on the pod ("sh" in production; tests also use dash and bash --posix). */
  shell: z.enum(POD_SHELLS).default('sh'),
});
export type RenderArgsOptions = z.input<typeof renderArgsOptionsSchema>;

/**
 * The create call's `args`, which Runpod runs as `sh -c "<args>"`: one line that execs the chosen
 * shell on the bootstrap text and hands it the watchdog text as an argument. Nothing to decode and
 * no file to write before the bootstrap has checked the image, so even an image without base64 or
 * a writable /tmp gets its failure recorded and its pod deleted (when curl exists).
 */
export function renderPodArgs(options: RenderArgsOptions = {}): string {
  const { shell } = renderArgsOptionsSchema.parse(options);
  return `exec ${shell} -c ${singleQuote(BOOTSTRAP_SCRIPT)} runpod-operator-bootstrap ${singleQuote(shell)} ${singleQuote(WATCHDOG_SCRIPT)}`;
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
  keepPod: z.boolean().default(false),
  runDir: runDirSchema,
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

/** The create call's `env` for the pod side (validated; throws a ZodError naming the bad field). */
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
    [POD_ENV.keepPod]: v.keepPod ? '1' : '0',
    [POD_ENV.runDir]: v.runDir,
    [POD_ENV.hostKey]: Buffer.from(v.hostPrivateKey, 'utf8').toString('base64'),
    [POD_ENV.authorizedKey]: v.authorizedKey,
  };
  if (v.maxCostUsd !== undefined) env[POD_ENV.maxCostUsd] = v.maxCostUsd;
  if (v.watchdogPeriodSeconds !== undefined) env[POD_ENV.watchdogPeriod] = String(v.watchdogPeriodSeconds);
  return env;
}
