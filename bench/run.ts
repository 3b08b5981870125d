// `npm run bench`: every bench/*.bench.ts in turn, each its own process. With arguments
// (`npm run bench -- --runs 200 --running 300`) only the scale bench runs, with them.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildDist } from '../hack/build.ts';

const args = process.argv.slice(2);
// The idle and failover benches start the controller as the image does: from dist/, built now.
await buildDist();
const files = args.length > 0 ? ['scale.bench.ts'] : readdirSync(import.meta.dirname).filter((f) => f.endsWith('.bench.ts')).sort();
for (const file of files) {
  console.log(`== bench/${file}`);
  // --expose-gc: memory figures are read after a collection, not with whatever garbage is pending.
  const { status } = spawnSync(process.execPath, ['--expose-gc', join(import.meta.dirname, file), ...args], { stdio: 'inherit' });
  if (status !== 0) process.exit(status ?? 1);
}
