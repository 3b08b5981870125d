// Word splitting of `args` as Runpod does it: POSIX quoting, no expansion, no operators.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { UnsplittableArgsError, splitArgs } from './argv.ts';

const table: [string, string[]][] = [
  ['', []],
  ['   \t\n ', []],
  ['sleep infinity', ['sleep', 'infinity']],
  ['  a   b\tc\nd  ', ['a', 'b', 'c', 'd']],
  ["sh -c 'echo hi; exit 3'", ['sh', '-c', 'echo hi; exit 3']],
  ["'a b'c\"d e\"f", ['a bcd ef']],
  ["'' \"\" x''", ['', '', 'x']],
  ["'a\\'", ['a\\']],
  ["'it'\\''s'", ["it's"]],
  ['"a\\"b"', ['a"b']],
  ['"a\\\\b\\\\c"', ['a\\b\\c']],
  ['"a\\b"', ['a\\b']],
  ['"\\$HOME \\`x\\`"', ['$HOME `x`']],
  ['a\\ b', ['a b']],
  ['a\\\nb', ['ab']],
  ['"a\\\nb"', ['ab']],
  ['a\\', ['a\\']],
  ['\\\'x', ["'x"]],
  ['"\'"', ["'"]],
  ["'\"'", ['"']],
  ['"a\nb"', ['a\nb']],
];

// What a shell would expand or treat as syntax stays literal.
const literal: [string, string[]][] = [
  ['echo $HOME', ['echo', '$HOME']],
  ['"$HOME" ${X:-y} $(id) `id`', ['$HOME', '${X:-y}', '$(id)', '`id`']],
  ['a;b a ; b', ['a;b', 'a', ';', 'b']],
  ['x | y && z || w > f < g 2>&1 &', ['x', '|', 'y', '&&', 'z', '||', 'w', '>', 'f', '<', 'g', '2>&1', '&']],
  ['ls * ~ ?', ['ls', '*', '~', '?']],
  ['echo # not a comment', ['echo', '#', 'not', 'a', 'comment']],
  ['(a) {b}', ['(a)', '{b}']],
  ['exec sh -c x', ['exec', 'sh', '-c', 'x']],
];

/** The words a real sh makes of `text` (no expansions in it, so only its quoting matters). */
function shWords(text: string): string[] {
  const result = spawnSync('dash', ['-c', `printf '%s\\0' ${text}`], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  const words = result.stdout.split('\0');
  words.pop();
  return words;
}

describe('splitArgs', () => {
  test('quotes and backslashes as in POSIX sh (the same words a real dash makes)', () => {
    for (const [text, words] of table) {
      assert.deepEqual(splitArgs(text), words, JSON.stringify(text));
      // printf with no words prints one empty word; an unquoted newline ends a command in sh
      // (here it is a blank, there being no commands): compare the rest.
      if (words.length > 0 && !/\n[^"]*$/.test(text.replace(/\\\n/g, ''))) assert.deepEqual(shWords(text), words, `dash agrees on ${JSON.stringify(text)}`);
    }
  });

  test('no expansion, no operators, no globs, no comments: all literal words', () => {
    for (const [text, words] of literal) assert.deepEqual(splitArgs(text), words, JSON.stringify(text));
  });

  test('an unclosed quote does not split', () => {
    for (const text of ["sh -c 'echo", 'a "b', "'''", 'x "\\"']) {
      assert.throws(() => splitArgs(text), UnsplittableArgsError, JSON.stringify(text));
    }
  });
});
