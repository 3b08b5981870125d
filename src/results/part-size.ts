// A multipart upload's part size, from the file's size: S3 takes at most 10 000 parts of 5 MiB to 5 GiB
// (the last may be shorter) and objects of at most 5 TiB. A fixed part size caps the file size
// (8 MiB x 10 000 = 78.1 GiB, under results.maxBytes' default of 100 GiB), so the part grows with the file.
const MIB = 1024 * 1024;

export const MAX_PARTS = 10_000;
export const MIN_PART_BYTES = 5 * MIB;
export const MAX_PART_BYTES = 5 * 1024 * MIB;
const MAX_OBJECT_BYTES = 5 * 1024 * 1024 * MIB;
/** The streamed path's part: lib-storage's own default, and few in memory at a time (s3-stream.ts). */
export const DEFAULT_PART_BYTES = 8 * MIB;

/**
 * The smallest whole number of MiB (the pod cuts parts with `dd bs=1M`), at least `preferredBytes`
 * (within S3's part bounds), that carries `sizeBytes` in at most 10 000 parts. Throws a RangeError for
 * a file larger than S3's largest object.
 */
export function partSizeFor(sizeBytes: number, preferredBytes = DEFAULT_PART_BYTES): number {
  if (sizeBytes > MAX_OBJECT_BYTES) throw new RangeError(`a file of ${sizeBytes} bytes is larger than S3's largest object (5 TiB)`);
  const preferred = Math.min(MAX_PART_BYTES, Math.max(MIN_PART_BYTES, Math.ceil(preferredBytes / MIB) * MIB));
  const needed = Math.ceil(sizeBytes / MAX_PARTS / MIB) * MIB;
  return Math.max(preferred, needed);
}
