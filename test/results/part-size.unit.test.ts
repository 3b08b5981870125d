// Which part size a multipart upload of a file takes: the smallest whole number of MiB, at least the
// path's preferred part, that carries the file in at most 10 000 parts (S3's limit), never under 5 MiB
// nor over 5 GiB (S3's part bounds); a file no part size can carry is refused by name of the bound.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_PARTS, MAX_PART_BYTES, MIN_PART_BYTES, partSizeFor } from '../../src/results/part-size.ts';

const MIB = 1024 ** 2;
const GIB = 1024 ** 3;
const TIB = 1024 ** 4;

const cases: { name: string; size: number; preferred?: number; part: number }[] = [
  { name: 'an empty file: the preferred part', size: 0, part: 8 * MIB },
  { name: 'a small file: the preferred part (8 MiB by default)', size: 3 * MIB, part: 8 * MIB },
  { name: 'exactly 10 000 preferred parts', size: 10_000 * 8 * MIB, part: 8 * MIB },
  { name: 'one byte more than 10 000 preferred parts: the next whole MiB', size: 10_000 * 8 * MIB + 1, part: 9 * MIB },
  { name: '100 GiB (maxBytes\' default): 11 MiB parts', size: 100 * GIB, part: 11 * MIB },
  { name: '1 TiB', size: TIB, part: 105 * MIB },
  { name: '5 TiB, S3\'s largest object', size: 5 * TIB, part: 525 * MIB },
  { name: 'a preferred 64 MiB part (the direct path) stays for 100 GiB', size: 100 * GIB, preferred: 64 * MIB, part: 64 * MIB },
  { name: 'a preferred part under S3\'s 5 MiB minimum is raised to it', size: MIB, preferred: MIB, part: MIN_PART_BYTES },
  { name: 'a preferred part over S3\'s 5 GiB maximum is lowered to it', size: MIB, preferred: 6 * GIB, part: MAX_PART_BYTES },
];

for (const c of cases) {
  test(`partSizeFor: ${c.name}`, () => {
    const part = partSizeFor(c.size, c.preferred);
    assert.equal(part, c.part);
    assert.ok(Math.ceil(c.size / part) <= MAX_PARTS, `${Math.ceil(c.size / part)} parts`);
    assert.equal(part % MIB, 0, 'a whole number of MiB (the pod cuts parts with dd bs=1M)');
    assert.ok(part >= MIN_PART_BYTES && part <= MAX_PART_BYTES);
  });
}

test('partSizeFor: a file larger than S3\'s largest object (5 TiB) is refused, naming the bound', () => {
  assert.throws(() => partSizeFor(5 * TIB + 1), /larger than S3's largest object \(5 TiB\)/);
});
