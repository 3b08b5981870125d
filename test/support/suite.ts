// `npm test`'s integration tier: one control plane for the suite, then two runners side by side. The files
// that start pods, controllers or servers of their own run a process each, seven at once, longest first
// (why: docs/architecture.md); the light ones (the simulator's, kube/'s, the Runpod client's and support/'s) run
// in one process, where client-node loads once instead of 25 times (measured: 32.7 CPU-s instead of 54.4;
// the suite is bound by CPU). Their output is printed when they end, whole; the main runner's comes as it
// goes and ends the log with its slowest files and what failed.
import { spawn } from 'node:child_process';
import { globSync } from 'node:fs';
import { globalSetup, globalTeardown } from '../global-setup.ts';
import { knownDurations, longestFirst } from './file-order.ts';

const FILES_AT_ONCE = 7;
const LIGHT = /^test\/(runpod-sim|kube|runpod|support)\/[^/]+\.test\.ts$/;
const reporters = ['--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=./test/support/slowest-files.ts', '--test-reporter-destination=stdout'];

const files = globSync('test/**/*.test.ts').filter((file) => !file.endsWith('.unit.test.ts')).sort();
const light = files.filter((file) => LIGHT.test(file));
const heavy = longestFirst(files.filter((file) => !LIGHT.test(file)), knownDurations());

/** `node --test ARGS`: its exit code, and its whole output unless `live` (then it goes straight out). */
function runner(args: string[], live: boolean, env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; output: string }> {
  const child = spawn(process.execPath, ['--test', ...reporters, ...args], { env, stdio: ['ignore', live ? 'inherit' : 'pipe', 'inherit'] });
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; });
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output })));
}

await globalSetup();
try {
  const lightDone = runner(['--test-isolation=none', ...light], false).then(({ code, output }) => {
    process.stdout.write(`\n--- ${light.length} light files, in one process ---\n${output}--- end of the light files ---\n\n`);
    return code;
  });
  const [{ code: heavyCode }, lightCode] = await Promise.all([runner([`--test-concurrency=${FILES_AT_ONCE}`, ...heavy], true, { ...process.env, RECORD_TEST_DURATIONS: '1' }), lightDone]);
  if (lightCode !== 0) process.stdout.write(`\nthe light files failed (${light.length} in one process): their failures are listed above, after their own slowest files\n`);
  process.exitCode = heavyCode !== 0 || lightCode !== 0 ? 1 : 0;
} finally {
  await globalTeardown();
}
