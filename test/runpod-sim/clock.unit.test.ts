// When a container's clock can be skewed: only once its setup has exec'd the container's command (the
// setup's own mounts of /run would hide the shim otherwise). Measured under load (make test at six
// files at once, and clock.test.ts beside four busy loops, 2 of 12): the skew went into a container
// whose init had been forked by unshare but had not exec'd yet, so the setup then mounted over it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setupDone } from './clock.ts';

const unshare = ['unshare', '--mount', '--pid', '--fork', '--mount-proc', '--kill-child=SIGKILL', 'sh', '-c', 'SETUP', 'runpod-container', '0', '/usr/bin', ''];

test('a container\'s setup is done only once its init runs the container\'s command', () => {
  assert.equal(setupDone(unshare, [...unshare], 'runpod-container'), false, 'forked by unshare, not exec\'d yet: its argv is unshare\'s');
  assert.equal(setupDone(unshare, ['sh', '-c', 'SETUP', 'runpod-container', '0', '/usr/bin', ''], 'runpod-container'), false, 'the setup runs');
  assert.equal(setupDone(unshare, undefined, 'runpod-container'), false, 'gone, or not readable');
  assert.equal(setupDone(unshare, ['sleep', 'infinity', ''], 'runpod-container'), true);
  assert.equal(setupDone(unshare, ['sh', '-c', 'exec sleep infinity', ''], 'runpod-container'), true);
});
