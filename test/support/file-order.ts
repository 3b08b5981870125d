// The order the integration files start in: longest first, as each took in the last run on this
// machine (Jest's sequencer does the same). Several run at once, so the suite ends when its last file
// does: started in name order, the longest files (pod/ sorts late) ran alone at the end while the
// machine sat half idle. A fresh checkout (no record yet: `npm ci` clears node_modules) orders by the
// durations kept in the repository; a file in neither (a new one) starts first: it may be long.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';

/** Where the durations are kept between runs (beside node's compile cache; `npm ci` clears both). */
export const DURATIONS_FILE = 'node_modules/.cache/runpod-operator/test-durations.json';
/** Durations measured once on the development machine, for a checkout that has no record of its own. */
export const BASELINE_FILE = 'test/support/test-durations.json';

const Durations = z.record(z.string(), z.number().nonnegative());
export type Durations = z.infer<typeof Durations>;

/** `files` longest first by `durations` (milliseconds by file), unrecorded ones before all, ties by name. */
export function longestFirst(files: readonly string[], durations: Durations): string[] {
  const weight = (file: string): number => durations[file] ?? Number.POSITIVE_INFINITY;
  return [...files].sort((a, b) => weight(b) - weight(a) || (a < b ? -1 : a > b ? 1 : 0));
}

/** The durations recorded by the last run, or none when there is no record or it cannot be read. */
export function readDurations(path = DURATIONS_FILE): Durations {
  try {
    const parsed = Durations.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    return parsed.success ? parsed.data : {};
  } catch {
    return {};
  }
}

/** What is known of each file's duration: the last run's record over the repository's baseline. */
export function knownDurations(): Durations {
  return { ...readDurations(BASELINE_FILE), ...readDurations(DURATIONS_FILE) };
}

/** Records `measured` over what was kept: a run of a few files keeps the others' durations. */
export function recordDurations(measured: Durations, path = DURATIONS_FILE): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify({ ...readDurations(path), ...measured }, null, 1)}\n`);
}
