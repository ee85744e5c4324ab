// Writes dist/build-info.json after `nest build`: the package version and the commit built (the
// IO_BRIDGE_COMMIT build argument in the image, else `git rev-parse`, else none). The service reports
// them in the io_bridge_build_info metric.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
let commit = process.env.IO_BRIDGE_COMMIT ?? '';
if (!commit) {
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    commit = '';
  }
}
writeFileSync('dist/build-info.json', `${JSON.stringify({ version, commit: commit || undefined })}\n`);
