// A node:test reporter that prints, once the run ends, the ten (SLOWEST_FILES) test files that took longest (the sum
// of their top-level tests' durations: tests within a file run one after another), then every failed
// test by file and name with the first line of its error. `make test` adds it beside the spec reporter,
// so every run says where the suite's time goes, and the last lines of a failed run (all a CI log may
// keep) name what failed. With RECORD_TEST_DURATIONS=1 (the suite's heavy runner) it also records each
// file's time, so that the next run starts the longest first (test/support/file-order.ts).
import { relative } from 'node:path';
import { recordDurations } from './file-order.ts';

interface TestEvent {
  type: string;
  data?: {
    file?: string;
    name?: string;
    nesting?: number;
    details?: { duration_ms?: number; error?: { message?: string; cause?: unknown } };
  };
}

// SLOWEST_FILES=N shows N (e.g. 200: every file, to see where a change moved the time).
const shown = Number(process.env.SLOWEST_FILES ?? 10) || 10;

export default async function* slowestFiles(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const byFile = new Map<string, number>();
  const failed: string[] = [];
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { file, name, nesting, details } = event.data ?? {};
    if (event.type === 'test:fail' && !isSubtestsFailed(details?.error)) {
      failed.push(`  ${file ? relative(process.cwd(), file) : '?'}: ${name ?? '?'}\n      ${firstLine(details?.error)}\n`);
    }
    if (!file || nesting !== 0 || details?.duration_ms === undefined) continue;
    byFile.set(file, (byFile.get(file) ?? 0) + details.duration_ms);
  }
  if (process.env.RECORD_TEST_DURATIONS === '1' && byFile.size > 0) {
    recordDurations(Object.fromEntries([...byFile].map(([file, ms]) => [relative(process.cwd(), file), Math.round(ms)])));
  }
  const slowest = [...byFile].sort((a, b) => b[1] - a[1]).slice(0, shown);
  if (slowest.length > 0) {
    yield `\nslowest ${slowest.length} test files (seconds in their tests):\n`;
    for (const [file, ms] of slowest) yield `  ${(ms / 1000).toFixed(1).padStart(7)}  ${relative(process.cwd(), file)}\n`;
  }
  if (failed.length > 0) {
    yield `\n${failed.length} failed test${failed.length === 1 ? '' : 's'}:\n`;
    yield* failed;
  }
}

// A suite whose failure is only that a test inside it failed: the inner test is listed already.
function isSubtestsFailed(error: { cause?: unknown } | undefined): boolean {
  return typeof error?.cause === 'string' && /subtests? failed/.test(error.cause);
}

function firstLine(error: { message?: string; cause?: unknown } | undefined): string {
  const cause = error?.cause;
  const text = cause instanceof Error ? cause.message : typeof cause === 'string' ? cause : (error?.message ?? '');
  return (text.split('\n').find((line) => line.trim() !== '') ?? '').slice(0, 200);
}
