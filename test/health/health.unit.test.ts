// /healthz fails while a reconcile is stuck (a deliberately blocked one, with a short bound) and
// recovers when it moves or ends; /readyz reports what the sources say. Over real HTTP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { Controller, type ReconcileContext } from '../../src/kube/controller.ts';
import { startEndpoint } from '../../src/http/endpoint.ts';
import { healthRoutes } from '../../src/health/probes.ts';
import { captureLogger } from '../kube/log-capture.ts';
import { eventually } from '../support/eventually.ts';

void test('/healthz fails while a worker is stuck past the bound, and passes once it moves again or ends', async () => {
  const { log } = captureLogger();
  let ctxOf: ReconcileContext | undefined;
  let release!: () => void;
  const controller = new Controller({
    name: 'runpodrun', log,
    reconcile: (_key, ctx) => new Promise((resolve) => {
      ctxOf = ctx;
      release = () => resolve(undefined);
    }),
  });
  let synced = false;
  const endpoint = await startEndpoint('health probes', { host: '127.0.0.1', port: 0 }, healthRoutes({
    inFlight: () => controller.inFlight(),
    stuckAfterMs: 300,
    ready: () => (synced ? { ok: true, role: 'leader' } : { ok: false, role: 'leader', detail: 'caches not synced yet' }),
  }), log);
  const get = async (path: string) => {
    const response = await fetch(`http://127.0.0.1:${endpoint.address.port}${path}`);
    return { status: response.status, text: await response.text() };
  };
  try {
    assert.equal((await get('/healthz')).status, 200);
    assert.deepEqual(await get('/readyz'), { status: 500, text: 'not ready (leader: caches not synced yet)\n' });
    synced = true;
    assert.deepEqual(await get('/readyz'), { status: 200, text: 'ok (leader)\n' });

    controller.start();
    controller.enqueue('ml/blocked');
    await eventually('the reconcile is in flight', () => ctxOf !== undefined);
    assert.equal((await get('/healthz')).status, 200, 'in flight, not yet stuck');
    await delay(400);
    const stuck = await get('/healthz');
    assert.equal(stuck.status, 500);
    assert.match(stuck.text, /ml\/blocked made no progress/);
    ctxOf?.progress();
    assert.equal((await get('/healthz')).status, 200, 'progress (a transfer moving) is not stuck');
    await delay(400);
    assert.equal((await get('/healthz')).status, 500);
    release();
    await eventually('the reconcile ended', () => controller.inFlight().length === 0);
    assert.equal((await get('/healthz')).status, 200);
  } finally {
    release?.();
    await controller.stop();
    await endpoint.close();
  }
});
