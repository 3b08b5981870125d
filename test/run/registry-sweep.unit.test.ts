// The registry credential sweep on a fake client: only this install's credentials, only once no run has
// needed one for the whole grace; Runpod's refusal (a pod still uses it) is retried, a 404 forgotten.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { registryNamePrefix } from '../../src/run/observe/registry-auth.ts';
import { RegistrySweep } from '../../src/run/registry-sweep.ts';
import { RunpodError } from '../../src/runpod/errors.ts';
import { createLogger } from '../../src/log.ts';

const owner = { clusterId: 'cluster-1', scope: 'cluster-wide' };
const mine = (n: number) => ({ id: `r${n}`, name: `${registryNamePrefix(owner.clusterId, owner.scope)}${String(n).repeat(16)}` });

function fakeClient(registries: { id: string; name: string }[], refuse = new Set<string>()) {
  const deleted: string[] = [];
  return {
    deleted,
    listRegistries: () => Promise.resolve(registries.filter((r) => !deleted.includes(r.id))),
    deleteRegistry: (id: string) => {
      if (refuse.has(id)) return Promise.reject(new RunpodError({ kind: 'invalid', operation: 'deleteRegistry', status: 400, detail: 'Registry credential is in use by a pod and cannot be deleted' }));
      if (deleted.includes(id)) return Promise.reject(new RunpodError({ kind: 'not-found', operation: 'deleteRegistry', status: 404, detail: 'not found' }));
      deleted.push(id);
      return Promise.resolve();
    },
  };
}

test('an unneeded credential of this install goes once the grace has passed; needed ones and other installs\' stay', async () => {
  const needed = mine(1);
  const unneeded = mine(2);
  const foreign = { id: 'r3', name: `${registryNamePrefix('cluster-2', 'cluster-wide')}${'3'.repeat(16)}` };
  const client = fakeClient([needed, unneeded, foreign, { id: 'r4', name: 'someone-elses' }]);
  const sweep = new RegistrySweep({ owner, inUse: () => Promise.resolve(new Set([needed.name])), graceMs: 50, logger: createLogger('silent') });
  const signal = new AbortController().signal;
  assert.equal(await sweep.sweep('acct', client, signal), false);
  assert.deepEqual(client.deleted, [], 'first seen unneeded: within the grace');
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.equal(await sweep.sweep('acct', client, signal), false);
  assert.deepEqual(client.deleted, ['r2']);
});

test('needed again within the grace restarts it; a refusal (in use by a pod) is a failure retried at the next sweep', async () => {
  const credential = mine(5);
  const client = fakeClient([credential], new Set(['r5']));
  let needed = new Set<string>();
  const sweep = new RegistrySweep({ owner, inUse: () => Promise.resolve(needed), graceMs: 0, logger: createLogger('silent') });
  const signal = new AbortController().signal;
  assert.equal(await sweep.sweep('acct', client, signal), true, 'refused: failed, swept again soon');
  needed = new Set([credential.name]);
  assert.equal(await sweep.sweep('acct', client, signal), false);
  assert.deepEqual(client.deleted, []);
});
