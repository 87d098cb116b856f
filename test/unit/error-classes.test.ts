// Errors have one home per folder and say what they are: every Error subclass in the tree is declared
// in that folder's errors.ts, its name ends in `Error` (local) or `Failure` (crosses Temporal), and it
// names itself the one way (`override name = '<its class name>'`), so that the name in a log or an
// ApplicationFailure's type is the class a reader can find.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '../..');
/** A base that makes a class an error: `Error` itself, a library's `…Error`, or `ApplicationFailure`. */
const ERROR_BASE = /(^|\.)([A-Za-z]*Error|[A-Za-z]*Failure)$/;

interface ErrorClass {
  file: string;
  name: string;
  base: string;
  /** The string of `override name = '…'`, when the class sets it that way. */
  nameField?: string;
  /** Whether a constructor assigns `this.name` (the other style). */
  assignsName: boolean;
}

/** The classes each file declares with an `extends` clause. */
function classesIn(file: string, text: string): ErrorClass[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: ErrorClass[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isClassDeclaration(node) || ts.isClassExpression(node)) && node.name) {
      const base = node.heritageClauses
        ?.find((h) => h.token === ts.SyntaxKind.ExtendsKeyword)
        ?.types[0]?.expression.getText(source);
      if (base) {
        let nameField: string | undefined;
        for (const member of node.members) {
          if (
            ts.isPropertyDeclaration(member) &&
            member.name.getText(source) === 'name' &&
            member.initializer &&
            ts.isStringLiteral(member.initializer)
          )
            nameField = member.initializer.text;
        }
        const assignsName = /\bthis\.name\s*=/.test(node.getText(source));
        found.push({ file, name: node.name.text, base, nameField, assignsName });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** What is wrong with the error classes among `classes` (a class extending one of them is one too). */
function errorClassProblems(classes: ErrorClass[]): string[] {
  const errorNames = new Set<string>();
  let grew = true;
  while (grew) {
    grew = false;
    for (const c of classes) {
      if (errorNames.has(c.name)) continue;
      if (ERROR_BASE.test(c.base) || errorNames.has(c.base)) {
        errorNames.add(c.name);
        grew = true;
      }
    }
  }
  const problems: string[] = [];
  for (const c of classes.filter((k) => errorNames.has(k.name))) {
    const where = `${c.file}: ${c.name}`;
    if (path.basename(c.file) !== 'errors.ts') problems.push(`${where} is declared outside an errors.ts`);
    if (!/(Error|Failure)$/.test(c.name)) problems.push(`${where} does not end in Error or Failure`);
    if (c.nameField !== c.name) problems.push(`${where} does not set override name = '${c.name}'`);
    if (c.assignsName) problems.push(`${where} assigns this.name (set it as a field)`);
  }
  return problems;
}

describe('error classes', () => {
  it('are each declared in their folder’s errors.ts, named …Error or …Failure, naming themselves as a field', () => {
    const files = execFileSync('git', ['ls-files', '*.ts'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f && !f.endsWith('.d.ts'));
    const classes = files.flatMap((f) => classesIn(f, readFileSync(path.join(ROOT, f), 'utf8')));
    assert.deepEqual(errorClassProblems(classes), []);
  });

  it('finds a misplaced, misnamed or differently built error class (the check above can fail)', () => {
    const outside = classesIn(
      'src/x/thing.ts',
      "export class Thing extends Error { override name = 'Thing'; }",
    );
    const subclass = classesIn(
      'src/x/errors.ts',
      'class Sub extends BaseError {}\nclass BaseError extends Error {}',
    );
    const assigned = classesIn(
      'src/x/errors.ts',
      "class OtherError extends Error { constructor() { super('x'); this.name = 'OtherError'; } }",
    );
    assert.deepEqual(errorClassProblems([...outside, ...subclass, ...assigned]), [
      'src/x/thing.ts: Thing is declared outside an errors.ts',
      'src/x/thing.ts: Thing does not end in Error or Failure',
      'src/x/errors.ts: Sub does not end in Error or Failure',
      "src/x/errors.ts: Sub does not set override name = 'Sub'",
      "src/x/errors.ts: BaseError does not set override name = 'BaseError'",
      "src/x/errors.ts: OtherError does not set override name = 'OtherError'",
      'src/x/errors.ts: OtherError assigns this.name (set it as a field)',
    ]);
  });
});
