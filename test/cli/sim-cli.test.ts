// The simulator's command line (`npm run sim`), through the real process: a config file that is missing,
// not YAML, or invalid, and an unknown flag, are each one sentence naming what is wrong, exit 2.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

const cli = new URL('../runpod-sim/cli.ts', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'sim-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

void test('bad input to the simulator: one sentence naming it, exit 2, never a trace', () => {
  writeFileSync(join(dir, 'not-yaml.yaml'), 'gpuTypes: [\n');
  writeFileSync(join(dir, 'invalid.yaml'), 'rateLimits: {enabled: maybe}\n');
  const cases: [string[], RegExp][] = [
    [['--api-key', 'k', '--config', join(dir, 'missing.yaml')], /^runpod-sim: --config: cannot read .*missing\.yaml: no such file\n$/],
    [['--api-key', 'k', '--config', join(dir, 'not-yaml.yaml')], /^runpod-sim: --config: .*not-yaml\.yaml is not YAML or JSON: /],
    [['--api-key', 'k', '--config', join(dir, 'invalid.yaml')], /^runpod-sim: --config: invalid simulator config: rateLimits\.enabled: /],
    [['--bogus'], /^runpod-sim: Unknown option '--bogus' \(--help lists the flags\)\n$/],
  ];
  for (const [args, said] of cases) {
    const result = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(result.status, 2, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, said);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
  }
});
