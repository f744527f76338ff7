import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** One import or re-export in a source file, as the TypeScript parser sees it. */
export interface ImportEdge {
  /** The specifier as written (`../lib/usage.js`, `nunjucks`, `node:fs`). */
  specifier: string;
  /** Absolute path of the `.ts` file a relative specifier resolves to; undefined for packages. */
  resolved: string | undefined;
  /** True for `import type`, `export type` and imports whose every named binding is `type`: erased at compile time. */
  typeOnly: boolean;
  /** 1-based line, for messages. */
  line: number;
}

/** Every `.ts` file under `dir`, recursively. */
export function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : [];
  });
}

/** Resolves a relative `.js` specifier the way NodeNext does for our sources (`x.js` → `x.ts`, `dir` → `dir/index.ts`). */
function resolveRelative(from: string, specifier: string): string | undefined {
  const base = path.resolve(path.dirname(from), specifier);
  for (const candidate of [base.replace(/\.js$/, '.ts'), `${base}.ts`, path.join(base, 'index.ts'), base]) {
    if (candidate.endsWith('.ts') && existsSync(candidate)) return candidate;
  }
  return undefined;
}

function allTypeOnly(clause: ts.ImportClause): boolean {
  if (clause.isTypeOnly) return true;
  if (clause.name) return false;
  const bindings = clause.namedBindings;
  if (!bindings) return false;
  if (ts.isNamespaceImport(bindings)) return false;
  return bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly);
}

/**
 * The imports of one source text: static imports, re-exports, `import x = require()`, dynamic
 * `import('…')` and `require('…')` calls (both count as value imports).
 */
export function importsOf(file: string, source: string = readFileSync(file, 'utf8')): ImportEdge[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const out: ImportEdge[] = [];
  const add = (spec: string, typeOnly: boolean, node: ts.Node) => {
    const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
    out.push({ specifier: spec, resolved: spec.startsWith('.') ? resolveRelative(file, spec) : undefined, typeOnly, line });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, node.importClause ? allTypeOnly(node.importClause) : false, node);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const named = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause.elements : undefined;
      const typeOnly = node.isTypeOnly || (!!named && named.length > 0 && named.every((e) => e.isTypeOnly));
      add(node.moduleSpecifier.text, typeOnly, node);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      const expr = node.moduleReference.expression;
      if (ts.isStringLiteral(expr)) add(expr.text, node.isTypeOnly, node);
    } else if (ts.isCallExpression(node) && node.arguments.length >= 1 && ts.isStringLiteralLike(node.arguments[0]!)) {
      const callee = node.expression;
      if (callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require')) {
        add((node.arguments[0] as ts.StringLiteralLike).text, false, node);
      }
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      add(node.argument.literal.text, true, node);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** The import graph of a set of files: file → its edges (cached per file). */
export class ImportGraph {
  readonly #edges = new Map<string, ImportEdge[]>();
  readonly #read: (file: string) => string;

  constructor(read: (file: string) => string = (f) => readFileSync(f, 'utf8')) {
    this.#read = read;
  }

  edges(file: string): ImportEdge[] {
    let e = this.#edges.get(file);
    if (!e) {
      e = importsOf(file, this.#read(file));
      this.#edges.set(file, e);
    }
    return e;
  }

  /**
   * Cycles among value imports (type-only imports are erased, so they cannot form a load-order
   * cycle), each reported once as the list of files around it. Tarjan's strongly connected
   * components: every component with more than one file, or a file importing itself, is a cycle.
   */
  cycles(files: string[], includeTypeOnly = false): string[][] {
    let index = 0;
    const idx = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const out: string[][] = [];
    const next = (f: string) =>
      this.edges(f)
        .filter((e) => e.resolved && (includeTypeOnly || !e.typeOnly))
        .map((e) => e.resolved!);
    const strong = (v: string): void => {
      idx.set(v, index);
      low.set(v, index);
      index++;
      stack.push(v);
      onStack.add(v);
      for (const w of next(v)) {
        if (!idx.has(w)) {
          strong(w);
          low.set(v, Math.min(low.get(v)!, low.get(w)!));
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
      }
      if (low.get(v) === idx.get(v)) {
        const comp: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          comp.push(w);
        } while (w !== v);
        if (comp.length > 1 || next(v).includes(v)) out.push(comp.sort());
      }
    };
    for (const f of files) if (!idx.has(f)) strong(f);
    return out;
  }
}

/** One import between two folders: the importing file and line, and the file it names. */
export interface FolderEdgeSample {
  from: string;
  line: number;
  to: string;
  typeOnly: boolean;
}

/**
 * The imports between top-level parts of a source tree (`unitOf` names the part of a path relative
 * to `root`, e.g. its first folder), type-only imports included: `from → to → the imports that make
 * the edge`. Imports within one part are left out.
 */
export function folderGraph(
  root: string,
  unitOf: (relative: string) => string,
  graph: ImportGraph = new ImportGraph(),
): Map<string, Map<string, FolderEdgeSample[]>> {
  const out = new Map<string, Map<string, FolderEdgeSample[]>>();
  const rel = (f: string) => path.relative(root, f).split(path.sep).join('/');
  for (const file of tsFiles(root)) {
    const from = unitOf(rel(file));
    for (const e of graph.edges(file)) {
      if (!e.resolved || e.resolved.startsWith('..') || !e.resolved.startsWith(root + path.sep)) continue;
      const to = unitOf(rel(e.resolved));
      if (to === from) continue;
      let targets = out.get(from);
      if (!targets) out.set(from, (targets = new Map()));
      let samples = targets.get(to);
      if (!samples) targets.set(to, (samples = []));
      samples.push({ from: rel(file), line: e.line, to: rel(e.resolved), typeOnly: e.typeOnly });
    }
  }
  return out;
}

/** What a folder graph breaks against a layer order (lowest first; folders of one layer may import each other one way). */
export interface LayerFindings {
  /** `a → b` where `b` is in a higher layer than `a`. */
  upward: string[];
  /** `a ↔ b` (sorted by name) where each imports the other. */
  twoWay: string[];
  /** Parts that are in no layer. */
  unplaced: string[];
}

export function layerFindings(graph: Map<string, Map<string, FolderEdgeSample[]>>, layers: readonly (readonly string[])[]): LayerFindings {
  const rank = new Map<string, number>();
  layers.forEach((layer, i) => layer.forEach((u) => rank.set(u, i)));
  const upward: string[] = [];
  const twoWay = new Set<string>();
  const unplaced = new Set<string>();
  for (const [from, targets] of graph) {
    if (!rank.has(from)) unplaced.add(from);
    for (const to of targets.keys()) {
      if (!rank.has(to)) unplaced.add(to);
      if ((rank.get(to) ?? -1) > (rank.get(from) ?? Infinity)) upward.push(`${from} → ${to}`);
      if (graph.get(to)?.has(from)) twoWay.add([from, to].sort().join(' ↔ '));
    }
  }
  return { upward: upward.sort(), twoWay: [...twoWay].sort(), unplaced: [...unplaced].sort() };
}
