import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SUPPORTED_MASTRA } from './mastra-project';

describe('the @mastra/core versions io-bridge serves', () => {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
    peerDependencies?: Record<string, string>;
    dependencies?: Record<string, string>;
  };

  it('are the peer dependency’s, the range start-up accepts', () => {
    expect(pkg.peerDependencies?.['@mastra/core']).toBe(SUPPORTED_MASTRA);
  });

  it('hold the copy the standalone service installs', () => {
    expect(pkg.dependencies?.['@mastra/core']).toBe(pkg.peerDependencies?.['@mastra/core']);
  });
});
