// The pod's half of the direct upload path: POSIX sh commands run over SSH and the parsers of what
// they print. The presigned URLs are credentials while they live, so they reach the pod only on the
// command's stdin (never in argv, env or a file) and nothing the pod prints can carry one: curl's own
// messages are dropped, an answer's body is reduced to its S3 error code on the pod.
//
// Files are named by their position in the command (1-based), not by their path, in what the pod
// prints: a result's name may hold spaces or newlines, an index always parses.
import { z } from 'zod';
import { shellJoin, shellQuote } from '../ssh/shell.ts';

const PUT_TAG = 'runpod-operator-s3-put';
const PART_TAG = 'runpod-operator-s3-part';
const WHOLE_TAG = 'runpod-operator-s3-whole';

/** Exit status of both commands when the results directory cannot be entered. */
export const DIRECT_NO_DIR_EXIT = 3;
/** Exit status when the pod lacks a tool of the direct path (curl; dd and sha256sum for parts). */
export const DIRECT_NO_TOOL_EXIT = 4;
/** Exit status of the upload command when stdin ends before every upload has its URL and headers. */
export const DIRECT_SHORT_INPUT_EXIT = 5;

const MIB = 1024 * 1024;

/** One PUT the pod makes: a whole file, or `countMiB` MiB of it from `skipMiB` (a multipart part). */
export interface PodUpload {
  path: string;
  /** Absent: the whole file. */
  range?: { skipMiB: number; countMiB: number };
  url: string;
  /** The headers the URL has signed (besides host), sent exactly so. */
  headers: ReadonlyArray<readonly [string, string]>;
}

const headerName = z.string().regex(/^[a-z0-9-]+$/, 'a lower-case header name');
// Both end up inside double quotes of a curl config line: no quote, backslash, space or control character.
const headerValue = z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'a header value of plain printable characters');
const presignedUrl = z.string().regex(/^https?:\/\/[\x21\x23-\x5b\x5d-\x7e]+$/, 'an http(s) URL of plain printable characters');

/**
 * The upload command for a batch: argv holds `<path> <skip MiB> <count MiB>` per upload (count 0:
 * the whole file); stdin holds, per upload, the URL on one line, then one `name: value` line per
 * signed header, then an empty line (uploadStdin). Stops at the first upload that fails. Prints one
 * line per upload tried (the ETag of a part only, `-` for a whole file):
 *     runpod-operator-s3-put ok <n> <http code> <etag or ->
 *     runpod-operator-s3-put fail <n> <http code> <curl exit> <S3 error code or ->
 * Success is curl's exit 0 with a 2xx answer; curl retries connection failures and transient answers
 * (408, 429, 5xx) itself, 3 times. A batch of whole files goes to one curl (one process and one
 * kept-alive connection for up to 100 small files, instead of a process and a handshake each) where
 * curl has --fail-with-body and so --fail-early; otherwise, and for parts (which go through a
 * temporary file: curl must know their length and be able to retry them), one curl per upload.
 */
export function uploadCommand(dir: string, uploads: readonly PodUpload[]): string {
  const args = uploads.flatMap((upload) => [upload.path, String(upload.range?.skipMiB ?? 0), String(upload.range?.countMiB ?? 0)]);
  const parted = uploads.some((upload) => upload.range);
  return [
    `cd -- ${shellQuote(dir)} || exit ${DIRECT_NO_DIR_EXIT}`,
    `for tool in curl mktemp; do command -v $tool >/dev/null 2>&1 || { echo "$tool not found" >&2; exit ${DIRECT_NO_TOOL_EXIT}; }; done`,
    // An HTTP refusal is judged by its code below; --fail-with-body (curl 7.76+) only where this curl has it.
    "fwb=; curl --help all 2>/dev/null | grep -q -- '--fail-with-body' && fwb=--fail-with-body",
    ...parted ? [`command -v dd >/dev/null 2>&1 || { echo 'dd not found' >&2; exit ${DIRECT_NO_TOOL_EXIT}; }`] : [],
    // The header file, the part and the answer live in a private directory, removed on the way out.
    't=$(umask 077; mktemp -d "${TMPDIR:-/tmp}/runpod-operator-s3.XXXXXX") || exit 1',
    'trap \'rm -rf "$t"\' EXIT',
    `set -- ${shellJoin(args)}`,
    parted ? ONE_CURL_EACH : `if [ -n "$fwb" ]; then\n${ONE_CURL_FOR_ALL}\nelse\n${ONE_CURL_EACH}\nfi`,
  ].join('\n');
}

/** How every upload's curl connects and retries: config lines for the batch's one curl, flags for one curl each. */
const CURL_POLICY = ['globoff', 'retry = 3', 'retry-connrefused', 'connect-timeout = 10'];
const CURL_POLICY_FLAGS = CURL_POLICY.map((line) => `--${line.replace(' = ', ' ')}`).join(' ');

