// The user docs against the code they describe: every status.reason has a troubleshooting section,
// every CRD field under spec has a description (what `kubectl explain` prints), every controller flag
// is in the flags reference, and every relative link in README.md and docs/ leads somewhere. Pure: files
// and imports only, no server.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { parseSpec } from '../../src/api/runpodrun.ts';
import { reasons } from '../../src/api/status.ts';
import { flagNames } from '../../src/config.ts';

const repo = resolve(import.meta.dirname, '..', '..');
const read = (path: string): string => readFileSync(join(repo, path), 'utf8');

/** Fenced blocks and inline code hold examples, not prose: a `## x` or `[a](b)` inside them is no heading or link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, (code) => (code.includes('](') ? '' : code));
}

void test('every status.reason has a "## `Reason`" section in docs/guide/10-troubleshooting.md', () => {
  const page = prose(read('docs/guide/10-troubleshooting.md'));
  const sections = new Set([...page.matchAll(/^## `([^`]+)`\s*$/gm)].map((match) => match[1]));
  const missing = reasons.filter((reason) => !sections.has(reason));
  assert.deepEqual(missing, [], `no troubleshooting section for: ${missing.join(', ')}`);
  // A section for a reason the code no longer has would send a reader after something that cannot happen.
  const unknown = [...sections].filter((section) => !(reasons as readonly string[]).includes(section ?? ''));
  assert.deepEqual(unknown, [], `troubleshooting sections for reasons src/api/status.ts does not have: ${unknown.join(', ')}`);
});

interface SchemaNode { description?: string; properties?: Record<string, SchemaNode>; items?: SchemaNode }

/** Every property below `node` (objects and array items, recursively) as [path, node]. */
function properties(node: SchemaNode, path: string): [string, SchemaNode][] {
  const found: [string, SchemaNode][] = [];
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    found.push([`${path}.${name}`, child], ...properties(child, `${path}.${name}`));
  }
  if (node.items) found.push(...properties(node.items, `${path}[]`));
  return found;
}

void test('every property under spec in the generated CRD has a description (kubectl explain shows it)', () => {
  const crdPath = 'crds/runpodruns.runpod-operator.dev.yaml';
  const crd = parse(read(crdPath)) as { spec: { versions: { name: string; schema: { openAPIV3Schema: SchemaNode } }[] } };
  for (const version of crd.spec.versions) {
    const spec = version.schema.openAPIV3Schema.properties?.spec;
    assert.ok(spec, `${crdPath}: version ${version.name} has no spec schema`);
    const all: [string, SchemaNode][] = [['spec', spec], ...properties(spec, 'spec')];
    // So that a moved schema cannot pass by finding nothing to check.
    assert.ok(all.length > 40, `${crdPath}: found only ${all.length} spec properties; has the schema's shape changed?`);
    const undescribed = all.filter(([, node]) => !node.description?.trim()).map(([path]) => path);
    assert.deepEqual(undescribed, [], `${crdPath} (${version.name}): no description for ${undescribed.join(', ')}`);
  }
});

void test('every flag of src/config.ts is in docs/reference/flags.md', () => {
  const page = read('docs/reference/flags.md');
  assert.ok(flagNames.length > 20, `src/config.ts lists only ${flagNames.length} flags`);
  const missing = flagNames.filter((flag) => !page.includes(`\`--${flag}\``)).map((flag) => `--${flag}`);
  assert.deepEqual(missing, [], `docs/reference/flags.md does not list: ${missing.join(', ')}`);
});

/** README.md and every Markdown file under docs/. */
function markdownFiles(): string[] {
  const files = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(repo, dir))) {
      const path = join(dir, entry);
      if (statSync(join(repo, path)).isDirectory()) walk(path);
      else if (path.endsWith('.md')) files.push(path);
    }
  };
  walk('docs');
  return files;
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens. */
const anchorOf = (heading: string): string => heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');

function anchorsOf(path: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading = ''] of prose(readFileSync(path, 'utf8')).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    // A repeated heading gets -1, -2, ... as on GitHub.
    const base = anchorOf(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

void test('every relative link in README.md and docs/ points to a file that exists (and a heading, when it names one)', () => {
  const files = markdownFiles();
  assert.ok(files.some((file) => file.startsWith('docs/guide/')), 'no guide pages found under docs/guide');
  const broken: string[] = [];
  let checked = 0;
  for (const file of files) {
    const text = prose(read(file));
    for (const [, target = ''] of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: ...
      const [pathPart = '', fragment] = target.split('#', 2);
      const to = pathPart === '' ? join(repo, file) : resolve(join(repo, dirname(file)), decodeURIComponent(pathPart));
      checked += 1;
      if (!existsSync(to)) {
        broken.push(`${file}: ${target} (no ${relative(repo, to)})`);
      } else if (fragment && to.endsWith('.md') && !anchorsOf(to).has(fragment)) {
        broken.push(`${file}: ${target} (no heading #${fragment} in ${relative(repo, to)})`);
      }
    }
  }
  assert.ok(checked > 20, `only ${checked} relative links found`);
  assert.deepEqual(broken, [], `broken links:\n${broken.join('\n')}`);
});

void test('the manifest of docs/guide/04-spec.md is a valid RunpodRun', () => {
  const page = read('docs/guide/04-spec.md');
  const block = /## Every field in one manifest\s+```yaml\n([\s\S]*?)```/.exec(page)?.[1];
  assert.ok(block, 'docs/guide/04-spec.md has no yaml block under "## Every field in one manifest"');
  const [doc] = parseAllDocuments(block).map((d) => d.toJS() as { kind?: string; spec?: unknown });
  assert.equal(doc?.kind, 'RunpodRun');
  const verdict = parseSpec(doc?.spec);
  assert.ok(verdict.ok, verdict.ok ? '' : `the example is not a valid spec: ${verdict.message}`);
});
