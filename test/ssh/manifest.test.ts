import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { MANIFEST_NO_DIR_EXIT, MANIFEST_NO_TOOL_EXIT, ManifestError, manifestCommand, manifestPathProblem, parseManifest, validateManifest, type Manifest } from '../../src/ssh/manifest.ts';
import { verifyAgainstManifest } from '../../src/ssh/verify.ts';

const root = mkdtempSync(join(tmpdir(), 'rpo-manifest-test-'));
after(() => rmSync(root, { recursive: true, force: true }));

const sha = (text: string): string => createHash('sha256').update(text).digest('hex');
const record = (hash: string, size: number, path: string): Buffer => Buffer.from(`${hash} ${size} ${path}\0`);

function fixture(name: string, files: Record<string, string>): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

const FILES = {
  'a.txt': 'alpha\n',
  'with space.bin': 'spaced',
  'sub/deep/nested file': 'nested\n',
  'line\nbreak': 'newline in name',
  'back\\slash': 'a backslash, which sha256sum would escape',
  'carriage\rreturn': 'so would a carriage return',
  '-dash': 'leading dash',
  'empty': '',
};

void describe('manifestCommand on real shells', () => {
  for (const shell of ['dash', 'bash']) {
    void it(`lists every regular file with size and SHA-256 under ${shell}`, () => {
      const dir = fixture(`ok-${shell}`, FILES);
      symlinkSync('/etc/passwd', join(dir, 'link-out'));
      symlinkSync('sub/deep\nnewline target\n', join(dir, 'odd link'));
      const run = spawnSync(shell, ['-c', manifestCommand(dir)]);
      assert.equal(run.status, 0, run.stderr.toString());
      const manifest = parseManifest(run.stdout);
      const byPath = new Map(manifest.files.map((f) => [f.path, f]));
      assert.deepEqual([...byPath.keys()].sort(), Object.keys(FILES).sort(), 'symlinks are not regular files');
      const links = [...manifest.links ?? []].sort((a, b) => a.path.localeCompare(b.path));
      assert.deepEqual(links, [{ path: 'link-out', target: '/etc/passwd' }, { path: 'odd link', target: 'sub/deep\nnewline target\n' }], 'symlinks are recorded, never followed');
      for (const [path, content] of Object.entries(FILES)) {
        assert.deepEqual(byPath.get(path), { path, size: Buffer.byteLength(content), sha256: sha(content) });
      }
    });
  }

  void it('gives an empty manifest for an empty directory', () => {
    const dir = fixture('empty-dir', {});
    const run = spawnSync('dash', ['-c', manifestCommand(dir)]);
    assert.equal(run.status, 0);
    assert.deepEqual(parseManifest(run.stdout), { files: [] });
  });

  void it('exits with MANIFEST_NO_DIR_EXIT when the directory is missing', () => {
    const run = spawnSync('dash', ['-c', manifestCommand(join(root, 'does not exist'))]);
    assert.equal(run.status, MANIFEST_NO_DIR_EXIT);
  });

  // Root reads any file, so the pod's tools are swapped instead: a fake sha256sum that fails.
  void it('fails when hashing any file fails', () => {
    const dir = fixture('hash-fails', { 'ok': 'x', 'other': 'y' });
    const bin = toolsDir('failing-tools', { sha256sum: '#!/bin/sh\necho "read error" >&2\nexit 1\n' });
    const run = spawnSync('dash', ['-c', manifestCommand(dir)], { env: { PATH: `${bin}:/usr/bin:/bin` } });
    assert.notEqual(run.status, 0);
  });

  // A batch is one sha256sum: one that skips a file (saying so on stderr only) or answers in another
  // order must not pair a hash with the wrong file.
  for (const [how, script] of [
    ['skips a file', 'for a do case $a in --) ;; ./b) echo "./b: read error" >&2; st=1 ;; *) /usr/bin/sha256sum -- "$a" ;; esac; done'],
    ['answers in another order', 'r=; for a do [ "$a" = -- ] || r="$a $r"; done; for a in $r; do /usr/bin/sha256sum -- "$a"; done'],
  ] as const) {
    void it(`fails when a batch's sha256sum ${how}, never pairing a hash with the wrong file`, () => {
      const dir = fixture(`batch-${how.replaceAll(' ', '-')}`, { 'a': 'x', 'b': 'y', 'c': 'z' });
      const bin = toolsDir(`sha256sum-that-${how.replaceAll(' ', '-')}`, { sha256sum: `#!/bin/sh\nst=0\n${script}\nexit $st\n` });
      const run = spawnSync('dash', ['-c', manifestCommand(dir)], { env: { PATH: `${bin}:/usr/bin:/bin` } });
      assert.notEqual(run.status, 0, `a manifest came out: ${run.stdout.toString()}`);
    });
  }

  void it('exits with MANIFEST_NO_TOOL_EXIT when the pod has no sha256sum', () => {
    const dir = fixture('no-tool', { 'ok': 'x' });
    const bin = toolsDir('no-sha256sum', {});
    for (const tool of ['/usr/bin/find', '/usr/bin/wc', '/bin/sh']) symlinkSync(tool, join(bin, tool.split('/').pop() ?? ''));
    const run = spawnSync('/bin/dash', ['-c', manifestCommand(dir)], { env: { PATH: bin } });
    assert.equal(run.status, MANIFEST_NO_TOOL_EXIT, run.stderr.toString());
  });
});

