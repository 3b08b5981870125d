// Where the redaction set's entries are looked up: a trie over chunks of KEY characters, with a lone
// entry kept whole as a leaf (so an entry costs one map slot unless others share its first chunks).
// Looking up a position of a text walks only as deep as the text shares chunks with some entry, so it
// costs a map lookup or two almost everywhere, however many entries there are and however many share
// a beginning (one config line in every run's secret file). Every entry is at least KEY characters.
export const KEY = 8;

interface TrieNode {
  /** Entries that end within this node's chunk (length below (depth + 1) x KEY), by length. */
  ends: Map<number, Set<string>>;
  /** Longer entries by their chunk at this depth: a lone one as a leaf, several under a node. */
  children: Map<string, TrieNode | string>;
}

const emptyNode = (): TrieNode => ({ ends: new Map(), children: new Map() });

export class EntryIndex {
  readonly #root = emptyNode();

  add(entry: string): void {
    insert(this.#root, 0, entry);
  }

  remove(entry: string): void {
    remove(this.#root, 0, entry);
  }

  /** The length of the longest entry that starts at `at` in `text`, or 0. */
  longestAt(text: string, at: number): number {
    let node = this.#root;
    let longest = 0;
    for (let depth = 0; ; depth++) {
      const start = at + depth * KEY;
      if (start + KEY > text.length) return longest;
      const child = node.children.get(text.slice(start, start + KEY));
      if (child === undefined) return longest;
      if (typeof child === 'string') return child.length > longest && text.startsWith(child, at) ? child.length : longest;
      node = child;
      for (const [length, same] of node.ends) if (length > longest && same.has(text.slice(at, at + length))) longest = length;
    }
  }
}

function insert(node: TrieNode, depth: number, entry: string): void {
  if (depth > 0 && entry.length < (depth + 1) * KEY) {
    let same = node.ends.get(entry.length);
    if (!same) node.ends.set(entry.length, (same = new Set()));
    same.add(entry);
    return;
  }
  const chunk = entry.slice(depth * KEY, (depth + 1) * KEY);
  const child = node.children.get(chunk);
  if (child === undefined) {
    node.children.set(chunk, entry);
  } else if (typeof child === 'string') {
    if (child === entry) return;
    const split = emptyNode();
    insert(split, depth + 1, child);
    insert(split, depth + 1, entry);
    node.children.set(chunk, split);
  } else {
    insert(child, depth + 1, entry);
  }
}

function remove(node: TrieNode, depth: number, entry: string): void {
  if (depth > 0 && entry.length < (depth + 1) * KEY) {
    const same = node.ends.get(entry.length);
    same?.delete(entry);
    if (same?.size === 0) node.ends.delete(entry.length);
    return;
  }
  const chunk = entry.slice(depth * KEY, (depth + 1) * KEY);
  const child = node.children.get(chunk);
  if (child === undefined) return;
  if (typeof child === 'string') {
    if (child === entry) node.children.delete(chunk);
    return;
  }
  remove(child, depth + 1, entry);
  if (child.ends.size === 0 && child.children.size === 0) node.children.delete(chunk);
}
