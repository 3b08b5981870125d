// SSH carries a command as one string that the remote login shell parses, so every argument
// that comes from a user, a spec or a pod must be quoted for POSIX sh (dash, bash, busybox ash).

// No '=' (a first word like A=b is an assignment) and no '~' (tilde expansion).
const SAFE = /^[A-Za-z0-9_@%+:,./-]+$/;

/** Quotes one argument so that sh reads it back as exactly this string. */
export function shellQuote(arg: string): string {
  // A NUL cannot be part of an argv entry: sh would cut the word there silently.
  if (arg.includes('\0')) throw new TypeError('a shell argument cannot contain a NUL byte');
  if (SAFE.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** Quotes and joins an argv (exec form) into one command line. */
export function shellJoin(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}
