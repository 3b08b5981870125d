// hack/setup.sh, which `make demo` and `make test` run first: a sentence (not a trace) when it is not
// root or a package cannot be installed, and `npm ci` exactly when node_modules differs from the lock.
// apt-get, dpkg-query and npm are stand-ins on PATH here, so nothing is installed on this machine.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';

const repo = resolve(import.meta.dirname, '..', '..');
const scratch = mkdtempSync(join(tmpdir(), 'setup-test-'));
chmodSync(scratch, 0o755);
after(() => rmSync(scratch, { recursive: true, force: true }));

/** A directory of stand-in commands, first on PATH. */
function shims(name: string, scripts: Record<string, string>): string {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  for (const [command, body] of Object.entries(scripts)) {
    writeFileSync(join(dir, command), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, command), 0o755);
  }
  return dir;
}

// lua5.4 is "not installed"; every other package is.
const dpkgQuery = 'for last; do :; done; [ "$last" = lua5.4 ] && exit 1; printf "install ok installed"';

function setup(args: string[], options: { path?: string; asNobody?: boolean; cwd?: string; env?: Record<string, string> } = {}) {
  const script = join(options.cwd ?? repo, 'hack', 'setup.sh');
  const [command, argv] = options.asNobody
    ? ['setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'bash', script, ...args]]
    : ['bash', [script, ...args]];
  const result = spawnSync(command, argv, {
    encoding: 'utf8', env: { ...process.env, ...options.env, PATH: `${options.path ? `${options.path}:` : ''}${process.env.PATH ?? ''}` },
  });
  return { status: result.status, stderr: result.stderr, stdout: result.stdout };
}

describe('hack/setup.sh', () => {
  test('not root: the demo and the tests say they need root', () => {
    const result = setup(['root'], { asNobody: true });
    assert.equal(result.status, 1);
    assert.match(result.stderr, /^setup: the demo and the tests need root .*run as root$/m);
  });

  test('not root with a package missing: names it and how to install it', () => {
    const result = setup(['packages'], { asNobody: true, path: shims('missing', { 'dpkg-query': dpkgQuery }) });
    assert.equal(result.status, 1);
    assert.match(result.stderr, /^setup: missing Debian packages: lua5\.4\. Installing them needs root: run as root, or: sudo apt-get install lua5\.4$/m);
  });

  test('a package apt-get cannot install: says which, with apt-get\'s own error, and fails', () => {
    const path = shims('apt-fails', {
      'dpkg-query': dpkgQuery,
      'apt-get': '[ "$1" = update ] && exit 0; echo "Reading package lists..."; echo "E: Unable to locate package lua5.4" >&2; exit 100',
    });
    const result = setup(['packages'], { path });
    assert.equal(result.status, 1);
    assert.match(result.stderr, /^setup: installing Debian packages: lua5\.4$/m);
    assert.match(result.stderr, /^setup: could not install the Debian packages lua5\.4; apt-get said:\nE: Unable to locate package lua5\.4$/m);
  });

  test('npm ci runs when node_modules differs from package-lock.json, and only then', () => {
    const project = join(scratch, 'project');
    mkdirSync(join(project, 'node_modules', '.bin'), { recursive: true });
    cpSync(join(repo, 'hack'), join(project, 'hack'), { recursive: true });
    cpSync(join(repo, 'package-lock.json'), join(project, 'package-lock.json'));
    cpSync(join(repo, 'node_modules', '.package-lock.json'), join(project, 'node_modules', '.package-lock.json'));
    writeFileSync(join(project, 'node_modules', '.bin', 'node'), '');
    chmodSync(join(project, 'node_modules', '.bin', 'node'), 0o755);
    const calls = join(scratch, 'npm-calls');
    const path = shims('npm', { npm: `echo "$*" >> ${calls}` });

    assert.equal(setup(['node'], { path, cwd: project }).status, 0);
    assert.ok(!existsSync(calls), 'current: no npm ci');

    const lock = JSON.parse(readFileSync(join(project, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
    lock.packages['node_modules/zod']!.version = '0.0.1';
    writeFileSync(join(project, 'package-lock.json'), JSON.stringify(lock));
    const result = setup(['node'], { path, cwd: project });
    assert.equal(result.status, 0, result.stderr);
    assert.match(readFileSync(calls, 'utf8'), /^ci /);
    assert.match(result.stderr, /setup: installing node_modules \(npm ci\)/);
  });

  test('make demo\'s control-plane step finds kube-apiserver and etcd only: no test helper is built, and it prints nothing', () => {
    const cache = join(scratch, 'cache');
    const assets = join(cache, 'envtest', 'k8s-1.34.4-etcd-3.6.4');
    mkdirSync(assets, { recursive: true });
    for (const binary of ['kube-apiserver', 'etcd']) {
      writeFileSync(join(assets, binary), '#!/bin/sh\n');
      chmodSync(join(assets, binary), 0o755);
    }
    // Building kstatus-judge or weed would need go: a stand-in that records being called.
    const calls = join(scratch, 'go-calls');
    const path = shims('go', { go: `echo "$*" >> ${calls}; exit 1` });
    const demo = setup(['control-plane'], { path, env: { RUNPOD_OPERATOR_CACHE: cache } });
    assert.deepEqual([demo.status, demo.stderr, demo.stdout], [0, '', '']);
    assert.ok(!existsSync(calls), 'go was not called');
    const tests = setup(['envtest'], { path, env: { RUNPOD_OPERATOR_CACHE: cache } });
    assert.notEqual(tests.status, 0, 'the tests\' step builds the helpers, which needs go');
    assert.ok(existsSync(calls));
  });

});
