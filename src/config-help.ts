// `--help`: every flag with its environment variable, default and meaning, as controller-runtime
// binaries print theirs. The defaults shown are the schema's (test/config.unit.test.ts parses each one
// and compares), so the text cannot drift from what the process does.
import { envName, flagNames, type Flag } from './config.ts';

interface FlagHelp { what: string; default?: string }

export const flagHelp: Record<Flag, FlagHelp> = {
  kubeconfig: { what: 'kubeconfig file (else $KUBECONFIG, else in-cluster, else ~/.kube/config)' },
  namespace: { what: 'watch only this namespace (its runs, its Secrets); default: every namespace' },
  selector: { what: 'act only on runs with these labels (a label selector, as kubectl -l), to shard runs between installs; default: every run' },
  'cluster-id': { what: 'this install\'s id in pod names and tags (default: the kube-system namespace\'s UID)' },
  'runpod-api-url': { what: 'Runpod REST v2 base URL (https; http only on loopback)', default: 'https://api.runpod.io/v2' },
  'results-dir': { what: 'where verified results go when no S3 store is set', default: './results' },
  'results-store': { what: 'default result store: dir:/path or s3://bucket/prefix/ (overrides --results-dir)' },
  'results-s3-endpoint': { what: 'S3 endpoint URL of the default store (default: AWS)' },
  'results-s3-region': { what: 'S3 region of the default store (default: $AWS_REGION, else us-east-1)' },
  'results-s3-force-path-style': { what: 'path-style S3 addressing (MinIO, SeaweedFS)', default: 'false' },
  'results-s3-allowed-buckets': { what: 'buckets (or https://endpoint/bucket), comma-separated, a run without S3 credentials may have the controller write to', default: '' },
  'max-concurrent-reconciles': { what: 'workers reconciling runs at once', default: '8' },
  'max-concurrent-transfers': { what: 'result retrievals at once (the rest wait in line)', default: '4' },
  'poll-interval': { what: 'how often the account\'s pods are listed and a running job is looked at', default: '10s' },
  'log-level': { what: 'trace, debug, info, warn, error or fatal', default: 'info' },
  'leader-elect': { what: 'elect one leader among replicas (a Lease)', default: 'true' },
  'lease-namespace': { what: 'namespace of the Lease (default: --namespace, else default)' },
  'deadline-margin': { what: 'how long past a pod\'s deadline the controller deletes it itself (the watchdog acts at the deadline)', default: '1m' },
  'watchdog-period': { what: 'how often the on-pod watchdog checks its limits', default: '10s' },
  'leader-elect-lease-duration': { what: 'how long a Lease holds without renewal', default: '15s' },
  'leader-elect-renew-deadline': { what: 'how long the leader tries to renew before it stops leading', default: '10s' },
  'leader-elect-retry-period': { what: 'how often a replica tries to acquire or renew the Lease', default: '2s' },
  'leader-election-id': { what: 'name of the Lease', default: 'runpod-operator-leader' },
  'metrics-bind-address': { what: 'Prometheus /metrics at [host]:port; 0 disables', default: ':8080' },
  'health-probe-bind-address': { what: '/healthz and /readyz at [host]:port; 0 disables', default: ':8081' },
  'reconcile-stuck-after': { what: '/healthz fails while a reconcile has made no progress this long', default: '15m' },
  'shutdown-timeout': { what: 'on SIGTERM, exit after this even if shutdown has not finished', default: '20s' },
  'sweep-interval': { what: 'how often pods no run owns are looked for and deleted', default: '1m' },
  'stray-grace': { what: 'a pod younger than this is never swept (its run may not be visible yet)', default: '2m' },
};

export function usage(): string {
  const rows = flagNames.map((flag) => {
    const { what, default: value } = flagHelp[flag];
    const shown = value === undefined ? '' : ` (default ${value === '' ? '""' : value})`;
    return `  --${flag}\n        ${what}${shown}\n        env ${envName(flag)}`;
  });
  return [
    'runpod-operator: a Kubernetes controller that runs RunpodRun batch jobs on Runpod GPU pods.',
    '',
    'Usage: node src/main.ts [flags]   (in the image: the entrypoint takes the same flags)',
    '',
    'Every flag may also be set by its environment variable; a flag wins. Durations: 500ms, 10s, 2m, 1h.',
    'The Runpod API key is never a flag: each run names its own Secret (spec.credentials).',
    '',
    'Flags:',
    ...rows,
    '  -h, --help',
    '        print this and exit',
    '',
  ].join('\n');
}
