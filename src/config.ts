// The controller's settings: each a flag, or an environment variable of the same name
// (--poll-interval = RUNPOD_OPERATOR_POLL_INTERVAL); flags win. Validated with zod so that a bad
// value stops the process at once with the setting named.
import { accessSync, constants } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { s3BucketName, s3Endpoint, s3KeyPrefix, s3Region } from './api/spec.ts';
import { jitterFactor } from './kube/leader-record.ts';
import { labelSelectorProblem } from './kube/label-selector.ts';

const durationPattern = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;
const unitMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "5s", "500ms", "2m" → milliseconds. */
const duration = z.string().regex(durationPattern, 'must be a duration such as 500ms, 5s, 2m or 1h')
  .transform((value) => {
    const [, amount, unit] = durationPattern.exec(value) as unknown as [string, string, string];
    return Math.round(Number(amount) * (unitMs[unit] ?? 1));
  });

/** `:8080`, `127.0.0.1:8080`, `[::1]:8080`, or "0" (off): controller-runtime's bind-address form. */
const bindAddress = z.string().transform((value, ctx) => {
  if (value === '0') return undefined;
  const match = /^(?:\[([0-9a-fA-F:]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(value);
  const port = Number(match?.[3]);
  if (!match || port > 65535) {
    ctx.addIssue({ code: 'custom', message: 'must be [host]:port (e.g. :8080 or 127.0.0.1:8080), or 0 to disable' });
    return z.NEVER;
  }
  const host = match[1] ?? match[2] ?? '';
  return { host: host === '' ? undefined : host, port };
});

export type BindAddress = { host: string | undefined; port: number };

const loopbackHosts = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Where verified results go for runs that name no spec.results.s3: the controller's disk, or a bucket. */
export type ResultsStoreSetting = { kind: 'dir'; dir: string } | { kind: 's3'; bucket: string; prefix: string };

/** `dir:/path` or `s3://bucket/prefix/` (prefix optional; relative, ending in "/"). */
const resultsStore = z.string().transform((value, ctx): ResultsStoreSetting => {
  if (value.startsWith('dir:') && value.length > 4) return { kind: 'dir', dir: value.slice(4) };
  const s3 = /^s3:[/][/]([^/]+)[/]?(.*)$/.exec(value);
  if (s3) {
    const [, bucket = '', prefix = ''] = s3;
    // The same rules as spec.results.s3.bucket.
    const name = s3BucketName.safeParse(bucket);
    if (!name.success) {
      ctx.addIssue({ code: 'custom', message: `bucket "${bucket}" is not a bucket name: ${name.error.issues.map((issue) => issue.message).join('; ')}` });
      return z.NEVER;
    }
    if (prefix !== '') {
      const parsed = s3KeyPrefix.safeParse(prefix);
      if (!parsed.success) {
        ctx.addIssue({ code: 'custom', message: `prefix "${prefix}" ${parsed.error.issues.map((issue) => issue.message).join('; ')}` });
        return z.NEVER;
      }
    }
    return { kind: 's3', bucket, prefix };
  }
  ctx.addIssue({ code: 'custom', message: 'must be dir:/path or s3://bucket/prefix/' });
  return z.NEVER;
});

/** A bucket the controller's own identity may write to for a run that names no credentials: at AWS, or at one endpoint. */
export type AllowedBucketSetting = { bucket: string; endpoint?: string };

/** `bucket` or `https://endpoint/bucket`, comma-separated; empty: none. */
const allowedBuckets = z.string().transform((value, ctx): AllowedBucketSetting[] => {
  const entries: AllowedBucketSetting[] = [];
  for (const entry of value.split(',').map((part) => part.trim()).filter(Boolean)) {
    const slash = entry.includes('://') ? entry.lastIndexOf('/') : -1;
    const bucket = slash === -1 ? entry : entry.slice(slash + 1);
    const endpoint = slash === -1 ? undefined : entry.slice(0, slash);
    if (endpoint !== undefined && !s3Endpoint.safeParse(endpoint).success) {
      ctx.addIssue({ code: 'custom', message: `"${endpoint}" must be an http or https URL (the entry is https://endpoint/bucket)` });
      return z.NEVER;
    }
    if (!s3BucketName.safeParse(bucket).success) {
      ctx.addIssue({ code: 'custom', message: `"${bucket}" is not a bucket name` });
      return z.NEVER;
    }
    entries.push(endpoint === undefined ? { bucket } : { bucket, endpoint });
  }
  return entries;
});

export const configSchema = z.object({
  kubeconfig: z.string().min(1).superRefine((path, ctx) => {
    try {
      accessSync(path, constants.R_OK);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      ctx.addIssue({ code: 'custom', message: `cannot read ${path}: ${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (code ?? 'unreadable')}` });
    }
  }).optional(),
  namespace: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a namespace name').optional(),
  selector: z.string().trim().min(1).max(1024).superRefine((value, ctx) => {
    const problem = labelSelectorProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: `must be a label selector: ${problem}` });
  }).optional(),
  clusterId: z.string().min(1).max(128).regex(/^[A-Za-z0-9._-]+$/, 'must be letters, digits, ".", "_" or "-"').optional(),
  runpodApiUrl: z.url().default('https://api.runpod.io/v2')
    .refine((value) => {
      const url = new URL(value);
      return url.protocol === 'https:' || (url.protocol === 'http:' && loopbackHosts.has(url.hostname));
    }, 'must be https (http only for a loopback address)'),
  resultsDir: z.string().min(1).default('./results'),
  /** Overrides resultsDir when set; absent: dir:<resultsDir> (see resultsStoreOf). */
  resultsStore: resultsStore.optional(),
  /** The default store's endpoint, region and addressing (a run's spec.results.s3 brings its own). */
  resultsS3Endpoint: s3Endpoint.optional(),
  resultsS3Region: s3Region.optional(),
  resultsS3ForcePathStyle: z.stringbool().default(false),
  /** Where a run that names no spec.results.s3.credentials may have the controller's own identity write; default none. */
  resultsS3AllowedBuckets: allowedBuckets.prefault(''),
  maxConcurrentReconciles: z.coerce.number().int().min(1).max(256).default(8),
  /** Result retrievals run off the workers, at most this many at once (the rest wait in line). */
  maxConcurrentTransfers: z.coerce.number().int('must be a whole number').min(1, 'must be at least 1').max(64, 'must be at most 64').default(4),
  pollInterval: duration.pipe(z.number().min(1000, 'must be at least 1s')).default(10_000),
  logLevel: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal']).default('info'),
  leaderElect: z.stringbool().default(true),
  leaseNamespace: z.string().min(1).optional(),
  /** controller-runtime's names and defaults (client-go's LeaderElectionConfig). */
  leaderElectLeaseDuration: duration.pipe(z.number().min(1000, 'must be at least 1s')).default(15_000),
  leaderElectRenewDeadline: duration.pipe(z.number().min(1, 'must be positive')).default(10_000),
  leaderElectRetryPeriod: duration.pipe(z.number().min(1, 'must be positive')).default(2_000),
  leaderElectionId: z.string().regex(/^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/, 'must be a Lease name (lowercase letters, digits, "-", ".")').max(253).default('runpod-operator-leader'),
  /** `[host]:port`; "0" disables the endpoint. */
  metricsBindAddress: bindAddress.prefault(':8080'),
  healthProbeBindAddress: bindAddress.prefault(':8081'),
  /** /healthz fails while a reconcile has made no progress for this long (a stuck worker). */
  reconcileStuckAfter: duration.pipe(z.number().min(1000, 'must be at least 1s')).default(15 * 60_000),
  /** SIGTERM: in-flight steps are aborted, events flushed and the lease released within this, else the process exits anyway. */
  shutdownTimeout: duration.pipe(z.number().min(1000, 'must be at least 1s').max(300_000, 'must be at most 5m')).default(20_000),
  /** How long past a pod's deadline the controller itself deletes it (the watchdog acts at the deadline). */
  deadlineMargin: duration.default(60_000),
  /** How often the on-pod watchdog checks its limits. */
  watchdogPeriod: duration.pipe(z.number().min(1000, 'must be at least 1s').max(300_000, 'must be at most 5m')).default(10_000),
  /** How often the stray sweep runs (it also runs once when this process becomes the leader). */
  sweepInterval: duration.pipe(z.number().min(1000, 'must be at least 1s')).default(60_000),
  /** A pod younger than this is never swept: its run may not be visible yet. */
  strayGrace: duration.pipe(z.number().min(1000, 'must be at least 1s')).default(120_000),
}).superRefine((config, ctx) => {
  // client-go's NewLeaderElector checks, reported against the flag that has to change.
  if (config.leaderElectRenewDeadline >= config.leaderElectLeaseDuration) {
    ctx.addIssue({ code: 'custom', path: ['leaderElectRenewDeadline'], message: 'must be shorter than --leader-elect-lease-duration' });
  }
  if (config.leaderElectRenewDeadline <= jitterFactor * config.leaderElectRetryPeriod) {
    ctx.addIssue({ code: 'custom', path: ['leaderElectRetryPeriod'], message: `must be shorter than --leader-elect-renew-deadline / ${jitterFactor}` });
  }
});

export type Config = z.output<typeof configSchema>;

/** The controller's default result store: --results-store, else the --results-dir directory. */
export function resultsStoreOf(config: Pick<Config, 'resultsDir' | 'resultsStore'>): ResultsStoreSetting {
  return config.resultsStore ?? { kind: 'dir', dir: config.resultsDir };
}

const flags = {
  kubeconfig: 'kubeconfig', namespace: 'namespace', selector: 'selector', 'cluster-id': 'clusterId', 'runpod-api-url': 'runpodApiUrl',
  'results-dir': 'resultsDir', 'results-store': 'resultsStore', 'results-s3-endpoint': 'resultsS3Endpoint',
  'results-s3-region': 'resultsS3Region', 'results-s3-force-path-style': 'resultsS3ForcePathStyle',
  'results-s3-allowed-buckets': 'resultsS3AllowedBuckets', 'max-concurrent-reconciles': 'maxConcurrentReconciles',
  'max-concurrent-transfers': 'maxConcurrentTransfers', 'poll-interval': 'pollInterval',
  'log-level': 'logLevel', 'leader-elect': 'leaderElect', 'lease-namespace': 'leaseNamespace', 'deadline-margin': 'deadlineMargin',
  'watchdog-period': 'watchdogPeriod', 'leader-elect-lease-duration': 'leaderElectLeaseDuration',
  'leader-elect-renew-deadline': 'leaderElectRenewDeadline', 'leader-elect-retry-period': 'leaderElectRetryPeriod',
  'leader-election-id': 'leaderElectionId', 'metrics-bind-address': 'metricsBindAddress',
  'health-probe-bind-address': 'healthProbeBindAddress', 'reconcile-stuck-after': 'reconcileStuckAfter', 'shutdown-timeout': 'shutdownTimeout',
  'sweep-interval': 'sweepInterval', 'stray-grace': 'strayGrace',
} as const satisfies Record<string, keyof Config>;

export type Flag = keyof typeof flags;
export const flagNames = Object.keys(flags) as Flag[];

export const envName = (flag: string): string => `RUNPOD_OPERATOR_${flag.toUpperCase().replaceAll('-', '_')}`;

/** A bare `--leader-elect` (as in kubebuilder's manifests) means `--leader-elect=true`. */
function bareBooleans(argv: string[]): string[] {
  return argv.map((arg, i) => {
    const next = argv[i + 1];
    return arg === '--leader-elect' && (next === undefined || next.startsWith('-')) ? '--leader-elect=true' : arg;
  });
}

/** Reads flags and environment; throws an Error that names every bad setting. */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): Config {
  const { values } = parseFlags(argv);
  const raw: Record<string, string> = {};
  for (const [flag, key] of Object.entries(flags)) {
    const value = (values as Record<string, string | undefined>)[flag] ?? env[envName(flag)];
    if (value !== undefined) raw[key] = value;
  }
  raw.kubeconfig ??= env.KUBECONFIG ?? '';
  if (raw.kubeconfig === '') delete raw.kubeconfig;
  const result = configSchema.safeParse(raw);
  if (result.success) return result.data;
  const byKey = Object.fromEntries(Object.entries(flags).map(([flag, key]) => [key, flag]));
  throw new Error(`invalid configuration: ${result.error.issues.map((issue) => {
    const flag = byKey[String(issue.path[0])] ?? String(issue.path[0]);
    return `--${flag} (${envName(flag)}): ${issue.message}`;
  }).join('; ')}`);
}

/** The flags given; a flag we do not have, a value missing or a stray argument is one sentence. */
function parseFlags(argv: string[]): ReturnType<typeof parseArgs> {
  try {
    return parseArgs({
      args: bareBooleans(argv),
      options: Object.fromEntries(Object.keys(flags).map((flag) => [flag, { type: 'string' as const }])),
      strict: true,
    });
  } catch (error) {
    const message = error instanceof Error ? error.message.split('.')[0] ?? '' : String(error);
    throw new Error(`${message.replace(/^Unknown option/, 'unknown flag')} (--help lists the flags)`);
  }
}
