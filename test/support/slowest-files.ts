// A node:test reporter that prints, once the run ends, the ten test files that took longest (the sum
// of their top-level tests' durations) and the last five to finish, with when (seconds after the run
// began): a long file that starts late keeps the suite waiting after the others are done. `make test`
// adds it beside the spec reporter, so every run says where the suite's time goes.
import { relative } from 'node:path';

interface TestEvent { type: string; data?: { file?: string; nesting?: number; details?: { duration_ms?: number } } }

const shown = 10;
const lastShown = 5;

export default async function* slowestFiles(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const began = Date.now();
  const byFile = new Map<string, number>();
  const endedAt = new Map<string, number>();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { file, nesting, details } = event.data ?? {};
    if (!file || nesting !== 0 || details?.duration_ms === undefined) continue;
    byFile.set(file, (byFile.get(file) ?? 0) + details.duration_ms);
    endedAt.set(file, Date.now() - began);
  }
  const slowest = [...byFile].sort((a, b) => b[1] - a[1]).slice(0, shown);
  if (slowest.length === 0) return;
  const seconds = (ms: number): string => (ms / 1000).toFixed(1).padStart(7);
  yield `\nslowest ${slowest.length} test files (seconds in their tests):\n`;
  for (const [file, ms] of slowest) yield `  ${seconds(ms)}  ${relative(process.cwd(), file)}\n`;
  yield `last ${lastShown} to finish (seconds after the run began; seconds in their tests):\n`;
  for (const [file, at] of [...endedAt].sort((a, b) => b[1] - a[1]).slice(0, lastShown)) {
    yield `  ${seconds(at)}  ${seconds(byFile.get(file) ?? 0)}  ${relative(process.cwd(), file)}\n`;
  }
}
