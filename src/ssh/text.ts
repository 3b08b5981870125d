// Text from a pod (stderr, file names, command output) ends up in errors, events and status
// messages; a hostile or broken pod must not inject control characters or unbounded text there.

/** One line of printable ASCII, at most `max` characters ("…" marks a cut). */
export function printable(text: string, max = 200): string {
  const flat = text.replace(/[^\x20-\x7e]+/g, ' ').replace(/ {2,}/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, Math.max(0, max - 1))}…`;
}
