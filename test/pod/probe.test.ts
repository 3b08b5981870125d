// The watchdog's readiness probe against a scripted API (fake-api.ts), under both shells: it keeps
// probing through lags, blips and 429s (honouring Retry-After) until its verdict bound, a refusal
// fails only when it lasted the whole bound, and the deadline holds while it probes.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FAKE_POD_ID, deletes, pathLacking, podBody, podReads, removeWatchdogDirs, withWatchdog, type Answer } from './fake-api.ts';
import { SHELLS } from './helpers.ts';
import { eventually, EVENTUALLY_MS } from '../support/eventually.ts';

after(removeWatchdogDirs);

const gone: Answer = { status: 204 };
const ok = (): Answer => ({ status: 200, body: podBody() });
const problem = (status: number, headers: Record<string, string> = {}): Answer => ({ status, body: { status, title: 'x', detail: 'x' }, headers });
const verdictOf = (watchdog: { verdict(): string | undefined }): Promise<string> =>
  eventually('the watchdog\'s verdict', () => watchdog.verdict(), 60_000, 100);
const unix = (): number => Math.floor(Date.now() / 1000);

for (const shell of SHELLS) {
  describe(`the watchdog's probe under ${shell}`, { concurrency: true }, () => {
    test('a GET that lags the create (404), then 503s, for more than five tries: it keeps probing and the verdict is ok', () =>
      withWatchdog(shell, (call, nth) => (call.method !== 'GET' ? gone : nth < 3 ? problem(404) : nth < 5 ? problem(503) : ok()),
        { RUNPOD_OPERATOR_VERDICT_BOUND: '120' }, async (watchdog, api) => {
          assert.equal(await verdictOf(watchdog), 'ok', watchdog.log());
          assert.equal(podReads(api).length, 6);
          assert.ok(podReads(api).every((call) => call.authorized), 'every read carries the pod key');
          assert.equal(deletes(api).length, 0);
        }));

    test('a 401 that heals within the bound is not a verdict: ok', () =>
      withWatchdog(shell, (call, nth) => (nth < 2 ? problem(401) : ok()), { RUNPOD_OPERATOR_VERDICT_BOUND: '120' }, async (watchdog, api) => {
        assert.equal(await verdictOf(watchdog), 'ok', watchdog.log());
        assert.equal(podReads(api).length, 3);
      }));

    test('refused (403) throughout the bound: failed, saying it was refused throughout', () =>
      // 10 s, as below: room for more than one try on a loaded machine.
      withWatchdog(shell, () => problem(403), { RUNPOD_OPERATOR_VERDICT_BOUND: '10' }, async (watchdog, api) => {
        const verdict = await verdictOf(watchdog);
        assert.match(verdict, new RegExp(`^failed: GET /pods/${FAKE_POD_ID}: HTTP 403 throughout 10 s \\(\\d+ tries\\)$`), watchdog.log());
        assert.ok(podReads(api).length >= 2, `${podReads(api).length} reads`);
      }));

    test('no good answer within the bound (503 then 401): failed with the last answer, not "refused throughout"', () =>
      // A bound of 10 s: on a loaded machine the first answer alone took over 3 s (bound 3), leaving no second try.
      withWatchdog(shell, (call, nth) => (nth === 0 ? problem(503) : problem(401)), { RUNPOD_OPERATOR_VERDICT_BOUND: '10' }, async (watchdog) => {
        assert.match(await verdictOf(watchdog), new RegExp(`^failed: GET /pods/${FAKE_POD_ID}: HTTP 401 after \\d+ tries in 10 s$`), watchdog.log());
      }));

    test('the deadline deletes the pod while the probe is still waiting for its pod to show up', () =>
      withWatchdog(shell, (call) => (call.method === 'DELETE' ? gone : problem(404)),
        { RUNPOD_OPERATOR_VERDICT_BOUND: '120', RUNPOD_OPERATOR_DEADLINE: String(unix() + 2) }, async (watchdog, api) => {
          await eventually('the delete', () => deletes(api)[0], EVENTUALLY_MS, 100);
          assert.equal(watchdog.verdict(), undefined, 'no verdict yet: the probe goes on beside the rules');
          assert.match(watchdog.log(), /deleting the pod: the deadline passed/);
        }));

    for (const client of ['curl', 'python3', 'wget'] as const) {
      test(`a 429 is tried again only after its Retry-After (${client})`, async () => {
        const lacking = { curl: [], python3: ['curl'], wget: ['curl', 'python3'] }[client];
        const path = await pathLacking(lacking);
        await withWatchdog(shell, (call, nth) => (nth === 0 ? problem(429, { 'Retry-After': '4' }) : ok()),
          { PATH: path, RUNPOD_OPERATOR_VERDICT_BOUND: '120' }, async (watchdog, api) => {
            assert.equal(await verdictOf(watchdog), 'ok', watchdog.log());
            assert.match(watchdog.log(), new RegExp(`http=${client} `));
            const [first, second] = podReads(api);
            // Whole seconds on the pod's clock: 4 s after the answer is at least 3 s of the wall clock later.
            assert.ok(second!.at - first!.at >= 3000, `tried again ${second!.at - first!.at} ms after the 429`);
          });
      });
    }
  });
}
