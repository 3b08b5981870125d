// The Dockerfile cannot be built here (no Docker engine), so it is checked statically: Node 24 in
// every stage, a non-root user, every file it copies exists, and it runs the controller as bundled.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ENTRY_POINTS } from '../hack/build.ts';
import { imageEntrypoint } from './support/image-entrypoint.ts';

const root = join(import.meta.dirname, '..');
const lines = readFileSync(join(root, 'Dockerfile'), 'utf8').split('\n').map((line) => line.trim()).filter((line) => line && !line.startsWith('#'));

test('the Dockerfile: Node 24 stages, non-root, what it copies exists, and it runs the bundled controller', () => {
  const froms = lines.filter((line) => line.startsWith('FROM '));
  assert.ok(froms.length >= 2, 'multi-stage');
  for (const from of froms) assert.match(from, /^FROM node:24[-.\w]*( AS \w+)?$/);
  const user = lines.filter((line) => line.startsWith('USER ')).at(-1);
  assert.ok(user && !/^USER (root|0)$/.test(user), 'runs as a non-root user');
  for (const copy of lines.filter((line) => line.startsWith('COPY ') && !line.includes('--from'))) {
    for (const source of copy.split(/\s+/).slice(1, -1)) assert.ok(existsSync(join(root, source)), `${source} exists`);
  }
  const { program, script } = imageEntrypoint();
  assert.equal(program, 'node');
  // dist/ is built in the image's first stage (and by the tests' global setup), not committed.
  assert.equal(script, 'dist/controller.mjs');
  assert.ok(Object.keys(ENTRY_POINTS).map((name) => `dist/${name}.mjs`).includes(script), 'an entry point of the build');
  assert.ok(lines.includes('RUN node hack/build.ts'), 'the build stage bundles');
  assert.ok(lines.some((line) => line.startsWith('RUN npm ci ') && !line.includes('--omit=dev')), 'with esbuild, a devDependency');
  assert.ok(lines.includes('COPY --from=build /app/dist ./dist'), 'the image takes the bundle, and no node_modules');
  assert.ok(!lines.some((line) => line.includes('node_modules')), 'no node_modules in the image');
  // The compile cache the image fills at build is the one node reads at start.
  const cache = /NODE_COMPILE_CACHE=(\S+)/.exec(lines.find((line) => line.startsWith('ENV ') && line.includes('NODE_COMPILE_CACHE=')) ?? '')?.[1];
  assert.ok(cache, 'NODE_COMPILE_CACHE is set');
  assert.ok(lines.some((line) => line.startsWith('RUN node ') && line.includes(`/app/${script}`)), `the build imports ${script} to fill ${cache}`);
  assert.ok(lines.indexOf(lines.find((line) => line.startsWith('COPY src'))!) < lines.findIndex((line) => line.startsWith('RUN node ')), 'the build after the sources are copied');
});
