// The run's SSH Secret, `<run>-ssh` in the run's namespace: the controller makes it before the first pod
// (a client key the pod accepts, and the host key the pod's sshd must present, pinned). Its names are a
// contract with users too: `kubectl runpod ssh` and `logs` read it with the user's own RBAC.
export const sshSecretName = (run: string): string => `${run}-ssh`;

/** The Secret's data keys. */
export const sshSecretKeys = { clientPrivateKey: 'client-key', clientPublicKey: 'client-key.pub', hostPrivateKey: 'host-key', hostPublicKey: 'host-key.pub' } as const;
