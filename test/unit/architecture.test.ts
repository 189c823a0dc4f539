/**
 * The shape of the house, checked from the code's own imports: no file of src/ or bench/ takes
 * part in an import cycle. (Which layer may import which is ESLint's rule, eslint.config.mjs.)
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const ROOT = resolve(__dirname, '..', '..');
const IMPORT = /(?:\bfrom|\bimport|\bimport\(|\brequire\()\s*['"](\.{1,2}\/[^'"]+)['"]/g;

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourcesUnder(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

function resolveImport(from: string, specifier: string): string | undefined {
  const base = resolve(dirname(from), specifier);
  return [base, `${base}.ts`, join(base, 'index.ts')].find(
    (candidate) => candidate.endsWith('.ts') && existsSync(candidate),
  );
}

/** The import graph: each file and the files of the tree it imports. */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(IMPORT)].flatMap((match) => {
      const target = resolveImport(file, match[1] as string);
      return target === undefined ? [] : [target];
    });
    graph.set(file, targets);
  }
  return graph;
}

/** Strongly connected components of more than one file, or a file importing itself (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node) as number, low.get(target) as number));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node) as number, index.get(target) as number));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    const selfImport = (graph.get(node) ?? []).includes(node);
    if (component.length > 1 || selfImport) found.push(component);
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

test('the cycle finder finds a cycle (so that finding none means something)', () => {
  const graph = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['a']],
  ]);
  assert.deepEqual(
    cycles(graph).map((component) => component.sort()),
    [['a', 'b', 'c']],
  );
});

test('no import cycle in src/ or bench/', () => {
  const files = [...sourcesUnder(join(ROOT, 'src')), ...sourcesUnder(join(ROOT, 'bench'))];
  assert.ok(files.length > 50, `read ${files.length} files`);
  const graph = importGraph(files);
  const edges = [...graph.values()].reduce((sum, targets) => sum + targets.length, 0);
  assert.ok(edges > 100, `read ${edges} imports`);
  const names = cycles(graph).map((component) => component.map((f) => relative(ROOT, f)).sort());
  assert.deepEqual(names, []);
});
