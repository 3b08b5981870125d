// The Dockerfile cannot be built here (no Docker engine), so it is checked statically: Node 24 in
// every stage, a non-root user, and every file it copies or runs exists.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { imageEntrypoint } from './support/image-entrypoint.ts';

const root = join(import.meta.dirname, '..');
const lines = readFileSync(join(root, 'Dockerfile'), 'utf8').split('\n').map((line) => line.trim()).filter((line) => line && !line.startsWith('#'));

test('the Dockerfile: Node 24 stages, non-root, and what it copies and runs exists', () => {
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
  assert.ok(existsSync(join(root, script)), 'the entry point exists');
  // The compile cache the image fills at build is the one node reads at start.
  const cache = /NODE_COMPILE_CACHE=(\S+)/.exec(lines.find((line) => line.startsWith('ENV ') && line.includes('NODE_COMPILE_CACHE=')) ?? '')?.[1];
  assert.ok(cache, 'NODE_COMPILE_CACHE is set');
  assert.ok(lines.some((line) => line.startsWith('RUN node ') && line.includes(`/app/${script}`)), `the build imports ${script} to fill ${cache}`);
  assert.ok(lines.indexOf(lines.find((line) => line.startsWith('COPY src'))!) < lines.findIndex((line) => line.startsWith('RUN node ')), 'after the sources are copied');
});
