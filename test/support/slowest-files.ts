// A node:test reporter that prints, once the run ends, the ten test files that took longest (the sum
// of their top-level tests' durations: tests within a file run one after another). `make test` adds it
// beside the spec reporter, so every run says where the suite's time goes.
import { relative } from 'node:path';

interface TestEvent { type: string; data?: { file?: string; nesting?: number; details?: { duration_ms?: number } } }

const shown = 10;

export default async function* slowestFiles(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const byFile = new Map<string, number>();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { file, nesting, details } = event.data ?? {};
    if (!file || nesting !== 0 || details?.duration_ms === undefined) continue;
    byFile.set(file, (byFile.get(file) ?? 0) + details.duration_ms);
  }
  const slowest = [...byFile].sort((a, b) => b[1] - a[1]).slice(0, shown);
  if (slowest.length === 0) return;
  yield `\nslowest ${slowest.length} test files (seconds in their tests):\n`;
  for (const [file, ms] of slowest) yield `  ${(ms / 1000).toFixed(1).padStart(7)}  ${relative(process.cwd(), file)}\n`;
}
