// API calls share their connections: client-node 2.0.1 alone opens a new TLS connection for every call
// (a handshake and a SecureContext on both sides), which made the API server and the controller spend
// a third of an end-to-end test's CPU on TLS.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { PooledKubeConfig } from '../../src/kube/kubeconfig.ts';
import { testCluster } from '../support/cluster.ts';

/** How many connections undici opened while `body` ran (every undici in this process reports here). */
async function connectionsOpened(body: () => Promise<void>): Promise<number> {
  let opened = 0;
  const count = (): void => { opened += 1; };
  subscribe('undici:client:connected', count);
  try {
    await body();
  } finally {
    unsubscribe('undici:client:connected', count);
  }
  return opened;
}

async function tenReads(kubeConfig: KubeConfig): Promise<void> {
  const api = kubeConfig.makeApiClient(CoreV1Api);
  for (let i = 0; i < 10; i++) await api.readNamespace({ name: 'default' });
}

test('ten API calls in a row: one connection with PooledKubeConfig (client-node alone opens one per call)', async () => {
  const { kubeconfigPath } = await testCluster();
  const plain = new KubeConfig();
  plain.loadFromFile(kubeconfigPath);
  const pooled = new PooledKubeConfig();
  pooled.loadFromFile(kubeconfigPath);
  try {
    assert.equal(await connectionsOpened(() => tenReads(plain)), 10, 'the library as it is: the reason for PooledKubeConfig');
    assert.equal(await connectionsOpened(() => tenReads(pooled)), 1);
    // Later calls keep using it.
    assert.equal(await connectionsOpened(() => tenReads(pooled)), 0);
  } finally {
    await pooled.close();
  }
});
