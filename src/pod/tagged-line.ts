// Every command the controller runs on a pod prints one line starting with its own tag; a login shell
// may print other lines first, so the parsers read the last line with theirs.

/** The last line that starts with the tag (a login shell may print other lines first). */
export function taggedLine(stdout: string, tag: string): string {
  const lines = stdout.split('\n').map((line) => line.trim());
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i];
    if (line !== undefined && (line === tag || line.startsWith(`${tag} `))) return line;
  }
  throw new Error(`no "${tag}" line in the command's output: ${JSON.stringify(stdout.slice(0, 300))}`);
}
