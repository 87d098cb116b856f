// Lists the exported names no other file uses (`npx tsx scripts/dead-exports.ts`), so that an export
// says "someone outside needs this": tests, benchmarks and scripts count as users. An export that only
// its own file uses should not be one; one nobody uses is dead code. Exits 1 when it finds any.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..');
/**
 * Files whose exports are used by something other than an import: the package's public export
 * (package.json `exports`), the workflow bundle's entry and interceptors (src/temporal/workflow-bundle.ts),
 * responder modules loaded by path (RESPONDER_MODULE), mocha's root hooks and reporter.
 */
const ENTRY_POINTS = [
  /^src\/bot\.ts$/,
  /^workflows\/index\.ts$/,
  /^workflows\/otel-interceptors\.ts$/,
  /^examples\//,
  /^test\/bots\//,
  /^test\/(.*\/)?hooks\.ts$/,
  /^scripts\/file-timing-reporter\.ts$/,
];

const { options } = ts.parseJsonConfigFileContent(
  ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), ts.sys.readFile).config,
  ts.sys,
  ROOT,
);
const files = execFileSync('git', ['ls-files', '*.ts', '*.js', '*.mjs'], { cwd: ROOT, encoding: 'utf8' })
  .split('\n')
  .filter((f) => f && !f.endsWith('.d.ts'));
const known = new Set(files);

/** The project file a module specifier in `from` names, if it names one. */
function resolve(specifier: string, from: string): string | undefined {
  const resolved = ts.resolveModuleName(specifier, path.join(ROOT, from), options, ts.sys).resolvedModule;
  const file = resolved && path.relative(ROOT, resolved.resolvedFileName);
  if (file && known.has(file)) return file;
  // A `.ts` named with its extension (bin/replyflow.js requires ../src/cli/main.ts).
  const direct = path.relative(ROOT, path.resolve(ROOT, path.dirname(from), specifier));
  return known.has(direct) ? direct : undefined;
}

/** Type-only exports (interfaces, type aliases), counted apart: they cost nothing at run time. */
const typeNames = new Set<string>();

/** What `file` exports, by name (`default` for a default export). */
function exportsOf(source: ts.SourceFile): string[] {
  const names: string[] = [];
  for (const statement of source.statements)
    if ((ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) && statement.name)
      typeNames.add(`${source.fileName}:${statement.name.text}`);
  for (const statement of source.statements) {
    const modifiers = ts.canHaveModifiers(statement) ? ts.getModifiers(statement) : undefined;
    const exported = modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
    const isDefault = modifiers?.some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);
    if (exported && isDefault) names.push('default');
    else if (exported && ts.isVariableStatement(statement)) {
      for (const d of statement.declarationList.declarations)
        if (ts.isIdentifier(d.name)) names.push(d.name.text);
    } else if (
      exported &&
      'name' in statement &&
      statement.name &&
      ts.isIdentifier(statement.name as ts.Node)
    )
      names.push((statement.name as ts.Identifier).text);
    else if (
      ts.isExportDeclaration(statement) &&
      statement.exportClause &&
      ts.isNamedExports(statement.exportClause)
    )
      for (const e of statement.exportClause.elements) names.push(e.name.text);
    else if (ts.isExportAssignment(statement)) names.push('default');
  }
  return names;
}

/** `file:name` for every export that another file imports; `file:*` when one takes them all. */
function usesIn(source: ts.SourceFile, file: string, used: Set<string>): void {
  const take = (specifier: string, names: string[] | '*'): void => {
    const target = resolve(specifier, file);
    if (!target || target === file) return;
    for (const name of names === '*' ? ['*'] : names) used.add(`${target}:${name}`);
  };
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      const specifier = (node.moduleSpecifier as ts.StringLiteral).text;
      if (ts.isImportDeclaration(node)) {
        const clause = node.importClause;
        if (!clause) take(specifier, []);
        else {
          if (clause.name) take(specifier, ['default']);
          const bindings = clause.namedBindings;
          if (bindings && ts.isNamespaceImport(bindings)) take(specifier, '*');
          if (bindings && ts.isNamedImports(bindings))
            take(
              specifier,
              bindings.elements.map((e) => (e.propertyName ?? e.name).text),
            );
        }
      } else if (!node.exportClause || !ts.isNamedExports(node.exportClause)) take(specifier, '*');
      else
        take(
          specifier,
          node.exportClause.elements.map((e) => (e.propertyName ?? e.name).text),
        );
    }
    // require('…'), import('…') and `typeof import('…')`: the whole module.
    if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === 'require')) &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    )
      take(node.arguments[0].text, '*');
    if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    )
      take(node.argument.literal.text, '*');
    ts.forEachChild(node, visit);
  };
  visit(source);
}

const sources = new Map(
  files.map((f) => [
    f,
    ts.createSourceFile(f, readFileSync(path.join(ROOT, f), 'utf8'), ts.ScriptTarget.Latest, true),
  ]),
);
const used = new Set<string>();
for (const [file, source] of sources) usesIn(source, file, used);

const dead: string[] = [];
let total = 0;
let deadTypes = 0;
for (const [file, source] of sources) {
  if (!file.endsWith('.ts') || ENTRY_POINTS.some((entry) => entry.test(file))) continue;
  for (const name of exportsOf(source)) {
    total++;
    if (used.has(`${file}:${name}`) || used.has(`${file}:*`)) continue;
    dead.push(`${file}: ${name}`);
    if (typeNames.has(`${file}:${name}`)) deadTypes++;
  }
}
for (const line of dead) console.log(line);
console.log(
  `${dead.length} of ${total} exported names are used by no other file (${deadTypes} of them types, ${dead.length - deadTypes} values)`,
);
process.exitCode = dead.length > 0 ? 1 : 0;
