// `npm run chaos -- --runs N --seed S`: a chaos session against a local kube-apiserver + etcd (or
// --kubeconfig), printing the invariants as figures; exits 1 when one is broken.
//   --runs N          runs to apply (default 30)       --seed S        schedule seed (default 1)
//   --faults N        faults (default: one per run)    --kills N       controller kills (default: runs / 5)
//   --only-faults a,b fault generators to draw from    --windows a,b   kill windows to cycle through
//   --stock N         GPUs of stock (default 5)        --settle S      seconds without a run ending before the wait for the rest stops (default 600; 3x in all)
//   --hold-kept B     before deleting, wait for kept pods' deadline + margin (default true)
//   --conditions C    drawn (default: list lag, boot statuses, spend limit, pod-key refusals, paged lists drawn from the seed) or plain
//   --bad-key-runs N  runs whose Secret holds a malformed key (default 1)
//   --retry-runs N    runs with spec.retry whose job fails its tries before the last (default: runs / 10, at least 1)
//   --work-dir DIR    where logs, results and report.json go (default: a temp directory)
//   --kubeconfig F    use this API server instead of starting one
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { PooledKubeConfig } from '../../src/kube/kubeconfig.ts';
import { z } from 'zod';
import { startControlPlane, type ControlPlane } from '../envtest/harness.ts';
import { describeConditions } from './conditions.ts';
import { isFaultName, type FaultGeneratorName } from './faults.ts';
import { brokenFigures, formatReport } from './report.ts';
import { buildSchedule, killWindows, type KillWindow } from './schedule.ts';
import { runSession } from './session.ts';

const list = <T extends string>(valid: (name: string) => name is T, what: string) => z.string().transform((text, ctx) => {
  const names = text.split(',').map((name) => name.trim()).filter(Boolean);
  const bad = names.filter((name) => !valid(name));
  if (bad.length > 0) ctx.addIssue({ code: 'custom', message: `unknown ${what}: ${bad.join(', ')}` });
  return names as T[];
});
const isWindow = (name: string): name is KillWindow => (killWindows as readonly string[]).includes(name);
const int = (min: number) => z.coerce.number().int().min(min);

const optionsSchema = z.strictObject({
  runs: int(1).default(30), seed: int(0).default(1), faults: int(0).optional(), kills: int(0).optional(),
  'only-faults': list<FaultGeneratorName>(isFaultName, 'fault').optional(), windows: list<KillWindow>(isWindow, 'window').optional(),
  'bad-key-runs': int(0).default(1), 'retry-runs': int(0).optional(), 'hold-kept': z.stringbool().default(true), conditions: z.enum(['drawn', 'plain']).default('drawn'), stock: int(1).default(5), settle: int(10).default(600), 'work-dir': z.string().min(1).optional(), kubeconfig: z.string().min(1).optional(),
});

const { values } = parseArgs({
  options: Object.fromEntries(Object.keys(optionsSchema.shape).map((name) => [name, { type: 'string' as const }])),
  strict: true,
});
const parsed = optionsSchema.safeParse(values);
if (!parsed.success) {
  console.error(`chaos: ${parsed.error.issues.map((issue) => `--${issue.path.join('.')}: ${issue.message}`).join('; ')}`);
  process.exit(2);
}
const options = parsed.data;
const workDir = options['work-dir'] ?? mkdtempSync(join(tmpdir(), `chaos-s${options.seed}-`));
const schedule = buildSchedule({
  runs: options.runs, seed: options.seed, faults: options.faults, kills: options.kills,
  faultNames: options['only-faults'], windows: options.windows, conditions: options.conditions, badKeyRuns: options['bad-key-runs'],
  retryRuns: options['retry-runs'],
});
const say = (line: string) => console.log(`chaos: ${line}`);
say(`seed ${schedule.seed}: schedule ${schedule.hash} (${schedule.runs.length} runs, ${schedule.faults.length} faults, ${schedule.kills.length} kills); work dir ${workDir}`);
say(`simulated Runpod: ${describeConditions(schedule.conditions)}`);

let plane: ControlPlane | undefined;
let kubeConfig: KubeConfig;
let kubeconfigPath: string;
if (options.kubeconfig) {
  kubeConfig = new PooledKubeConfig();
  kubeConfig.loadFromFile(options.kubeconfig);
  kubeconfigPath = options.kubeconfig;
} else {
  plane = await startControlPlane({ dir: join(workDir, 'envtest') });
  ({ kubeConfig, kubeconfigPath } = plane);
}
let exitCode = 1;
try {
  const report = await runSession({
    schedule, kubeConfig, kubeconfigPath, workDir, stock: options.stock, settleTimeoutMs: options.settle * 1000,
    billingMarginMs: 15_000, windowTimeoutMs: 60_000, holdKeptPods: options['hold-kept'], say,
  });
  console.log(formatReport(report));
  writeFileSync(join(workDir, 'report.json'), JSON.stringify(report, null, 2));
  const broken = brokenFigures(report);
  say(broken.length === 0 ? 'every invariant held' : `BROKEN: ${broken.map((figure) => figure.name).join('; ')}`);
  exitCode = broken.length === 0 ? 0 : 1;
} finally {
  await plane?.stop();
}
process.exit(exitCode);
