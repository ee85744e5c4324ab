import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SUPPORTED_MASTRA_MAJOR } from './mastra-project';

describe('the @mastra/core versions io-bridge serves', () => {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
    peerDependencies?: Record<string, string>;
    dependencies?: Record<string, string>;
  };

  it('are the peer dependency’s, the major start-up accepts', () => {
    const range = pkg.peerDependencies?.['@mastra/core'];
    expect(range).toMatch(/^\^\d+\.\d+\.\d+$/);
    expect(Number(range!.slice(1).split('.')[0])).toBe(SUPPORTED_MASTRA_MAJOR);
  });

  it('hold the copy the standalone service installs', () => {
    expect(pkg.dependencies?.['@mastra/core']).toBe(pkg.peerDependencies?.['@mastra/core']);
  });
});
