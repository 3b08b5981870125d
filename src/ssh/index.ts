// The SSH module's public surface: per-run keys, pinned sessions, commands, transfers and the
// verified retrieval of a results directory.
export { generateKeyPair, generateRunKeys, encodeOpenSshKeyPair, parsePublicKey, fingerprint, protectPrivateKey } from './keys.ts';
export type { SshKeyPair, RunKeys, PublicKey } from './keys.ts';
export { SshError, HostKeyMismatchError, SshAuthError, isNotReadyYet } from './errors.ts';
export type { SshFailureKind } from './errors.ts';
export { connectPinned, SshConnection } from './connect.ts';
export type { ConnectOptions } from './connect.ts';
export { exec, execChecked, RemoteCommandError, DEFAULT_MAX_OUTPUT_BYTES } from './exec.ts';
export type { ExecOptions, ExecResult } from './exec.ts';
export { shellQuote, shellJoin } from './shell.ts';
export { printable } from './text.ts';
export { SftpSession, SftpError, isNoSuchFile } from './sftp.ts';
export { uploadFile, downloadFile, mkdirRemote, readPipelined, ContentMismatchError } from './transfer.ts';
export type { DownloadOptions, DownloadResult } from './transfer.ts';
export { manifestCommand, listFilesCommand, computeManifest, listRemoteFiles, parseManifest, validateManifest, manifestPathProblem, ManifestError } from './manifest.ts';
export type { Manifest, ManifestFile, ManifestLink, ComputeManifestOptions } from './manifest.ts';
export { verifyAgainstManifest, sha256File } from './verify.ts';
export type { VerifyResult } from './verify.ts';
export { retrieveDirectory } from './retrieve.ts';
export type { RetrieveOptions, RetrieveProgress, RetrieveResult } from './retrieve.ts';
