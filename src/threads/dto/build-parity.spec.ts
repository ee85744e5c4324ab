import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import * as ts from 'typescript';
import { CreateThreadDto } from './thread.dto';

/** The options `nest build` compiles the shipped program with. */
function buildCompilerOptions(): ts.CompilerOptions {
  const root = join(__dirname, '..', '..', '..');
  const file = ts.readConfigFile(join(root, 'tsconfig.build.json'), (path) => ts.sys.readFile(path));
  return ts.parseJsonConfigFileContent(file.config, ts.sys, root).options;
}

/** Evaluates `expression` as `nest build` compiles it. */
function underBuild(expression: string): unknown {
  const { outputText } = ts.transpileModule(expression, {
    compilerOptions: { ...buildCompilerOptions(), module: ts.ModuleKind.CommonJS, sourceMap: false },
  });
  return runInNewContext(outputText);
}

describe('tests compile as the shipped build does', () => {
  it('a declared class field is an own property under jest exactly when it is under nest build', () => {
    class Probe {
      field?: string;
    }
    const shipped = underBuild('class Probe { field?: string }; Object.hasOwn(new Probe(), "field");');
    expect(Object.hasOwn(new Probe(), 'field')).toBe(shipped);
  });

  it('an unset DTO field is an own undefined property, as the validation pipe hands it to a service', () => {
    // The shape that made POST /threads {} a 500: `{id, ...dto}` overwrote the id with undefined.
    const dto = Object.assign(new CreateThreadDto(), { title: 'x' });
    expect(Object.hasOwn(dto, 'id')).toBe(true);
    expect(dto.id).toBeUndefined();
  });
});