/** Reports the failed upload $n from curl's exit $rc and answer $code, with the S3 error code of $t/body. */
const REPORT_FAILURE = [
  // Only the answer's <Code>: an S3 error body may carry the canonical request (with the access key id).
  '    err=$(sed -n \'s/.*<Code>\\([A-Za-z0-9.]*\\)<\\/Code>.*/\\1/p\' "$t/body" 2>/dev/null | tail -n 1)',
  `    echo "${PUT_TAG} fail $n $code $rc \${err:--}"`,
].join('\n');

const ONE_CURL_EACH = [
  'n=0',
  'while [ $# -gt 0 ]; do',
  '  n=$((n+1)); f=$1; skip=$2; count=$3; shift 3',
  `  IFS= read -r url || exit ${DIRECT_SHORT_INPUT_EXIT}`,
  // The signed headers go into a curl config read from a file: no header value in argv either.
  '  : >"$t/h"',
  `  while :; do IFS= read -r h || exit ${DIRECT_SHORT_INPUT_EXIT}; [ -z "$h" ] && break; printf 'header = "%s"\\n' "$h" >>"$t/h"; done`,
  '  src=./$f',
  '  if [ "$count" -gt 0 ]; then dd if="./$f" of="$t/part" bs=1048576 skip="$skip" count="$count" 2>/dev/null || { echo "' + PUT_TAG + ' fail $n 000 26 -"; exit 0; }; src=$t/part; fi',
  // globoff: no globbing of the file name; -s without -S: curl's messages are dropped (the exit code says enough).
  `  code=$(printf 'url = "%s"\\n' "$url" | curl -s -K - -K "$t/h" $fwb ${CURL_POLICY_FLAGS} -T "$src" -D "$t/head" -o "$t/body" -w '%{http_code}')`,
  '  rc=$?; code=${code:-000}',
  '  if [ $rc -eq 0 ] && [ "$code" -ge 200 ] && [ "$code" -lt 300 ]; then',
  // Only a part's ETag is used (CompleteMultipartUpload): a whole file skips the three processes.
  '    etag=-; [ "$count" -gt 0 ] && etag=$(tr -d \'\\r\' <"$t/head" | sed -n \'s/^[Ee][Tt][Aa][Gg]: *//p\' | tail -n 1)',
  `    echo "${PUT_TAG} ok $n $code \${etag:--}"`,
  '  else',
  REPORT_FAILURE,
  '    exit 0',
  '  fi',
  'done',
].join('\n');

/**
 * Whole files, one curl: the URLs and headers (read whole first: a short stdin uploads nothing) make
 * one config that reaches curl on its stdin, an operation per file (`next` between them). A file's
 * name goes into the config in double quotes; one that a quoted config string cannot hold as it is (a
 * quote, a backslash, a line break) is named through a link in the private directory instead.
 * curl prints each answer's code as its operation ends and, with --fail-early, stops at the first that fails.
 */
const ONE_CURL_FOR_ALL = [
  "nl='\n'; cr=$(printf '\\r')",
  "cfg=''; n=0",
  'while [ $# -gt 0 ]; do',
  '  n=$((n+1)); f=$1; shift 3',
  `  IFS= read -r url || exit ${DIRECT_SHORT_INPUT_EXIT}`,
  '  [ $n -eq 1 ] || cfg="${cfg}next${nl}"',
  '  cfg="${cfg}url = \\"$url\\"${nl}"',
  `  while :; do IFS= read -r h || exit ${DIRECT_SHORT_INPUT_EXIT}; [ -z "$h" ] && break; cfg="\${cfg}header = \\"$h\\"\${nl}"; done`,
  '  src=./$f',
  '  case $f in *[\\"\\\\]* | *"$nl"* | *"$cr"*) ln -s "$PWD/$f" "$t/$n" || exit 1; src=$t/$n ;; esac',
  `  cfg="\${cfg}upload-file = \\"$src\\"\${nl}${CURL_POLICY.map((line) => `${line}\${nl}`).join('')}fail-with-body\${nl}output = \\"$t/body\\"\${nl}write-out = \\"%{http_code}\\\\n\\"\${nl}"`,
  'done',
  "codes=$(printf '%s' \"$cfg\" | curl -s --fail-early -K -)",
  'rc=$?; n=0',
  'for code in $codes; do',
  '  n=$((n+1))',
  `  if [ "$code" -ge 200 ] && [ "$code" -lt 300 ]; then echo "${PUT_TAG} ok $n $code -"; continue; fi`,
  '  [ $rc -ne 0 ] || rc=22',
  REPORT_FAILURE,
  '  exit 0',
  'done',
  // A failure without an answer (no connection, an unreadable file): the operation after the last answered.
  'if [ $rc -ne 0 ]; then',
  '  n=$((n+1)); code=000',
  REPORT_FAILURE,
  'fi',
].join('\n');

/** What the upload command reads on stdin for these uploads. */
export function uploadStdin(uploads: readonly PodUpload[]): string {
  return uploads.map((upload) => {
    const url = presignedUrl.parse(upload.url);
    const headers = upload.headers.map(([name, value]) => `${headerName.parse(name)}: ${headerValue.parse(value)}\n`).join('');
    return `${url}\n${headers}\n`;
  }).join('');
}

