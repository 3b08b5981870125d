// The certificate chain kube-apiserver serves with when it makes its own (--cert-dir): it writes
// apiserver.crt in place (truncate, then write), so a read may meet the file empty or cut short. An
// empty CA in a kubeconfig means the system's roots, and every request then fails with "self-signed
// certificate in certificate chain" until the wait gives up (seen under make test, in the demo test).
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+-----END CERTIFICATE-----/g;

/**
 * The file's certificates once they are whole PEM blocks that parse, else undefined (not written yet).
 * A file cut exactly between two certificates reads as a shorter chain: the caller tries again with a
 * fresh read until a server trusts it.
 */
export function servingChain(certFile: string): string | undefined {
  if (!existsSync(certFile)) return undefined;
  const pem = readFileSync(certFile, 'utf8');
  const blocks = pem.match(PEM_BLOCK) ?? [];
  if (blocks.length === 0 || blocks.join('\n').length < pem.trim().length) return undefined;
  try {
    for (const block of blocks) new X509Certificate(block);
  } catch {
    return undefined;
  }
  return pem;
}
