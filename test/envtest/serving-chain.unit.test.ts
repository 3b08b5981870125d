// kube-apiserver writes its self-made serving chain in place: a read may meet the file empty or cut
// short, and only a whole chain may become a kubeconfig's CA.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { servingChain } from './serving-chain.ts';

/** Two self-signed certificates (openssl req -x509, P-256), as kube-apiserver's serving cert and its CA. */
const CHAIN = [
  '-----BEGIN CERTIFICATE-----',
  'MIIBfTCCASOgAwIBAgIUYKVbyE1dNCFx5LnITy5vmdRWzF0wCgYIKoZIzj0EAwIw',
  'FDESMBAGA1UEAwwJZW52dGVzdC1hMB4XDTI2MTIwNTA5MzIzMloXDTI2MTIwNjA5',
  'MzIzMlowFDESMBAGA1UEAwwJZW52dGVzdC1hMFkwEwYHKoZIzj0CAQYIKoZIzj0D',
  'AQcDQgAEowTt7dvLzfSrRTwJpzE8Ne/JJmutppMsCLW9ptGab1Y+R/1GuBzIebJ2',
  'hCY4m+XLupXctajUqNJS5RetnmoW7aNTMFEwHQYDVR0OBBYEFDzsW6qe2K8/S5gG',
  '/BD+mhs3w40qMB8GA1UdIwQYMBaAFDzsW6qe2K8/S5gG/BD+mhs3w40qMA8GA1Ud',
  'EwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAJoNsK7S2DEdOLIK9AdJYwG4',
  'GfOboBAP5wphPozUYxYIAiBMzAFKEtMlmeGWgxQwjfl81W5Ggmk78foKMqUKWLth',
  'Eg==',
  '-----END CERTIFICATE-----',
  '-----BEGIN CERTIFICATE-----',
  'MIIBfTCCASOgAwIBAgIUKh07Ya0V8DXDLvVnB0JRntl3bjgwCgYIKoZIzj0EAwIw',
  'FDESMBAGA1UEAwwJZW52dGVzdC1iMB4XDTI2MTIwNTA5MzIzMloXDTI2MTIwNjA5',
  'MzIzMlowFDESMBAGA1UEAwwJZW52dGVzdC1iMFkwEwYHKoZIzj0CAQYIKoZIzj0D',
  'AQcDQgAEX1OSZuFFcTMMT3ExRbsDHGmOKIBdhGk5zG31QZYl1O9w0SEsQ0Hf3+K/',
  'AV/VKllblqK7l0gJTit/q6OFku01L6NTMFEwHQYDVR0OBBYEFAyxpyb764nQRjy/',
  'azuMI/G3GPmWMB8GA1UdIwQYMBaAFAyxpyb764nQRjy/azuMI/G3GPmWMA8GA1Ud',
  'EwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAIv6JOE3g0VLgFSSSx4xMa5V',
  '5s2NnHvwDwGC7aowq3lfAiBdrZMyO2+i/9163b8B4osWpQfHbyZGWnADV9LPpEwQ',
  '7w==',
  '-----END CERTIFICATE-----',
].join('\n') + '\n';

test('the serving chain counts only once every certificate in the file is whole (empty, cut short or garbled: not yet)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'serving-chain-'));
  try {
    const file = join(dir, 'apiserver.crt');
    assert.equal(servingChain(file), undefined, 'not written');
    // The read that failed the demo under make test: the file exists, truncated, before the write.
    writeFileSync(file, '');
    assert.equal(servingChain(file), undefined, 'empty');
    writeFileSync(file, CHAIN.slice(0, Math.floor(CHAIN.length * 0.75)));
    assert.equal(servingChain(file), undefined, 'cut in the middle of the second certificate');
    writeFileSync(file, CHAIN.replace('MI', 'XX'));
    assert.equal(servingChain(file), undefined, 'a block that does not parse');
    writeFileSync(file, CHAIN);
    assert.equal(servingChain(file), CHAIN);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
