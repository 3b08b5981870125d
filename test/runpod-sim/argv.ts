// How Runpod turns a create call's `args` string into the container's argv: split into words by the
// POSIX shell's quoting rules, and nothing else (openapi-v2.json: "Arguments passed to the container
// entrypoint"; API-NOTES.md §2 and §7: no shell is added). So quotes and backslashes work as in sh
// (XCU 2.2), but `$VAR`, `$(...)`, globs, `~`, `#` and operators (`;`, `|`, `&&`, `>`) are ordinary
// characters: `a;b` is one word, `a ; b` three.
//
// Written here rather than taken from npm because none of the candidates is exact (checked
// 2026-12): shell-quote expands `$VAR` to "" and returns operator, glob and comment objects;
// shellwords treats a backslash inside single quotes as an escape and unescapes only the first
// backslash of a double-quoted part; shlex (Python's rules) keeps the backslash in "\$" and "\`".
// argv.test.ts checks this splitter against a real sh on every case it can express.

export class UnsplittableArgsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsplittableArgsError';
  }
}

const BLANK = new Set([' ', '\t', '\n']);
/** Inside double quotes a backslash escapes only these (and a newline, which it removes). */
const DOUBLE_QUOTE_ESCAPES = new Set(['$', '`', '"', '\\']);

/** The words of `text`; throws UnsplittableArgsError on an unclosed quote. */
export function splitArgs(text: string): string[] {
  const words: string[] = [];
  let word = '';
  // A word exists once any of its characters (or an empty quote pair) was read.
  let inWord = false;
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (BLANK.has(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i += 1;
    } else if (c === '\\') {
      const next = text[i + 1];
      if (next === undefined) {
        // A trailing backslash stays itself (as in dash and bash).
        word += '\\';
        inWord = true;
      } else if (next !== '\n') {
        word += next;
        inWord = true;
      }
      // Backslash-newline is a line continuation: both go.
      i += 2;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new UnsplittableArgsError(`unclosed single quote at offset ${i}`);
      word += text.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      let j = i + 1;
      for (;;) {
        const d = text[j];
        if (d === undefined) throw new UnsplittableArgsError(`unclosed double quote at offset ${i}`);
        if (d === '"') break;
        if (d === '\\') {
          const next = text[j + 1];
          if (next === '\n') {
            j += 2;
            continue;
          }
          if (next !== undefined && DOUBLE_QUOTE_ESCAPES.has(next)) {
            word += next;
            j += 2;
            continue;
          }
        }
        word += d;
        j += 1;
      }
      inWord = true;
      i = j + 1;
    } else {
      word += c;
      inWord = true;
      i += 1;
    }
  }
  if (inWord) words.push(word);
  return words;
}
