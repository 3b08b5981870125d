// Retrieval throughput and memory over loopback against a real sshd (needs root, like the tests):
//   node bench/ssh-transfer.bench.ts        (BENCH_SIZE_MB=500 by default)
// Prints figures only; loopback measures our CPU cost (ssh2 crypto, hashing, disk), not a network.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectPinned } from '../src/ssh/connect.ts';
import { computeManifest } from '../src/ssh/manifest.ts';
import { retrieveDirectory } from '../src/ssh/retrieve.ts';
import { shellQuote } from '../src/ssh/shell.ts';
import { downloadFile } from '../src/ssh/transfer.ts';
import { makeRemoteTempDir, remoteSh, removeRemoteDir } from '../test/ssh/remote-dir.ts';
import { startSshd } from '../test/ssh/sshd.ts';

const sizeMb = Number(process.env.BENCH_SIZE_MB ?? 500);
const size = sizeMb * 1024 * 1024;
const mib = (bytes: number): string => (bytes / 1048576).toFixed(1);

const sshd = await startSshd();
const conn = await connectPinned(sshd.connectOptions());
const remote = await makeRemoteTempDir(conn, 'rpo-bench');
const local = mkdtempSync(join(tmpdir(), 'rpo-bench-local-'));
let peak = process.memoryUsage.rss();
const sampler = setInterval(() => {
  peak = Math.max(peak, process.memoryUsage.rss());
}, 20);

try {
  const file = `${remote}/out/payload.bin`;
  await remoteSh(conn, `mkdir -p ${shellQuote(`${remote}/out`)} && head -c ${size} /dev/urandom > ${shellQuote(file)}`);
  console.log(`payload: ${sizeMb} MiB of random data, one file`);

  // The bar (issue 21): the bare SFTP stream, set once measured; the controller's paths print a share of it.
  const bar: { seconds?: number } = {};
  const time = async <T>(what: string, work: () => Promise<T>): Promise<{ result: T; seconds: number }> => {
    const started = performance.now();
    const result = await work();
    const seconds = (performance.now() - started) / 1000;
    const share = bar.seconds === undefined ? '' : `  ${(bar.seconds / seconds).toFixed(2)}x the SFTP stream`;
    console.log(`${what.padEnd(38)} ${seconds.toFixed(2).padStart(7)} s  ${(sizeMb / seconds).toFixed(1).padStart(7)} MiB/s${share}`);
    return { result, seconds };
  };

  const { result: manifest } = await time('manifest on the pod (sha256sum)', () => computeManifest(conn, `${remote}/out`, { timeoutMs: 600_000 }));
  const expected = manifest.files[0];
  if (!expected) throw new Error('empty manifest');

  // Warm-up: the first use of each path grows heap and allocator once, whatever the size.
  const coldRss = process.memoryUsage.rss();
  await remoteSh(conn, `mkdir -p ${shellQuote(`${remote}/warm`)} && head -c ${32 * 1024 * 1024} /dev/zero > ${shellQuote(`${remote}/warm/w`)}`);
  await retrieveDirectory(conn, `${remote}/warm`, join(local, 'warm'), await computeManifest(conn, `${remote}/warm`, { timeoutMs: 60_000 }));
  const baseline = process.memoryUsage.rss();
  peak = baseline;
  // ssh2's fastGet (64 reads of 32 KiB in flight) to disk, with no hashing and no verification.
  bar.seconds = (await time('SFTP stream alone (ssh2 fastGet)', () => new Promise<void>((resolve, reject) => {
    conn.client.sftp((error, sftp) => {
      if (error) return reject(error);
      sftp.fastGet(file, join(local, 'bare.bin'), { concurrency: 64, chunkSize: 32 * 1024 }, (failed) => {
        sftp.end();
        if (failed) reject(failed);
        else resolve();
      });
    });
  }))).seconds;
  await time('downloadFile (stream + SHA-256 + write)', () =>
    downloadFile(conn, file, join(local, 'single', 'payload.bin'), { expectedSha256: expected.sha256, expectedSize: expected.size }),
  );
  const downloadPeak = peak;

  peak = process.memoryUsage.rss();
  const { result } = await time('retrieveDirectory (download + verify)', () => retrieveDirectory(conn, `${remote}/out`, join(local, 'retrieved'), manifest));
  if (!result.ok) throw new Error(`retrieval not verified: ${JSON.stringify(result)}`);

  console.log(`RSS before warm-up ${mib(coldRss)} MiB, after a 32 MiB warm-up ${mib(baseline)} MiB`);
  console.log(`peak RSS during downloadFile ${mib(downloadPeak)} MiB (+${mib(downloadPeak - baseline)}), during retrieveDirectory ${mib(peak)} MiB (+${mib(peak - baseline)})`);
} finally {
  clearInterval(sampler);
  await removeRemoteDir(conn, remote);
  conn.close();
  await sshd.stop();
  rmSync(local, { recursive: true, force: true });
}
