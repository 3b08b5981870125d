// The watchdog when the pod's clock steps while it runs (NTP, a host's clock set hours off), against a
// scripted API: a step inside one call of the probe, or between the watchdog's start and the probe's
// answer, moves no deadline, grace or wait. The pod's `date` is a shim reading an offset file the API
// changes at a chosen answer, so the step lands exactly there; /proc/uptime, like a real host's, does not step.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deletes, podBody, removeWatchdogDirs, withWatchdog, type Answer } from './fake-api.ts';
import { SHELLS } from './helpers.ts';
import { eventually, EVENTUALLY_MS } from '../support/eventually.ts';

const TWO_HOURS = 7200;
const unix = (): number => Math.floor(Date.now() / 1000);
const dirs: string[] = [];
after(() => {
  removeWatchdogDirs();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A PATH whose `date` reads the machine's time plus the offset in the returned file (0 until written). */
function steppableClock(): { path: string; step: (offsetSeconds: number) => void } {
  const dir = mkdtempSync(join(tmpdir(), 'rpo-clock-step-'));
  dirs.push(dir);
  const offset = join(dir, 'offset');
  writeFileSync(offset, '0\n');
  writeFileSync(join(dir, 'date'), [
    '#!/bin/sh',
    `off=$(cat '${offset}')`,
    'real=$(/bin/date +%s)',
    'if [ "$1" = +%s ]; then echo $((real + off)); exit 0; fi',
    'exec /bin/date -d "@$((real + off))" "$@"',
    '',
  ].join('\n'));
  chmodSync(join(dir, 'date'), 0o755);
  return { path: `${dir}:${process.env.PATH ?? '/usr/bin:/bin'}`, step: (seconds) => writeFileSync(offset, `${seconds}\n`) };
}

const ok = (): Answer => ({ status: 200, body: podBody() });
const lagging: Answer = { status: 404, body: { status: 404, title: 'Not Found', detail: 'pod not found' } };

for (const shell of SHELLS) {
  describe(`the watchdog across a step of the pod's clock, under ${shell}`, { concurrency: true }, () => {
    test('2 h back during the probe\'s call: the deadline is still judged on Runpod\'s time (not 2 h early, at once)', async () => {
      const clock = steppableClock();
      const deadline = unix() + 8;
      await withWatchdog(shell, (call, nth) => {
        if (call.method !== 'GET') return { status: 204 };
        if (nth === 0) clock.step(-TWO_HOURS);
        return ok();
      }, { PATH: clock.path, RUNPOD_OPERATOR_DEADLINE: String(deadline), RUNPOD_OPERATOR_VERDICT_BOUND: '120' }, async (watchdog, api) => {
        const deleted = await eventually('the delete', () => deletes(api)[0], EVENTUALLY_MS, 100);
        assert.ok(deleted.at >= deadline * 1000, `deleted ${deadline * 1000 - deleted.at} ms before its deadline:\n${watchdog.log()}`);
        assert.match(watchdog.log(), /deleting the pod: the deadline passed/);
        assert.match(watchdog.log(), /the pod's clock stepped by -7[12]\d\d s/);
      });
    });

    test('2 h back while the probe waits out a lag: its next try comes a second later, not 2 h later', async () => {
      const clock = steppableClock();
      await withWatchdog(shell, (call, nth) => {
        if (nth === 0) clock.step(-TWO_HOURS);
        return nth === 0 ? lagging : ok();
      }, { PATH: clock.path, RUNPOD_OPERATOR_VERDICT_BOUND: '120' }, async (watchdog) => {
        const verdict = await eventually('the verdict', () => watchdog.verdict(), 15_000, 100).catch(() => watchdog.log());
        assert.equal(verdict, 'ok', watchdog.log());
      });
    });

    test('2 h ahead between the start and the probe\'s answer: the boot grace counts from the start, not 2 h before it', async () => {
      const clock = steppableClock();
      const bootGrace = 8;
      const started = Date.now();
      await withWatchdog(shell, (call, nth) => {
        if (call.method !== 'GET') return { status: 204 };
        if (nth === 1) clock.step(TWO_HOURS);
        return nth < 2 ? lagging : ok();
      }, { PATH: clock.path, RUNPOD_OPERATOR_BOOT_GRACE: String(bootGrace), RUNPOD_OPERATOR_VERDICT_BOUND: '120' }, async (watchdog, api) => {
        const deleted = await eventually('the delete', () => deletes(api)[0], EVENTUALLY_MS, 100);
        // The watchdog counts whole seconds from its start: up to 1 s before `started` + the grace.
        assert.ok(deleted.at >= started + (bootGrace - 1) * 1000, `deleted ${deleted.at - started} ms after the start, the grace is ${bootGrace} s:\n${watchdog.log()}`);
        assert.match(watchdog.log(), /deleting the pod: no job started within 8 s/);
      });
    });
  });
}
