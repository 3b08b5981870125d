import assert from 'node:assert/strict';
import { test } from 'node:test';
import { carriedBy } from '../../../src/run/act/retrieve-s3.ts';

test('carriedBy: direct only when the pod sent every file, in this try or an earlier one', () => {
  assert.equal(carriedBy(['direct', 'direct']), 'direct', 'a retry that found the pod\'s objects stored');
  assert.equal(carriedBy(['direct', 'controller']), 'controller', 'the controller streamed some of them');
  assert.equal(carriedBy(['direct', undefined]), 'controller', 'an object that does not say who sent it');
  assert.equal(carriedBy([]), 'controller', 'no file: the controller wrote the commit alone');
});
