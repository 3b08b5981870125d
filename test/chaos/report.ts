// Prints what a session measured: the invariants as figures (each with its offenders), the outcome
// of each run kind, the crash windows hit, and the faults fired.
import { describeConditions } from './conditions.ts';
import { noChanceMs } from './leader-time.ts';
import type { SessionReport } from './session.ts';
import { expectedOutcome, type RunKind } from './workload.ts';

export function formatReport(report: SessionReport): string {
  const lines: string[] = [];
  const { schedule } = report;
  lines.push(`chaos: seed ${schedule.seed}, ${schedule.runs.length} runs, ${schedule.faults.length} faults, ${schedule.kills.length} kills; schedule ${schedule.hash}; ${Math.round(report.durationMs / 1000)} s; namespace ${report.namespace}`);
  lines.push(`simulated Runpod: ${describeConditions(schedule.conditions)}`);
  lines.push('', 'invariants (each must be 0):');
  for (const figure of report.figures) {
    lines.push(`  ${figure.broken ? 'BROKEN' : 'ok    '}  ${figure.name.padEnd(56)} ${figure.value}${figure.unit ?? ''}`);
    for (const detail of figure.details) lines.push(`            ${detail}`);
  }

  if (report.noChance.length > 0) {
    lines.push('', `what the world did before the controller had a chance (under ${noChanceMs / 1000} s of leader time, plus a slow link's transfer; not counted above):`);
    for (const line of report.noChance) lines.push(`            ${line}`);
  }
  if (report.stagingLeft.length > 0) {
    lines.push('', `result store: ${report.stagingLeft.length} staging directories left by killed retrievals (never cleaned up):`);
    for (const dir of report.stagingLeft) lines.push(`            ${dir}`);
  }
  const creates = Object.entries(report.calls.createsByStatus).map(([status, n]) => `${status === '0' ? 'no answer' : status} ${n}`).join(', ');
  // Not an invariant: a refused create costs nothing but budget; many per created pod is a create storm.
  lines.push('', `calls to Runpod with the account key: ${report.calls.total}; creates by status: ${creates || 'none'} (400: refused, e.g. the spend limit; 429: rate limit)`);
  lines.push('', 'outcomes by run kind (expected outcome first; others are outcomes under faults, not broken invariants):');
  const kinds = [...new Set(report.outcomes.map((o) => o.kind))] as RunKind[];
  for (const kind of kinds) {
    const counts = new Map<string, number>();
    for (const outcome of report.outcomes.filter((o) => o.kind === kind)) counts.set(outcome.outcome, (counts.get(outcome.outcome) ?? 0) + 1);
    const expected = expectedOutcome[kind];
    const rest = [...counts].filter(([outcome]) => outcome !== expected).map(([outcome, n]) => `${outcome} ${n}`);
    lines.push(`  ${kind.padEnd(12)} ${expected} ${counts.get(expected) ?? 0}${rest.length ? `; ${rest.join('; ')}` : ''}`);
  }
  lines.push('', 'runs:');
  for (const o of report.outcomes) {
    const unexpected = o.outcome !== expectedOutcome[o.kind as RunKind] && o.outcome !== 'Failed/NoCapacity';
    const tries = o.tries > 1 ? `, tries ${o.tries}` : '';
    lines.push(`  ${o.name.padEnd(26)} ${o.outcome.padEnd(34)} attempts ${o.attempts}, pods ${o.pods}${tries}${unexpected ? `: ${o.message}` : ''}`);
  }

  lines.push('', 'controller kills (SIGKILL, then a restart):');
  const windows = new Map<string, { armed: number; hit: number }>();
  for (const kill of report.kills) {
    const tally = windows.get(kill.planned.window) ?? { armed: 0, hit: 0 };
    tally.armed++;
    if (kill.hit) tally.hit++;
    windows.set(kill.planned.window, tally);
  }
  lines.push(`  windows hit: ${[...windows].map(([window, t]) => `${window} ${t.hit}/${t.armed}`).join(', ')}`);
  for (const kill of report.kills) {
    lines.push(`  ${String(Math.round((kill.atMs ?? 0) / 1000)).padStart(5)}s ${kill.planned.window.padEnd(13)} ${kill.hit ? 'hit ' : 'miss'} ${kill.run ?? ''} ${kill.detail}`);
  }

  lines.push('', 'faults:');
  const fired = report.faults.filter((f) => f.fired);
  lines.push(`  fired ${fired.length}/${report.faults.length}: ${[...count(fired.map((f) => f.planned.name))].map(([name, n]) => `${name} ${n}`).join(', ')}`);
  for (const fault of report.faults) lines.push(`  ${String(Math.round(fault.atMs / 1000)).padStart(5)}s ${fault.fired ? '' : '(not fired) '}${fault.detail}`);
  lines.push('', `controller log: ${report.controllerLog}`);
  return lines.join('\n');
}

export const brokenFigures = (report: SessionReport) => report.figures.filter((figure) => figure.broken);

function count(names: string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const name of names) out.set(name, (out.get(name) ?? 0) + 1);
  return out;
}
