/**
 * Bundles the playground into dist/playground (run by `npm run build` after `nest build`): one script
 * and one stylesheet named by content hash, their gzip and brotli copies, and the page that names them.
 */
import { build } from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const here = dirname(new URL(import.meta.url).pathname);
const out = join(here, '..', 'dist', 'playground');
mkdirSync(out, { recursive: true });

const result = await build({
  entryPoints: { app: join(here, 'main.ts') },
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  sourcemap: false,
  legalComments: 'none',
  entryNames: '[name]-[hash]',
  outdir: out,
  metafile: true,
  logLevel: 'warning',
  // The client from its source, as the tests take it.
  alias: { '@io-bridge/client': join(here, '..', 'packages', 'client', 'src', 'index.ts') },
});

const outputs = Object.keys(result.metafile.outputs).map((file) => basename(file));
const js = outputs.find((f) => f.endsWith('.js'));
const css = outputs.find((f) => f.endsWith('.css'));
if (!js || !css) throw new Error(`the bundle lacks a script or a stylesheet: ${outputs.join(', ')}`);
const page = readFileSync(join(here, 'index.html'), 'utf8').replace('%JS%', js).replace('%CSS%', css);
writeFileSync(join(out, 'index.html'), page);

// The page is served with the route prefix written in (src/playground), so only the assets are compressed.
const size = { br: Buffer.byteLength(page), gzip: Buffer.byteLength(page) };
for (const file of [js, css]) {
  const bytes = readFileSync(join(out, file));
  const br = brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } });
  const gz = gzipSync(bytes, { level: 9 });
  writeFileSync(join(out, `${file}.br`), br);
  writeFileSync(join(out, `${file}.gz`), gz);
  size.br += br.length;
  size.gzip += gz.length;
}
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
console.log(`playground: ${js}, ${css}; first load ${kb(size.br)} with brotli, ${kb(size.gzip)} with gzip`);
