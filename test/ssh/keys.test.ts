import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { encodeOpenSshKeyPair, fingerprint, generateKeyPair, generateRunKeys, parsePublicKey } from '../../src/ssh/keys.ts';
import { SSHD } from './sshd.ts';

const dir = mkdtempSync(join(tmpdir(), 'rpo-keys-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function keyFile(privateKey: string): string {
  const path = join(dir, `key-${n++}`);
  writeFileSync(path, privateKey, { mode: 0o600 });
  return path;
}

function sshKeygen(...args: string[]): string {
  return execFileSync('ssh-keygen', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

void describe('per-run keys', () => {
  void it('generates a client and a host key pair that OpenSSH loads', () => {
    const keys = generateRunKeys('run-abc');
    assert.notEqual(keys.client.publicKey, keys.host.publicKey);
    for (const pair of [keys.client, keys.host]) {
      assert.match(pair.privateKey, /^-----BEGIN OPENSSH PRIVATE KEY-----\n[\s\S]+\n-----END OPENSSH PRIVATE KEY-----\n$/);
      assert.match(pair.publicKey, /^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI[A-Za-z0-9+/]{43} run-abc-(client|host)$/);
      // ssh-keygen derives the same public key from the private file ...
      const derived = sshKeygen('-y', '-f', keyFile(pair.privateKey));
      assert.equal(derived.split(' ').slice(0, 2).join(' '), pair.publicKey.split(' ').slice(0, 2).join(' '));
    }
  });

  void it('gives the fingerprint ssh-keygen -l prints', () => {
    const pair = generateKeyPair('fp');
    const path = keyFile(pair.privateKey);
    writeFileSync(`${path}.pub`, `${pair.publicKey}\n`);
    const line = sshKeygen('-l', '-f', `${path}.pub`);
    assert.equal(line.split(' ')[1], fingerprint(pair.publicKey));
    assert.equal(fingerprint(parsePublicKey(pair.publicKey).blob), fingerprint(pair.publicKey));
  });

  void it('writes a host key file sshd accepts (-h)', () => {
    const pair = generateKeyPair('host');
    const config = join(dir, 'sshd_config_t');
    writeFileSync(config, 'UsePAM no\n');
    // sshd -t refuses to run without its privilege separation directory, which only a running sshd's service makes.
    mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
    // sshd -t only parses config and keys: it exits non-zero on a host key it cannot load.
    execFileSync(SSHD, ['-t', '-f', config, '-h', keyFile(pair.privateKey)], { stdio: 'pipe' });
  });

  // ssh2's own generator drops leading zero bytes of the public key (1 key in ~128 corrupt).
  void it('encodes keys whose public key starts with a zero byte', () => {
    let found = 0;
    for (let i = 0; i < 20_000 && found < 2; i++) {
      const { privateKey } = generateKeyPairSync('ed25519');
      const x = Buffer.from(privateKey.export({ format: 'jwk' }).x ?? '', 'base64url');
      if (x[0] !== 0) continue;
      found++;
      const pair = encodeOpenSshKeyPair(privateKey, 'zero');
      assert.equal(parsePublicKey(pair.publicKey).blob.length, 51);
      const derived = sshKeygen('-y', '-f', keyFile(pair.privateKey));
      assert.equal(derived.split(' ')[1], pair.publicKey.split(' ')[1]);
    }
    assert.equal(found, 2, 'no key with a leading zero byte came up');
  });

  void it('encodes any comment length with correct padding', () => {
    for (let length = 0; length < 10; length++) {
      const pair = generateKeyPair('c'.repeat(length));
      assert.ok(sshKeygen('-y', '-f', keyFile(pair.privateKey)).startsWith('ssh-ed25519 '));
    }
  });
});

void describe('parsePublicKey', () => {
  void it('reads type, blob and comment', () => {
    const pair = generateKeyPair('a comment with spaces');
    const key = parsePublicKey(`  ${pair.publicKey}  `);
    assert.equal(key.type, 'ssh-ed25519');
    assert.equal(key.comment, 'a comment with spaces');
    assert.equal(key.blob.toString('base64'), pair.publicKey.split(' ')[1]);
  });

  void it('rejects malformed lines', () => {
    const blob = parsePublicKey(generateKeyPair('x').publicKey).blob.toString('base64');
    for (const line of [
      '',
      'ssh-ed25519',
      'ssh-ed25519 !!!!',
      `ssh-rsa ${blob}`, // blob says ed25519
      `ssh-ed25519 ${Buffer.from('garbage').toString('base64')}`,
      `ssh-ed25519 ${blob.slice(0, 40)}`,
    ]) {
      assert.throws(() => parsePublicKey(line), TypeError, JSON.stringify(line));
    }
  });
});
