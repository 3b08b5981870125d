// A correctness check of streaming, not a speed test: retrieving a file far larger than the
// allowed memory growth proves nothing holds a whole file in memory.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectPinned, type SshConnection } from '../../src/ssh/connect.ts';
import { computeManifest } from '../../src/ssh/manifest.ts';
import { retrieveDirectory } from '../../src/ssh/retrieve.ts';
import { shellQuote } from '../../src/ssh/shell.ts';
import { makeRemoteTempDir, remoteSh, removeRemoteDir } from './remote-dir.ts';
import { startSshd, type TestSshd } from './sshd.ts';

const SIZE = 300 * 1024 * 1024;
const MAX_GROWTH = 100 * 1024 * 1024;

void describe('retrieving a 300 MB file', () => {
  let sshd: TestSshd;
  let conn: SshConnection;
  let remote: string;
  let local: string;
  before(async () => {
    sshd = await startSshd();
    conn = await connectPinned(sshd.connectOptions());
    remote = await makeRemoteTempDir(conn, 'rpo-large');
    local = mkdtempSync(join(tmpdir(), 'rpo-large-local-'));
  });
  after(async () => {
    await removeRemoteDir(conn, remote);
    conn.close();
    await sshd.stop();
    rmSync(local, { recursive: true, force: true });
  });

  void it('keeps the process RSS growth far below the file size', async (t) => {
    const file = `${remote}/out/big file.bin`;
    await remoteSh(conn, `mkdir -p ${shellQuote(`${remote}/out`)} && { fallocate -l ${SIZE} ${shellQuote(file)} 2>/dev/null || head -c ${SIZE} /dev/zero > ${shellQuote(file)}; } && printf warm > ${shellQuote(`${remote}/out/small`)}`);
    // Warm up on a 32 MiB retrieval first, so the baseline already holds what the first use of
    // each code path allocates (heap and allocator growth that stays, whatever the file size).
    await remoteSh(conn, `mkdir -p ${shellQuote(`${remote}/warm`)} && head -c ${32 * 1024 * 1024} /dev/zero > ${shellQuote(`${remote}/warm/w`)}`);
    await retrieveDirectory(conn, `${remote}/warm`, join(local, 'warm'), await computeManifest(conn, `${remote}/warm`, { timeoutMs: 60_000 }));

    const manifest = await computeManifest(conn, `${remote}/out`, { timeoutMs: 300_000 });
    const baseline = process.memoryUsage.rss();
    let peak = baseline;
    const result = await retrieveDirectory(conn, `${remote}/out`, join(local, 'out'), manifest, {
      onProgress: () => {
        peak = Math.max(peak, process.memoryUsage.rss());
      },
    });
    peak = Math.max(peak, process.memoryUsage.rss());

    assert.deepEqual(result, { ok: true, files: 2, bytes: SIZE + 4 });
    assert.equal(statSync(join(local, 'out', 'big file.bin')).size, SIZE);
    const growth = peak - baseline;
    t.diagnostic(`RSS growth ${(growth / 1048576).toFixed(1)} MiB (baseline ${(baseline / 1048576).toFixed(1)} MiB)`);
    assert.ok(growth < MAX_GROWTH, `RSS grew by ${(growth / 1048576).toFixed(1)} MiB while retrieving ${SIZE / 1048576} MiB`);
  });
});
