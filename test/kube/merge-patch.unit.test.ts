import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyMergePatch, createMergePatch, jsonEqual, normalize, type Json } from '../../src/kube/merge-patch.ts';

void test('normalize drops undefined and null members and stringifies dates', () => {
  assert.deepEqual(normalize({ a: 1, b: undefined, c: null, d: { e: null, f: [1, null] }, t: new Date(0) }),
    { a: 1, d: { f: [1, null] }, t: '1970-01-01T00:00:00.000Z' });
  assert.equal(normalize(undefined), null);
});

void test('jsonEqual ignores key order only', () => {
  assert.equal(jsonEqual({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 }), true);
  assert.equal(jsonEqual({ a: [1, 2] }, { a: [2, 1] }), false);
  assert.equal(jsonEqual({ a: 1 }, { a: 1, b: 2 }), false);
  assert.equal(jsonEqual({ a: 1, b: 2 }, { a: 1, c: 2 }), false);
  assert.equal(jsonEqual([], {}), false);
  assert.equal(jsonEqual(null, {}), false);
  assert.equal(jsonEqual('1', 1), false);
});

void test('the merge patch holds only what changed, nulls what went, and whole arrays', () => {
  const from: Json = { phase: 'Running', reason: 'JobRunning', pod: { id: 'p1', state: 'RUNNING', sshPort: 22 }, attempts: [{ name: 'a-1' }, { name: 'a-2' }], message: 'x' };
  const to: Json = { phase: 'Running', reason: 'JobRunning', pod: { id: 'p1', state: 'EXITED', sshPort: 22 }, attempts: [{ name: 'a-1' }], job: { exitCode: 0 } };
  const patch = createMergePatch(from, to);
  assert.deepEqual(patch, { pod: { state: 'EXITED' }, attempts: [{ name: 'a-1' }], job: { exitCode: 0 }, message: null });
  assert.deepEqual(applyMergePatch(from, patch), to);
});

void test('createMergePatch round-trips through applyMergePatch on many shapes', () => {
  const samples: Json[] = [{}, { a: 1 }, { a: { b: { c: 1 } } }, { a: [1, { b: 2 }] }, { a: 'x', b: true }, { a: { b: 1, c: 2 } }, { x: {} }];
  for (const from of samples) {
    for (const to of samples) {
      assert.deepEqual(applyMergePatch(from, createMergePatch(from, to)), to, `${JSON.stringify(from)} -> ${JSON.stringify(to)}`);
    }
  }
});
