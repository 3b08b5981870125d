// Metrics and probes of a controller doing real work: a run to Succeeded on a simulated pod, then
// the series scraped over HTTP must exist and have moved (counts, never timings), carry no secret,
// and the probes must answer as the leader's. Ends with the leak check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sample } from '../metrics/scrape.ts';
import { runManifest, testApiKey, withWorld } from '../support/operator.ts';

const ended = (run: { status?: { phase?: string } }) => run.status?.phase === 'Succeeded' || run.status?.phase === 'Failed';

void test('a run to Succeeded moves the runtime, Runpod, SSH and result series; probes answer as the leader', () =>
  withWorld('metrics', async (world) => {
    const { metricsUrl, healthUrl } = world.endpoints();
    assert.ok(metricsUrl && healthUrl, 'both endpoints are enabled');
    const scrape = async () => (await fetch(`${metricsUrl}/metrics`)).text();
    const before = await scrape();
    const queue = { name: 'runpodrun', controller: 'runpodrun' };
    const addsBefore = sample(before, 'workqueue_adds_total', queue) ?? 0;

    await world.apply(runManifest('metered', {
      // Ten seconds of job at the world's 2 s poll: several reconciles read the pod's state over SSH.
      job: { command: ['sh', '-c', 'mkdir -p output && head -c 100000 /dev/zero > output/data.bin && sleep 10 && echo done'] },
      results: { path: 'output' },
    }));
    const run = await world.waitForRun('metered', 'Succeeded', ended, 90_000);
    assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
    const after = await scrape();

    const controller = { controller: 'runpodrun' };
    assert.ok((sample(after, 'controller_runtime_reconcile_total', { ...controller, result: 'requeue_after' }) ?? 0) > 0, 'reconciles counted');
    assert.ok((sample(after, 'controller_runtime_reconcile_time_seconds_count', controller) ?? 0) > 0);
    assert.ok((sample(after, 'workqueue_adds_total', queue) ?? 0) > addsBefore, 'adds moved');
    assert.ok((sample(after, 'workqueue_queue_duration_seconds_count', queue) ?? 0) > 0);
    assert.notEqual(sample(after, 'workqueue_retries_total', queue), undefined);
    assert.notEqual(sample(after, 'workqueue_depth', queue), undefined);
    assert.ok((sample(after, 'runpod_operator_runpod_requests_total', { endpoint: 'POST /pods', status: '200' }) ?? 0)
      + (sample(after, 'runpod_operator_runpod_requests_total', { endpoint: 'POST /pods', status: '201' }) ?? 0) >= 1, 'the create counted');
    assert.ok((sample(after, 'runpod_operator_runpod_requests_total', { endpoint: 'GET /pods', status: '200' }) ?? 0) >= 1, 'the shared list counted');
    assert.ok((sample(after, 'runpod_operator_runpod_requests_total', { endpoint: 'DELETE /pods/{podId}', status: '200' }) ?? 0)
      + (sample(after, 'runpod_operator_runpod_requests_total', { endpoint: 'DELETE /pods/{podId}', status: '204' }) ?? 0) >= 1, 'the delete counted');
    // The readiness probe, the one connection every reconcile of the running pod shares, the retrieval's.
    const handshakes = sample(after, 'runpod_operator_ssh_connections_total', { outcome: 'ok' }) ?? 0;
    assert.ok(handshakes >= 2 && handshakes <= 4, `probe + one kept connection + the transfer's, not one per reconcile: ${handshakes}`);
    assert.ok((sample(after, 'runpod_operator_result_bytes_total') ?? 0) >= 100_000, 'the result bytes');
    assert.equal(sample(after, 'runpod_operator_runs', { phase: 'Succeeded' }), 1);
    assert.equal(sample(after, 'runpod_operator_runs', { phase: 'Running' }), 0);
    assert.notEqual(sample(after, 'runpod_operator_estimated_spend_usd', { namespace: world.namespace }), undefined);
    assert.equal(sample(after, 'runpod_operator_leader'), 1);
    assert.ok(!after.includes(testApiKey), 'the Runpod key is in no label');
    assert.ok(!/podId="|apiKey|Bearer/.test(after), 'no pod id or credential as a label');

    const healthz = await fetch(`${healthUrl}/healthz`);
    assert.equal(healthz.status, 200);
    const readyz = await fetch(`${healthUrl}/readyz`);
    assert.deepEqual([readyz.status, await readyz.text()], [200, 'ok (leader)\n']);
    await world.deleteRun('metered');
  }));
