// `npm run check` (and `node scripts/check-sizes.mts [root]`): no source file of src/ grows past
// what a reader takes in at once, and no Nest provider or controller takes more collaborators than
// it can explain (docs/architecture.md#sizes). Prints one line per offender and exits 1 when there
// is one.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';

/** Past this a file holds more than one job: split it, each part named for what it holds. */
export const MAX_FILE_LINES = 350;
/** Past this a class does too much, or its collaborators want grouping behind one of them. */
export const MAX_CONSTRUCTOR_PARAMETERS = 10;

/** The decorators that make a class something Nest constructs with injected parameters. */
const NEST_CLASSES = new Set(['Injectable', 'Controller']);

/** The `.ts` files under `src/` (relative to `root`), specs aside: what ships. */
function sources(root: string): string[] {
  const found: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(join(root, at)).sort()) {
      const path = join(at, entry);
      if (statSync(join(root, path)).isDirectory()) walk(path);
      else if (entry.endsWith('.ts') && !entry.endsWith('.spec.ts') && !entry.endsWith('.d.ts'))
        found.push(path);
    }
  };
  if (existsSync(join(root, 'src'))) walk('src');
  return found;
}

/** Lines as an editor numbers them: a final newline does not start another. */
function lineCount(text: string): number {
  return text === '' ? 0 : text.replace(/\n$/, '').split('\n').length;
}

/** The name a decorator calls (`@Injectable()`, `@Controller('runs')`), or undefined. */
function decoratorName(decorator: ts.Decorator): string | undefined {
  const call = decorator.expression;
  const callee = ts.isCallExpression(call) ? call.expression : call;
  if (ts.isIdentifier(callee)) return callee.text;
  // `@common.Injectable()`, should a file import the namespace.
  return ts.isPropertyAccessExpression(callee) ? callee.name.text : undefined;
}

/** Each Nest provider or controller class of a source file whose constructor takes too many parameters. */
function constructorProblems(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const problems: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isClassLike(node) && ts.canHaveDecorators(node)) {
      const nest = (ts.getDecorators(node) ?? []).some((d) => NEST_CLASSES.has(decoratorName(d) ?? ''));
      // The implementation's parameters, not an overload's: they are what Nest injects.
      const constructor = node.members.find(
        (member): member is ts.ConstructorDeclaration =>
          ts.isConstructorDeclaration(member) && member.body !== undefined,
      );
      const count = constructor?.parameters.length ?? 0;
      if (nest && constructor && count > MAX_CONSTRUCTOR_PARAMETERS) {
        const line = source.getLineAndCharacterOfPosition(constructor.getStart(source)).line + 1;
        const name = node.name?.text ?? 'an anonymous class';
        problems.push(
          `${file}:${line}: ${name}'s constructor takes ${count} parameters, more than ${MAX_CONSTRUCTOR_PARAMETERS}: group the collaborators that serve one job behind one provider`,
        );
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return problems;
}

/** Every offender under `root`'s src/, one sentence each. */
export function sizeProblems(root: string): string[] {
  const problems: string[] = [];
  for (const file of sources(root)) {
    const text = readFileSync(join(root, file), 'utf8');
    const lines = lineCount(text);
    if (lines > MAX_FILE_LINES)
      problems.push(
        `${file}: ${lines} lines, more than ${MAX_FILE_LINES}: split it by job, each part named for what it holds`,
      );
    problems.push(...constructorProblems(file, text));
  }
  return problems;
}

if (import.meta.main) {
  const root = resolve(process.argv[2] ?? join(import.meta.dirname, '..'));
  const problems = sizeProblems(root);
  for (const problem of problems) console.error(problem);
  if (problems.length) process.exit(1);
  console.log(
    `sizes: every source file of src/ within ${MAX_FILE_LINES} lines, every provider and controller constructor within ${MAX_CONSTRUCTOR_PARAMETERS} parameters`,
  );
}
