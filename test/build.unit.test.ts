// What ships is the bundle (hack/build.ts): the image carries no node_modules and the krew archive only
// bin/ and dist/, so the bundle must run from a directory where no package can be resolved, and the
// controller must still start without the AWS SDK (test/startup-modules.unit.test.ts, for the sources).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { builtinModules, SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Metafile } from 'esbuild';
import { buildDist, ENTRY_POINTS } from '../hack/build.ts';

const outdir = mkdtempSync(join(tmpdir(), 'dist-'));
let metafile: Metafile;
before(async () => { metafile = await buildDist(outdir); });
after(() => rmSync(outdir, { recursive: true, force: true }));

const outputs = (): [string, Metafile['outputs'][string]][] => Object.entries(metafile.outputs).filter(([path]) => path.endsWith('.mjs'));

/** Native speed-ups their users load inside a try and do without: ssh2's (marked external) and ws's
 * (client-node's websockets; esbuild leaves a require it cannot resolve inside a try as it is). */
const OPTIONAL = new Set(['cpu-features', 'bufferutil', 'utf-8-validate']);

test('the bundle leaves to the runtime only Node itself and optional native speed-ups', () => {
  const external = new Set(outputs().flatMap(([, output]) => output.imports.filter((i) => i.external).map((i) => i.path)));
  const allowed = (path: string): boolean => path.startsWith('node:') || builtinModules.includes(path) || OPTIONAL.has(path) || path.endsWith('.node');
  assert.deepEqual([...external].filter((path) => !allowed(path)), []);
  for (const script of ['bootstrap.sh', 'watchdog.sh']) assert.ok(existsSync(join(outdir, script)), `${script} beside the code that reads it`);
  for (const name of Object.keys(ENTRY_POINTS)) assert.ok(existsSync(join(outdir, `${name}.mjs`)), `${name}.mjs`);
});

test('the controller entry loads no AWS SDK code until a run uses a bucket', () => {
  const byPath = new Map(outputs().map(([path, output]) => [path, output]));
  const entry = [...byPath.keys()].find((path) => path.endsWith('/controller.mjs'))!;
  const eager = new Set<string>();
  const visit = (path: string): void => {
    if (eager.has(path)) return;
    eager.add(path);
    for (const i of byPath.get(path)?.imports ?? []) if (i.kind === 'import-statement' && !i.external) visit(i.path);
  };
  visit(entry);
  const sdk = (path: string): boolean => Object.keys(byPath.get(path)?.inputs ?? {}).some((input) => /node_modules\/@(aws-sdk|smithy)\//.test(input));
  assert.deepEqual([...eager].filter(sdk), [], 'loaded at start');
  assert.ok([...byPath.keys()].some(sdk), 'the SDK is in a chunk loaded on first use');
});

test('every module of the bundle loads where no node_modules can be found', () => {
  const modules = readdirSync(outdir).filter((file) => file.endsWith('.mjs'));
  // The controller's and the plugin's entries run only as entry points (import.meta.main): importing starts nothing.
  const script = `for (const file of ${JSON.stringify(modules)}) await import(${JSON.stringify(outdir)} + '/' + file);`;
  execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: outdir, stdio: ['ignore', 'ignore', 'pipe'] });
});

test('the minified bundle maps back to the sources (what NODE_OPTIONS=--enable-source-maps reads)', () => {
  const code = readFileSync(join(outdir, 'controller.mjs'), 'utf8');
  assert.match(code, /\n\/\/# sourceMappingURL=controller\.mjs\.map\n?$/);
  const map = new SourceMap(JSON.parse(readFileSync(join(outdir, 'controller.mjs.map'), 'utf8')) as ConstructorParameters<typeof SourceMap>[0]);
  const at = code.indexOf('cannot start:');
  const lines = code.slice(0, at).split('\n');
  const entry = map.findEntry(lines.length - 1, lines.at(-1)?.length ?? 0);
  assert.ok('originalSource' in entry && entry.originalSource.endsWith('/src/main.ts'), `mapped to ${JSON.stringify(entry)}`);
});
