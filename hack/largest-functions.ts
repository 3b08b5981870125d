// The largest functions of a tree, by lines: the measure issue reviews ask for ("the largest 10
// functions"). `node hack/largest-functions.ts [dir] [count]`.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const root = process.argv[2] ?? 'src';
const count = Number(process.argv[3] ?? 10);

function* files(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

const found: { lines: number; where: string }[] = [];
for (const path of files(root)) {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line + 1;
      const name = node.name?.getText() ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText() : '(anonymous)');
      found.push({ lines: end - start + 1, where: `${relative('.', path)}:${start} ${name}` });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
for (const { lines, where } of found.sort((a, b) => b.lines - a.lines).slice(0, count)) console.log(`${String(lines).padStart(5)}  ${where}`);
