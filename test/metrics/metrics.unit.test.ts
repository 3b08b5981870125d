// The metrics endpoint over HTTP, fed by a real Controller and WorkQueue: controller-runtime's series
// with its labels, ours prefixed, counts that move, and no secret in any label.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Controller } from '../../src/kube/controller.ts';
import { startEndpoint } from '../../src/http/endpoint.ts';
import { OperatorMetrics } from '../../src/metrics/metrics.ts';
import { captureLogger } from '../kube/log-capture.ts';
import { sample } from './scrape.ts';
import { eventually } from '../support/eventually.ts';

void test('/metrics exposes the runtime series under controller-runtime names and ours, and they move', async () => {
  const metrics = new OperatorMetrics();
  const { log } = captureLogger();
  let calls = 0;
  const controller = new Controller({
    name: 'runpodrun', log, maxConcurrentReconciles: 2,
    observer: metrics.controllerObserver('runpodrun'), queueObserver: metrics.queueObserver('runpodrun'),
    reconcile: () => (++calls === 1 ? Promise.reject(new Error('first try fails')) : Promise.resolve(undefined)),
  });
  metrics.setSources({
    isLeader: () => true,
    controllers: () => [controller],
    runs: () => [
      { namespace: 'ml', status: { phase: 'Running', estimatedCostUsd: '1.25' } },
      { namespace: 'ml', status: { phase: 'Succeeded', estimatedCostUsd: '0.50' } },
      { namespace: 'team-b', status: undefined },
    ],
    pods: () => [{ status: 'RUNNING' }],
  });
  const endpoint = await startEndpoint('metrics', { host: '127.0.0.1', port: 0 }, {
    '/metrics': async () => ({ status: 200, ...(await metrics.expose()) }),
  }, log);
  const url = `http://127.0.0.1:${endpoint.address.port}/metrics`;
  try {
    const before = await (await fetch(url)).text();
    assert.equal(sample(before, 'controller_runtime_reconcile_total', { controller: 'runpodrun', result: 'success' }), 0);
    assert.equal(sample(before, 'workqueue_adds_total', { name: 'runpodrun', controller: 'runpodrun' }), 0);
    assert.equal(sample(before, 'runpod_operator_leader'), 1);

    controller.start();
    controller.enqueue('ml/a');
    await eventually('the retry succeeded', () => calls >= 2, 10_000);
    metrics.runpod.request('GET /pods', '200');
    metrics.runpod.request('POST /pods', '429');
    metrics.runpod.rateLimitWait('retry_after', 2);
    metrics.sshConnection('ok');
    metrics.resultsRetrieved(3, 4096);
    metrics.sweptPodDeleted('stray');
    metrics.sweptPodDeleted('deadline');
    metrics.sweptPodDeleted('deadline');
    const after = await (await fetch(url)).text();

    const labels = { controller: 'runpodrun' };
    const queue = { name: 'runpodrun', controller: 'runpodrun' };
    assert.equal(sample(after, 'controller_runtime_reconcile_total', { ...labels, result: 'error' }), 1);
    assert.equal(sample(after, 'controller_runtime_reconcile_total', { ...labels, result: 'success' }), 1);
    assert.equal(sample(after, 'controller_runtime_reconcile_errors_total', labels), 1);
    assert.equal(sample(after, 'controller_runtime_reconcile_time_seconds_count', labels), 2);
    assert.equal(sample(after, 'controller_runtime_max_concurrent_reconciles', labels), 2);
    assert.equal(sample(after, 'workqueue_adds_total', queue), 2, 'the first add and the retry');
    assert.equal(sample(after, 'workqueue_retries_total', queue), 1);
    assert.equal(sample(after, 'workqueue_queue_duration_seconds_count', queue), 2);
    assert.equal(sample(after, 'workqueue_depth', queue), 0);
    assert.equal(sample(after, 'runpod_operator_runpod_requests_total', { endpoint: 'POST /pods', status: '429' }), 1);
    assert.equal(sample(after, 'runpod_operator_rate_limit_waits_total', { cause: 'retry_after' }), 1);
    assert.equal(sample(after, 'runpod_operator_runs', { phase: 'Running' }), 1);
    assert.equal(sample(after, 'runpod_operator_runs', { phase: 'New' }), 1);
    assert.equal(sample(after, 'runpod_operator_runs', { phase: 'Failed' }), 0);
    assert.equal(sample(after, 'runpod_operator_estimated_spend_usd', { namespace: 'ml' }), 1.75);
    assert.equal(sample(after, 'runpod_operator_pods', { phase: 'RUNNING' }), 1);
    assert.equal(sample(after, 'runpod_operator_ssh_connections_total', { outcome: 'ok' }), 1);
    assert.equal(sample(after, 'runpod_operator_result_bytes_total'), 4096);
    assert.equal(sample(after, 'runpod_operator_stray_pods_deleted_total'), 1);
    assert.equal(sample(after, 'runpod_operator_overdue_pods_deleted_total'), 2);
    assert.ok(sample(after, 'process_resident_memory_bytes') !== undefined, 'process metrics too');

    const head = await fetch(url, { method: 'POST' });
    assert.equal(head.status, 405);
    assert.equal((await fetch(url.replace('/metrics', '/nope'))).status, 404);
  } finally {
    await controller.stop();
    await endpoint.close();
  }
});
