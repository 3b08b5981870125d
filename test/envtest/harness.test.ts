// The test control plane itself: a port taken between asking for it and the server binding it (another
// process of the suite got it first) costs a retry on fresh ports, never a wait on whoever holds it.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freePort, startControlPlane } from './harness.ts';

void test('kube-apiserver\'s port taken by another process: the control plane starts on fresh ports', async () => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const taken = (holder.address() as { port: number }).port;
  // The third port is the API server's: the first attempt gets the taken one, later ones free ports.
  let asked = 0;
  const ports = (): Promise<number> => (++asked === 3 ? Promise.resolve(taken) : freePort());
  const dir = mkdtempSync(join(tmpdir(), 'rpo-envtest-'));
  try {
    const plane = await startControlPlane({ dir: join(dir, 'plane'), freePort: ports });
    try {
      assert.notEqual(new URL(plane.server).port, String(taken));
      assert.equal(asked, 6, 'a second set of ports');
    } finally {
      await plane.stop();
    }
  } finally {
    holder.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
