// What the controller loads at start. The AWS SDK is ~30 MiB of RSS (and its parse time) that an install
// whose runs never name a bucket would carry for nothing: it loads with the first run that uses one
// (run/ports/s3-access.ts), so importing the entry point must resolve none of it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';

const root = join(import.meta.dirname, '..');

/** Every package specifier the import of `entry` resolves (module hooks in a fresh process). */
function packagesResolvedBy(entry: string): string[] {
  const script = `
import { registerHooks } from 'node:module';
const seen = new Set();
registerHooks({ resolve(specifier, context, next) {
  const resolved = next(specifier, context);
  const at = resolved.url.lastIndexOf('/node_modules/');
  if (at >= 0) seen.add(resolved.url.slice(at + 14).split('/').slice(0, 2).join('/'));
  return resolved;
} });
await import(${JSON.stringify(join(root, entry))});
console.log(JSON.stringify([...seen]));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', cwd: root });
  return JSON.parse(out.trim().split('\n').at(-1)!) as string[];
}

test('the controller starts without the AWS SDK; a run that uses a bucket loads it', () => {
  const atStart = packagesResolvedBy('src/main.ts');
  assert.ok(atStart.includes('@kubernetes/client-node'), `the hook sees the packages main.ts loads: ${atStart.join(', ')}`);
  assert.deepEqual(atStart.filter((name) => name.startsWith('@aws-sdk/') || name.startsWith('@smithy/')), []);
  assert.ok(packagesResolvedBy('src/results/s3-store.ts').includes('@aws-sdk/client-s3'), 'the store client brings the SDK');
});