const putLine = z.union([
  z.tuple([z.literal('ok'), z.coerce.number().int().positive(), z.string().regex(/^\d{3}$/), z.string().regex(/^[\x21-\x7e]{1,200}$/)])
    .transform(([, index, http, etag]) => ({ ok: true as const, index, http: Number(http), etag: etag === '-' ? undefined : etag })),
  z.tuple([z.literal('fail'), z.coerce.number().int().positive(), z.string().regex(/^\d{3}$/), z.coerce.number().int().nonnegative(), z.string().regex(/^[A-Za-z0-9.]{1,64}$|^-$/)])
    .transform(([, index, http, curlExit, code]) => ({ ok: false as const, index, http: Number(http), curlExit, code: code === '-' ? undefined : code })),
]);
export type PutResult = z.output<typeof putLine>;

/** The upload command's lines, in order; throws on a line of ours that does not parse. */
export function parseUploadOutput(stdout: string, count: number): PutResult[] {
  const results: PutResult[] = [];
  for (const line of stdout.split('\n')) {
    const words = line.trim().split(' ');
    if (words[0] !== PUT_TAG) continue;
    const parsed = putLine.safeParse(words.slice(1));
    if (!parsed.success) throw new Error(`the pod's upload report does not parse: ${z.prettifyError(parsed.error)}`);
    if (parsed.data.index !== results.length + 1 || parsed.data.index > count) throw new Error(`the pod reported upload ${parsed.data.index} out of order`);
    results.push(parsed.data);
  }
  return results;
}

/** One file of a multipart upload: its parts are `partMiB` MiB each (the last one shorter). */
export interface PartedFile {
  path: string;
  size: number;
  partMiB: number;
}

export const partCount = (file: { size: number; partMiB: number }): number => Math.max(1, Math.ceil(file.size / (file.partMiB * MIB)));

/**
 * Hashes every part of each file, then the whole file (so the controller sees whether it still is
 * what the manifest says). Prints `runpod-operator-s3-part <n> <part number> <hex>` per part and
 * `runpod-operator-s3-whole <n> <hex>` per file (n: the file's 1-based position).
 */
export function partHashCommand(dir: string, files: readonly PartedFile[]): string {
  const args = files.flatMap((file) => [file.path, String(file.partMiB), String(partCount(file))]);
  return [
    `cd -- ${shellQuote(dir)} || exit ${DIRECT_NO_DIR_EXIT}`,
    `for tool in dd sha256sum; do command -v $tool >/dev/null 2>&1 || { echo "$tool not found" >&2; exit ${DIRECT_NO_TOOL_EXIT}; }; done`,
    `set -- ${shellJoin(args)}`,
    'n=0',
    'while [ $# -gt 0 ]; do',
    '  n=$((n+1)); f=$1; mib=$2; parts=$3; shift 3; i=0',
    '  while [ $i -lt $parts ]; do',
    '    h=$(dd if="./$f" bs=1048576 skip=$((i*mib)) count=$mib 2>/dev/null | sha256sum) || exit 1',
    `    i=$((i+1)); echo "${PART_TAG} $n $i \${h%% *}"`,
    '  done',
    '  h=$(sha256sum <"./$f") || exit 1',
    `  echo "${WHOLE_TAG} $n \${h%% *}"`,
    'done',
  ].join('\n');
}

export interface FileHashes {
  parts: string[];
  whole: string;
}

const hex = z.string().regex(/^[0-9a-f]{64}$/, 'a SHA-256 hex digest');
const partLine = z.tuple([z.literal(PART_TAG), z.coerce.number().int().positive(), z.coerce.number().int().positive(), hex]);
const wholeLine = z.tuple([z.literal(WHOLE_TAG), z.coerce.number().int().positive(), hex]);

/** The part hash command's report: every part of every file, in order, or an error. */
export function parsePartHashes(stdout: string, files: readonly PartedFile[]): FileHashes[] {
  const hashes: FileHashes[] = files.map(() => ({ parts: [], whole: '' }));
  for (const line of stdout.split('\n')) {
    const words = line.trim().split(' ');
    if (words[0] === PART_TAG) {
      const [, index, number, digest] = partLine.parse(words);
      const file = hashes[index - 1];
      if (!file || number !== file.parts.length + 1 || file.whole !== '') throw new Error(`the pod reported part ${number} of file ${index} out of order`);
      file.parts.push(digest);
    } else if (words[0] === WHOLE_TAG) {
      const [, index, digest] = wholeLine.parse(words);
      const file = hashes[index - 1];
      if (!file || file.whole !== '') throw new Error(`the pod reported file ${index} twice`);
      file.whole = digest;
    }
  }
  for (const [i, file] of files.entries()) {
    const got = hashes[i];
    if (!got || got.whole === '' || got.parts.length !== partCount(file)) throw new Error(`the pod's part hashes are incomplete (file ${i + 1})`);
  }
  return hashes;
}
