// kubectl-runpod: the `kubectl runpod` plugin. kubectl finds it on PATH and runs it with the user's
// arguments; it uses the user's kubeconfig and RBAC only (it never talks to the controller). kubectl's
// habits: -n, --context, --kubeconfig, -A, --help; bad input is one sentence and a non-zero exit.
//
// A command loads only what it uses (the cluster client alone is about a second of start-up; SSH and
// the S3 SDK some tenths more), so --help and a mistyped flag answer at once.
import { parseArgs } from 'node:util';
import { RUNPOD_API_URL_ENV } from './env.ts';
import { PluginError } from './errors.ts';

export const usage = `kubectl runpod: the RunpodRuns of your cluster, from the terminal.

Usage:
  kubectl runpod logs RUN [-f] [--tail N]   the job's output, over SSH while its pod lives (-f: until the job ends)
  kubectl runpod logs RUN --source system [-f] [--tail N] [--since 10m]
                                            what Runpod says of the run's pod (image pull, container create, start,
                                            stop, exit), with the run's Runpod key (-f: until the pod is gone)
  kubectl runpod ssh RUN [-- COMMAND...]    a shell, or COMMAND, on the run's pod as root (the pinned host key only)
  kubectl runpod results RUN [DIR]          download the run's verified results (S3 store) into DIR (default .) and check SHA256SUMS
  kubectl runpod cost [-A] [--since 7d]     runs, GPU-hours and estimated cost per namespace, from the runs' status
  kubectl runpod cancel RUN                 set spec.cancel: the job is stopped, what results exist retrieved, the pod deleted
  kubectl runpod keep RUN [--off]           set spec.keepPod (--off: clear it), to debug a pod after its job

Flags:
  -n, --namespace NAME   the runs' namespace (default: the context's)
  -A, --all-namespaces   cost: every namespace
      --source job|system
                         logs: the job's output (job, the default) or Runpod's lines about the pod (system)
      --since DURATION   logs --source system: lines since then (90m, 12h, 7d); cost: runs started since then
      --runpod-api-url URL
                         logs --source system: the Runpod API the run's controller uses (default: $${RUNPOD_API_URL_ENV},
                         the controller's variable for its --runpod-api-url, else https://api.runpod.io/v2)
      --context NAME     the kubeconfig context to use
      --kubeconfig FILE  the kubeconfig (default: $KUBECONFIG, else ~/.kube/config)
  -h, --help             print this
`;

const options = {
  namespace: { type: 'string', short: 'n' }, 'all-namespaces': { type: 'boolean', short: 'A' }, context: { type: 'string' },
  kubeconfig: { type: 'string' }, help: { type: 'boolean', short: 'h' }, follow: { type: 'boolean', short: 'f' },
  tail: { type: 'string' }, since: { type: 'string' }, off: { type: 'boolean' }, source: { type: 'string' },
  'runpod-api-url': { type: 'string' },
} as const;

/** Runs one command; returns the exit code. */
export async function main(argv: readonly string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  try {
    const dashes = argv.indexOf('--');
    const [ours, remote] = dashes === -1 ? [argv, []] : [argv.slice(0, dashes), argv.slice(dashes + 1)];
    let parsed;
    try {
      parsed = parseArgs({ args: [...ours], options, allowPositionals: true, strict: true });
    } catch (error) {
      throw new PluginError(`${(error instanceof Error ? error.message : String(error)).split('.')[0] ?? ''}; see kubectl runpod --help`);
    }
    const { values, positionals: [command, name, ...extra] } = parsed;
    if (values.help || command === undefined || command === 'help') {
      (command === undefined && !values.help ? err : out).write(usage);
      return command === undefined && !values.help ? 1 : 0;
    }
    const target = async () => (await import('./cluster.ts')).loadTarget({ kubeconfig: values.kubeconfig, context: values.context, namespace: values.namespace });
    const needsRun = (): string => {
      if (!name) throw new PluginError(`kubectl runpod ${command} needs the run's name: kubectl runpod ${command} RUN`);
      if (extra.length > 0) throw new PluginError(`unexpected argument "${extra[0] ?? ''}"${command === 'ssh' ? ' (a remote command goes after --)' : ''}`);
      return name;
    };
    switch (command) {
      case 'logs': {
        // Every value is checked before the cluster is asked anything.
        const [run, follow, tail] = [needsRun(), values.follow ?? false, tailOf(values.tail)];
        if (sourceOf(values.source) === 'job') {
          if (values.since !== undefined) throw new PluginError('--since applies to --source system only: the job\'s log lines carry no timestamps', 2);
          const { logs } = await import('./logs.ts');
          return await logs(await target(), run, { follow, tail, out, err });
        }
        const { runpodApiUrl, systemLogs } = await import('./system-logs.ts');
        const options = { follow, tail, since: sinceOf(values.since, 2), apiUrl: runpodApiUrl(values['runpod-api-url']), out, err };
        return await systemLogs(await target(), run, options);
      }
      case 'ssh': {
        const run = needsRun();
        return await (await import('./ssh.ts')).ssh(await target(), run, remote);
      }
      case 'results':
        if (extra.length > 1) throw new PluginError(`unexpected argument "${extra[1] ?? ''}": kubectl runpod results RUN [DIR]`);
        if (!name) throw new PluginError('kubectl runpod results needs the run\'s name: kubectl runpod results RUN [DIR]');
        return await (await import('./results.ts')).results(await target(), name, extra[0] ?? '.', out, err);
      case 'cost': {
        if (name) throw new PluginError(`unexpected argument "${name}": kubectl runpod cost takes no run`);
        const since = sinceOf(values.since);
        return await (await import('./runs.ts')).cost(await target(), values['all-namespaces'] ?? false, since, out);
      }
      case 'cancel':
      case 'keep': {
        const [run, change] = [needsRun(), command === 'cancel' ? { cancel: true } : { keepPod: !(values.off ?? false) }];
        return await (await import('./runs.ts')).setSpec(await target(), run, change, out);
      }
      default: throw new PluginError(`unknown command "${command}"; see kubectl runpod --help`);
    }
  } catch (error) {
    err.write(`error: ${error instanceof PluginError ? error.message : (await import('../kube/errors.ts')).describeError(error)}\n`);
    return error instanceof PluginError ? error.exitCode : 1;
  }
}

function tailOf(value: string | undefined): number {
  if (value === undefined) return -1;
  if (!/^(-1|\d+)$/.test(value)) throw new PluginError(`--tail must be a number of lines (or -1 for all), not "${value}"`);
  return Number(value);
}

function sourceOf(value: string | undefined): 'job' | 'system' {
  if (value === undefined || value === 'job' || value === 'system') return value ?? 'job';
  throw new PluginError(`--source must be job or system, not "${value}"`, 2);
}

const sinceUnits: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

function sinceOf(value: string | undefined, exitCode = 1): Date | undefined {
  if (value === undefined) return undefined;
  const match = /^(\d+)([smhd])$/.exec(value);
  if (!match) throw new PluginError(`--since must be a duration such as 90m, 12h or 7d, not "${value}"`, exitCode);
  return new Date(Date.now() - Number(match[1]) * (sinceUnits[match[2] ?? 's'] ?? 1000));
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
