// Two watchdog rules against a scripted API (fake-api.ts), under both shells: a price of 0 or none is
// unknown (read again, and under a cost cap the pod goes at the boot grace while it stays unknown),
// and the retrieve grace is extended for as long as the controller renews its retrieve.until file.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { POD_FILES } from '../../src/pod/protocol.ts';
import { deletes, podBody, podReads, removeWatchdogDirs, stateDir, withWatchdog, type Answer, type Call, type FakeApi } from './fake-api.ts';
import { SHELLS } from './helpers.ts';
import { consistently, eventually, EVENTUALLY_MS } from '../support/eventually.ts';

after(removeWatchdogDirs);

const unix = (): number => Math.floor(Date.now() / 1000);
const hourAgo = (): string => new Date(Date.now() - 3600_000).toISOString();
const deleted = (api: FakeApi): Promise<Call> => eventually('the watchdog\'s delete', () => deletes(api)[0], EVENTUALLY_MS, 100);

/** A state directory whose job is running (its supervisor: this test process) since `startedAt`. */
function withRunningJob(startedAt = unix()): string {
  const dir = stateDir();
  writeFileSync(join(dir, POD_FILES.jobStarted), `${startedAt}\n`);
  writeFileSync(join(dir, POD_FILES.jobSupervisor), `${process.pid}\n`);
  return dir;
}

/** A state directory whose job ended `secondsAgo` with exit code 0, its results not retrieved. */
function withEndedJob(secondsAgo: number): string {
  const dir = stateDir();
  writeFileSync(join(dir, POD_FILES.jobStarted), `${unix() - secondsAgo - 10}\n`);
  writeFileSync(join(dir, POD_FILES.jobEnded), `${unix() - secondsAgo}\n`);
  writeFileSync(join(dir, POD_FILES.jobExit), '0\n');
  return dir;
}

for (const shell of SHELLS) {
  describe(`the watchdog's price and retrieve grace under ${shell}`, { concurrency: true }, () => {
    for (const [what, unknown] of [['0', { cost: 0 }], ['null', { cost: null }], ['absent', { cost: undefined }]] as const) {
      test(`a price of ${what} is unknown: read again each period, and once Runpod reports one the cost cap applies`, () =>
        withWatchdog(shell, (call, nth): Answer => {
          if (call.method === 'DELETE') return { status: 204 };
          // Spent 0.40 $/h for an hour: far past the cap once the price is known.
          return { status: 200, body: podBody({ createdAt: hourAgo(), ...(nth < 3 ? unknown : { cost: 0.4 }) }) };
        }, { RUNPOD_OPERATOR_MAX_COST_USD: '0.10' }, async (watchdog, api) => {
          await deleted(api);
          assert.equal(watchdog.verdict(), 'ok');
          assert.equal(podReads(api).length, 4, 'one read per period until the price is known, none after');
          assert.match(watchdog.log(), /Runpod reports no price for the pod yet[^]*the price arrived[^]*deleting the pod: the cost cap was reached \(spent about \$0\.(?:4|3999)\d* at \$0\.4\/h, cap \$0\.10\)/);
        }, withRunningJob()));
    }

    test('under a cost cap, a price still unknown at the boot grace deletes the pod, even with its job running', () =>
      withWatchdog(shell, (call): Answer => (call.method === 'DELETE' ? { status: 204 } : { status: 200, body: podBody({ cost: null }) }),
        { RUNPOD_OPERATOR_MAX_COST_USD: '0.10', RUNPOD_OPERATOR_BOOT_GRACE: '3' }, async (watchdog, api) => {
          await deleted(api);
          assert.ok(podReads(api).length >= 2, 'the price was read again');
          assert.match(watchdog.log(), /deleting the pod: the cost cap \(\$0\.10\) cannot be enforced: Runpod reported no price for the pod within the boot grace \(3 s\)/);
        }, withRunningJob()));

    test('without a cost cap, an unknown price is not read again', () =>
      withWatchdog(shell, (): Answer => ({ status: 200, body: podBody({ cost: 0 }) }), {}, async (watchdog, api) => {
        await eventually('the verdict', () => watchdog.verdict(), EVENTUALLY_MS, 100);
        // For three periods: still the probe's one read.
        await consistently('the probe\'s one read', () => podReads(api).length === 1, 3000, 200);
      }));

    test('a retrieve.until file extends the retrieve grace: the pod goes once its time has passed, not at the grace', () => {
      // The grace (30 s) ended 70 s ago; the controller extended it, then renewed it until 2 s from
      // now. The first until is far off so that a slow first tick still sees an extension.
      const dir = withEndedJob(100);
      writeFileSync(join(dir, POD_FILES.retrieveGrace), `${unix() + 3600}\n`);
      return withWatchdog(shell, (call): Answer => (call.method === 'DELETE' ? { status: 204 } : { status: 200, body: podBody() }),
        { RUNPOD_OPERATOR_RETRIEVE_GRACE: '30' }, async (watchdog, api) => {
          await eventually('the extension seen', () => (/the retrieve grace is extended by the controller/.test(watchdog.log()) ? true : undefined));
          assert.equal(deletes(api).length, 0, 'deleted while extended');
          const until = unix() + 2;
          // Renewed as the controller does: atomically, so no tick reads half a file.
          writeFileSync(join(dir, 'retrieve.until.new'), `${until}\n`);
          renameSync(join(dir, 'retrieve.until.new'), join(dir, POD_FILES.retrieveGrace));
          const deletion = await deleted(api);
          assert.ok(deletion.at >= until * 1000, `deleted ${until * 1000 - deletion.at} ms before the extension's end`);
          assert.match(watchdog.log(), /deleting the pod: the job ended at \d+ and its results were not retrieved within 30 s/);
        }, dir);
    });

    test('the extension never outlasts the deadline', () => {
      const dir = withEndedJob(100);
      writeFileSync(join(dir, POD_FILES.retrieveGrace), `${unix() + 3600}\n`);
      return withWatchdog(shell, (call): Answer => (call.method === 'DELETE' ? { status: 204 } : { status: 200, body: podBody() }),
        { RUNPOD_OPERATOR_RETRIEVE_GRACE: '30', RUNPOD_OPERATOR_DEADLINE: String(unix() + 2) }, async (watchdog, api) => {
          await deleted(api);
          assert.match(watchdog.log(), /deleting the pod: the deadline passed/);
        }, dir);
    });
  });
}
