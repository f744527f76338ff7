import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { ImportGraph, tsFiles } from './import-graph.js';

/**
 * Packages the engine may load at run time. Empty: the template engine (nunjucks) loads its
 * file-system loaders, so templates are rendered and checked through ports (EnginePorts.templates,
 * CompileChecks.templateSyntax) instead.
 */
export const ENGINE_PACKAGES: readonly string[] = [];

/** Globals the engine may not touch (I/O, timers, the wall clock): they come in through EnginePorts. */
export const ENGINE_BANNED_GLOBALS = [
  'setTimeout',
  'setInterval',
  'setImmediate',
  'queueMicrotask',
  'fetch',
  'process',
  'require',
  'Buffer',
  'performance',
  'crypto',
];

/**
 * Checks the engine's allowlist from `src` (a project's `src` folder), transitively: from every file
 * under src/engine, value imports may reach only src/engine and src/lib (and ENGINE_PACKAGES), and
 * every file reached is checked the same way; type-only imports from outside are allowed only in
 * src/engine/ports.ts (they are erased, so they are not followed). Every file reached may not use
 * ENGINE_BANNED_GLOBALS or `Date.now`. Returns one line per violation, naming the import chain.
 */
export function enginePurityViolations(src: string): string[] {
  const engine = path.join(src, 'engine');
  const lib = path.join(src, 'lib');
  const ports = path.join(engine, 'ports.ts');
  const inside = (f: string, dir: string) => f.startsWith(dir + path.sep);
  const allowed = (f: string) => inside(f, engine) || inside(f, lib);
  const rel = (f: string) => path.relative(src, f);
  const graph = new ImportGraph();
  const out: string[] = [];
  const via = new Map<string, string[]>();
  const queue: string[] = [];
  for (const f of tsFiles(engine)) {
    via.set(f, [rel(f)]);
    queue.push(f);
  }
  while (queue.length) {
    const file = queue.shift()!;
    const chain = via.get(file)!.join(' → ');
    for (const e of graph.edges(file)) {
      const where = `${chain}:${e.line} imports ${e.specifier}`;
      if (e.typeOnly) {
        if (file !== ports && !(e.resolved && allowed(e.resolved))) out.push(`${where} (type-only imports from outside come through engine/ports.ts)`);
        continue;
      }
      if (!e.resolved) {
        if (e.specifier.startsWith('.')) out.push(`${where} (does not resolve to a source file)`);
        else if (!ENGINE_PACKAGES.includes(e.specifier)) out.push(`${where} (not on the engine's allowlist)`);
        continue;
      }
      if (!allowed(e.resolved)) {
        out.push(`${where} (outside src/engine and src/lib)`);
        continue;
      }
      if (!via.has(e.resolved)) {
        via.set(e.resolved, [...via.get(file)!, rel(e.resolved)]);
        queue.push(e.resolved);
      }
    }
    for (const g of bannedGlobals(file)) out.push(`${chain}:${g.line} uses ${g.name}`);
  }
  return out.sort();
}

/** References to banned globals (identifiers not declared in the file, not property names) and `Date.now`. */
function bannedGlobals(file: string): { name: string; line: number }[] {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const declared = new Set<string>();
  const found: { name: string; line: number }[] = [];
  const collect = (n: ts.Node): void => {
    if ((ts.isVariableDeclaration(n) || ts.isFunctionDeclaration(n) || ts.isParameter(n) || ts.isClassDeclaration(n) || ts.isImportSpecifier(n) || ts.isImportClause(n) || ts.isNamespaceImport(n)) && n.name && ts.isIdentifier(n.name)) {
      declared.add(n.name.text);
    }
    ts.forEachChild(n, collect);
  };
  collect(sf);
  const line = (n: ts.Node) => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
  const visit = (n: ts.Node): void => {
    if (ts.isPropertyAccessExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === 'Date' && n.name.text === 'now') {
      found.push({ name: 'Date.now', line: line(n) });
    } else if (ts.isIdentifier(n) && ENGINE_BANNED_GLOBALS.includes(n.text) && !declared.has(n.text)) {
      const p = n.parent;
      const isName =
        (ts.isPropertyAccessExpression(p) && p.name === n) ||
        ((ts.isPropertyAssignment(p) || ts.isPropertySignature(p) || ts.isMethodDeclaration(p) || ts.isMethodSignature(p) || ts.isPropertyDeclaration(p)) && p.name === n) ||
        ts.isTypeReferenceNode(p) ||
        ts.isQualifiedName(p);
      if (!isName) found.push({ name: n.text, line: line(n) });
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found;
}
