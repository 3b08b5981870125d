// Per-run ed25519 keys in OpenSSH formats: the client key (kept by the controller) and the pod's
// host key (installed by the bootstrap, so the controller can pin it before the pod exists).
//
// Encoded here rather than with ssh2's utils.generateKeyPairSync: ssh2 1.17 strips leading zero
// bytes from the raw ed25519 public key, so about one key in 128 comes out corrupt and OpenSSH
// refuses to load it ("error in libcrypto") — a pod would then boot without a usable host key.
import { createHash, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { registerSecret } from '../log.ts';

export interface SshKeyPair {
  /** OpenSSH private key file ("-----BEGIN OPENSSH PRIVATE KEY-----"), unencrypted, newline-terminated. */
  privateKey: string;
  /** One authorized_keys / known_hosts style line: "ssh-ed25519 AAAA... comment". */
  publicKey: string;
}

export interface RunKeys {
  client: SshKeyPair;
  host: SshKeyPair;
}

export interface PublicKey {
  type: string;
  /** The SSH wire encoding of the key, as servers present it and authorized_keys carries it (base64). */
  blob: Buffer;
  comment: string;
}

const ED25519 = 'ssh-ed25519';

/** Two fresh key pairs for one run; `comment` names the run (it ends up in authorized_keys and logs). */
export function generateRunKeys(comment: string): RunKeys {
  return { client: generateKeyPair(`${comment}-client`), host: generateKeyPair(`${comment}-host`) };
}

export function generateKeyPair(comment: string): SshKeyPair {
  const { privateKey } = generateKeyPairSync('ed25519');
  return encodeOpenSshKeyPair(privateKey, comment);
}

/** Encodes a node ed25519 private key as an OpenSSH key pair (PROTOCOL.key, cipher "none"). */
export function encodeOpenSshKeyPair(privateKey: KeyObject, comment: string): SshKeyPair {
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new TypeError('only ed25519 keys are supported');
  if (/[\r\n]/.test(comment)) throw new TypeError('a key comment cannot contain a line break');
  const jwk = privateKey.export({ format: 'jwk' });
  if (jwk.d === undefined || jwk.x === undefined) throw new TypeError('not an ed25519 private key');
  const seed = Buffer.from(jwk.d, 'base64url');
  const pub = Buffer.from(jwk.x, 'base64url');
  const blob = Buffer.concat([sshString(ED25519), sshString(pub)]);

  const check = randomBytes(4);
  const unpadded = Buffer.concat([
    check,
    check,
    sshString(ED25519),
    sshString(pub),
    sshString(Buffer.concat([seed, pub])),
    sshString(comment),
  ]);
  const padLength = (8 - (unpadded.length % 8)) % 8;
  const padding = Buffer.from(Array.from({ length: padLength }, (_, i) => i + 1));
  const file = Buffer.concat([
    Buffer.from('openssh-key-v1\0', 'latin1'),
    sshString('none'),
    sshString('none'),
    sshString(''),
    uint32(1),
    sshString(blob),
    sshString(Buffer.concat([unpadded, padding])),
  ]);

  const body = file.toString('base64').replace(/.{1,70}/g, '$&\n');
  const pem = `-----BEGIN OPENSSH PRIVATE KEY-----\n${body}-----END OPENSSH PRIVATE KEY-----\n`;
  protectPrivateKey(pem);
  return { privateKey: pem, publicKey: `${ED25519} ${blob.toString('base64')}${comment ? ` ${comment}` : ''}` };
}

/** Parses one OpenSSH public key line ("type base64 [comment]") and checks the blob matches its type. */
export function parsePublicKey(line: string): PublicKey {
  const match = /^\s*(\S+)\s+([A-Za-z0-9+/]+={0,2})(?:\s+(.*?))?\s*$/.exec(line);
  if (!match?.[1] || !match[2]) throw new TypeError('not an OpenSSH public key line');
  const type = match[1];
  const blob = Buffer.from(match[2], 'base64');
  if (blob.toString('base64') !== match[2]) throw new TypeError('public key is not valid base64');
  const inner = readSshString(blob, 0);
  if (inner === undefined || inner.value.toString('latin1') !== type) {
    throw new TypeError(`public key blob does not hold a ${type} key`);
  }
  if (type === ED25519) {
    const key = readSshString(blob, inner.next);
    if (key?.value.length !== 32 || key.next !== blob.length) throw new TypeError('malformed ssh-ed25519 public key');
  }
  return { type, blob, comment: match[3] ?? '' };
}

/** "SHA256:<base64, unpadded>", as `ssh-keygen -l` and sshd's logs print it. */
export function fingerprint(key: string | Buffer): string {
  const blob = typeof key === 'string' ? parsePublicKey(key).blob : key;
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** Registers a private key's base64 lines with the log scrubber, so no log line can carry them. */
export function protectPrivateKey(pem: string): void {
  for (const line of pem.split('\n')) {
    if (!line.startsWith('-----')) registerSecret(line.trim());
  }
}

function sshString(value: Buffer | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  return Buffer.concat([uint32(bytes.length), bytes]);
}

function uint32(n: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(n);
  return out;
}

function readSshString(buf: Buffer, offset: number): { value: Buffer; next: number } | undefined {
  if (offset + 4 > buf.length) return undefined;
  const length = buf.readUInt32BE(offset);
  const next = offset + 4 + length;
  if (next > buf.length) return undefined;
  return { value: buf.subarray(offset + 4, next), next };
}
