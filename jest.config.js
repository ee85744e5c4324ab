/** Three projects: fast unit specs beside the code, static checks of files, e2e specs against real Postgres and HTTP. */
const ts = require('typescript');

/**
 * SWC compiles the tests with the class-field semantics `nest build` gives the shipped program: read
 * from tsconfig.build.json, where a target of ES2022 or later makes class fields own properties.
 */
function buildOptions() {
  const file = ts.readConfigFile(require.resolve('./tsconfig.build.json'), ts.sys.readFile);
  return ts.parseJsonConfigFileContent(file.config, ts.sys, __dirname).options;
}
const build = buildOptions();
const useDefineForClassFields =
  build.useDefineForClassFields ?? (build.target ?? ts.ScriptTarget.ES5) >= ts.ScriptTarget.ES2022;
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: {
        legacyDecorator: build.experimentalDecorators === true,
        decoratorMetadata: build.emitDecoratorMetadata === true,
        useDefineForClassFields,
      },
      target: ts.ScriptTarget[build.target].toLowerCase(),
      keepClassNames: true,
    },
    module: { type: 'commonjs' },
  },
];
const common = {
  rootDir: __dirname,
  testEnvironment: 'node',
  moduleFileExtensions: ['js', 'json', 'ts'],
  transform: { '^.+\\.ts$': swc },
  // .data/ holds the bench's baseline build, a whole checkout (bench/README.md, "Baseline guard"): not this project's modules.
  modulePathIgnorePatterns: ['<rootDir>/.data/'],
  // The client package from its source, as the playground's bundle takes it: no build of it first.
  // The conformance kit from its source too (it has no build), without needing its link in node_modules.
  moduleNameMapper: {
    '^@io-bridge/client$': '<rootDir>/packages/client/src/index.ts',
    '^@io-bridge/conformance$': '<rootDir>/packages/conformance/src/index.ts',
    '^@io-bridge/conformance/stream-rules$': '<rootDir>/packages/conformance/src/stream-rules.ts',
  },
};
module.exports = {
  testTimeout: 30000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    // Checks of files (the Kubernetes manifests): no database, no service.
    { ...common, displayName: 'static', testMatch: ['<rootDir>/test/**/*.static-spec.ts'] },
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts', '<rootDir>/packages/*/test/**/*.e2e-spec.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      setupFilesAfterEnv: ['<rootDir>/test/support/spec-database.ts'],
    },
  ],
};