function toolsDir(name: string, scripts: Record<string, string>): string {
  const dir = join(root, name);
  mkdirSync(dir);
  for (const [tool, text] of Object.entries(scripts)) writeFileSync(join(dir, tool), text, { mode: 0o755 });
  return dir;
}

void describe('parseManifest', () => {
  void it('parses records and accepts an empty listing', () => {
    assert.deepEqual(parseManifest(Buffer.alloc(0)), { files: [] });
    const m = parseManifest(Buffer.concat([record(sha('x'), 1, 'x'), record(sha(''), 0, 'd/e f')]));
    assert.deepEqual(m.files, [
      { path: 'x', size: 1, sha256: sha('x') },
      { path: 'd/e f', size: 0, sha256: sha('') },
    ]);
  });

  void it('rejects paths that could leave the results directory', () => {
    for (const path of ['/etc/passwd', '../escape', 'a/../../b', 'a/..', '..', './a', 'a//b', 'a/', '']) {
      assert.throws(() => parseManifest(record(sha('x'), 1, path)), ManifestError, JSON.stringify(path));
    }
  });

  void it('rejects malformed records', () => {
    const cases = [
      Buffer.from(`${sha('x')} 1 x`), // no trailing NUL: cut short
      record('abc', 1, 'x'),
      record(sha('x').toUpperCase(), 1, 'x'),
      record(sha('x'), -1, 'x'),
      Buffer.from(`${sha('x')} 1\0`),
      Buffer.from(`${sha('x')}  1 x\0`),
      Buffer.concat([Buffer.from(`${sha('x')} 1 `), Buffer.from([0xff, 0xfe]), Buffer.from('\0')]), // not UTF-8
    ];
    for (const output of cases) assert.throws(() => parseManifest(output), ManifestError, JSON.stringify(output.toString()));
  });

  void it('rejects duplicates and a path that is both a file and a directory', () => {
    assert.throws(() => parseManifest(Buffer.concat([record(sha('x'), 1, 'x'), record(sha('x'), 1, 'x')])), /twice/);
    assert.throws(() => parseManifest(Buffer.concat([record(sha('x'), 1, 'a'), record(sha('x'), 1, 'a/b')])), /both as a file and as a directory/);
  });

  void it('validateManifest applies the same rules to a manifest built in code', () => {
    assert.throws(() => validateManifest({ files: [{ path: '../x', size: 1, sha256: sha('x') }] }), ManifestError);
    for (const ok of ['ok/path with space', '..dots', '.hidden/...', 'a.. b/c']) assert.equal(manifestPathProblem(ok), undefined, ok);
  });
});

void describe('verifyAgainstManifest', () => {
  const manifestOf = (files: Record<string, string>): Manifest => ({
    files: Object.entries(files).map(([path, content]) => ({ path, size: Buffer.byteLength(content), sha256: sha(content) })),
  });

  void it('accepts an exact copy', async () => {
    const dir = fixture('verify-ok', FILES);
    assert.deepEqual(await verifyAgainstManifest(manifestOf(FILES), dir), { ok: true, missing: [], different: [], extra: [] });
  });

  void it('reports missing, different (same size too) and extra files', async () => {
    const dir = fixture('verify-bad', { ...FILES, 'a.txt': 'ALPHA\n', 'surplus': 's', 'sub/also surplus': 't' });
    rmSync(join(dir, 'with space.bin'));
    rmSync(join(dir, 'sub/deep'), { recursive: true });
    mkdirSync(join(dir, 'an empty dir'));
    const result = await verifyAgainstManifest(manifestOf(FILES), dir);
    assert.deepEqual(result, {
      ok: false,
      missing: ['sub/deep/nested file', 'with space.bin'],
      different: ['a.txt'],
      extra: ['sub/also surplus', 'surplus'],
    });
  });

  void it('counts a symlink in place of a file as different, and a stray symlink as extra', async () => {
    const dir = fixture('verify-links', { 'real': 'r' });
    symlinkSync(join(dir, 'real'), join(dir, 'listed'));
    symlinkSync('/etc', join(dir, 'stray'));
    const result = await verifyAgainstManifest(manifestOf({ real: 'r', listed: 'r' }), dir);
    assert.deepEqual(result, { ok: false, missing: [], different: ['listed'], extra: ['stray'] });
  });

  void it('checks a file the caller hashed as it wrote it by type and size only, not by reading it again', async () => {
    const dir = fixture('verify-hashed', { 'same size': 'AAAA', 'other size': 'AAAAA' });
    const manifest = manifestOf({ 'same size': 'aaaa', 'other size': 'aaaa' });
    assert.deepEqual(await verifyAgainstManifest(manifest, dir, new Set(['same size', 'other size'])), { ok: false, missing: [], different: ['other size'], extra: [] });
    assert.deepEqual((await verifyAgainstManifest(manifest, dir)).different, ['other size', 'same size'], 'not named: read and hashed');
  });

  void it('reports everything missing when the directory does not exist', async () => {
    const result = await verifyAgainstManifest(manifestOf({ x: 'x' }), join(root, 'nowhere'));
    assert.deepEqual(result, { ok: false, missing: ['x'], different: [], extra: [] });
  });

  void it('refuses a manifest with a traversal path instead of looking outside', async () => {
    await assert.rejects(verifyAgainstManifest({ files: [{ path: '../../etc/passwd', size: 1, sha256: sha('x') }] }, root), ManifestError);
  });
});
