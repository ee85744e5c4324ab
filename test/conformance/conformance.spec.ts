import { optionsFromEnv } from './options';
import { defineConformanceSuite } from './suite';

// Run through `npm run conformance` (test/conformance/cli.mts), which sets CONFORMANCE_* for this project.
const { target, options } = optionsFromEnv();

describe(`io.Intelligence Agent Protocol conformance of ${target.base}`, () => {
  defineConformanceSuite(() => target, options);
});
