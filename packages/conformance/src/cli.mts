#!/usr/bin/env node
/**
 * `npm run conformance -- [options]`: runs the conformance kit (this package) against a backend and
 * prints its report. With --base, against that backend; without, against this service as users run it:
 * `nest build`, then `node dist/src/main.js` on a free port and a fresh database, stopped afterwards.
 * Exit code 1 only when a required check of the chosen levels fails (2: bad options).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';

// Node runs the kit's TypeScript as it is: a relative import without extension (as jest and tsc read the
// kit) or with `.js` (as tsc wants it here) loads the `.ts` file beside it.
registerHooks({
  resolve(specifier, context, next) {
    if (/^\.\.?\//.test(specifier) && /\.m?ts$/.test(context.parentURL ?? '')) {
      const ts = new URL(`${specifier.replace(/\.js$/, '')}.ts`, context.parentURL);
      if (!/\.[cm]?ts$/.test(specifier) && existsSync(ts))
        return { ...next(ts.href, context), format: 'module-typescript' };
    }
    return next(specifier, context);
  },
});
const { formatReport, runConformance } = await import('./kit.js');
const { parseLevels } = await import('./options.js');

// The io-bridge checkout this package sits in (packages/conformance/src): the service it builds and starts.
const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const USAGE = `Usage: npm run conformance -- [options]

  --base URL                 the backend's route prefix, e.g. http://host:3000/io-bridge
                             (without it: build this service, start it on a free port and a fresh database)
  --profile protocol|io-bridge
                             protocol (default): the protocol's four levels; io-bridge: also io-bridge's
                             own contract, reported apart as extensions
  --report text|json         the report's form on stdout (default text)
  --header 'Name: value'     sent with every request; repeatable (e.g. 'Authorization: Bearer …')
  --levels 1,2,3,4           the levels to check (also ranges: 1-3); default all
  --agent ID                 forwardedProps.agentId of every run; default the backend's default agent
  --prompt-text TEXT         a prompt the agent answers with text only
  --prompt-server-tool TEXT  a prompt that makes the agent call one of its server tools
  --prompt-frontend-tool TEXT
                             a prompt that makes the agent call the kit's frontend tool conformance_lookup
  --prompt-mixed TEXT        a prompt that makes it call a server tool and conformance_lookup in one step
  --prompt-approval TEXT     a prompt that makes it call a tool that needs approval (io-bridge profile)
  --timeout MS               per check (default 30000; raise it for a real model)
  --no-build                 without --base: use dist/ as it is

Exit code: 0 when every required check of the chosen levels passes, 1 when one fails, 2 for bad options.
`;

const { values: args } = (() => {
  try {
    return parseArgs({
      options: {
        base: { type: 'string' },
        profile: { type: 'string', default: 'protocol' },
        report: { type: 'string', default: 'text' },
        header: { type: 'string', multiple: true },
        levels: { type: 'string' },
        agent: { type: 'string' },
        'prompt-text': { type: 'string' },
        'prompt-server-tool': { type: 'string' },
        'prompt-frontend-tool': { type: 'string' },
        'prompt-mixed': { type: 'string' },
        'prompt-approval': { type: 'string' },
        timeout: { type: 'string' },
        'no-build': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
})();
if (args.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

const usageError = (message: string): never => {
  process.stderr.write(`${message}\n\n${USAGE}`);
  process.exit(2);
};
const levels = (() => {
  try {
    return args.levels === undefined ? undefined : parseLevels(args.levels);
  } catch (err) {
    return usageError(`--levels '${args.levels}': ${(err as Error).message}`);
  }
})();
const profile = args.profile;
if (profile !== 'protocol' && profile !== 'io-bridge')
  usageError(`--profile '${profile}': protocol or io-bridge`);
if (args.report !== 'text' && args.report !== 'json') usageError(`--report '${args.report}': text or json`);
const timeoutMs = args.timeout === undefined ? undefined : Number(args.timeout);
if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs > 0))
  usageError(`--timeout '${args.timeout}': a positive number of milliseconds`);

const headers: Record<string, string> = {};
for (const header of args.header ?? []) {
  const colon = header.indexOf(':');
  if (colon < 1) usageError(`--header '${header}' is not 'Name: value'`);
  headers[header.slice(0, colon).trim()] = header.slice(colon + 1).trim();
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.on('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

/** The local Postgres (TEST_PG_URL, else 127.0.0.1:5432) when it answers, as the e2e tests choose it. */
async function localPostgres(): Promise<string | undefined> {
  const url = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return url;
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function admin(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

const exitOf = (child: ChildProcess) =>
  new Promise<number>((done) => child.once('exit', (code, signal) => done(code ?? (signal ? 1 : 0))));

type Service = { base: string; log: string; stop: () => Promise<void> };

/** This service as users run it, on a free port and a database of its own. */
async function startService(): Promise<Service> {
  if (!args['no-build']) {
    const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 2, 2] });
    if (build.status !== 0) throw new Error('npm run build failed');
  }
  const cleanups: (() => Promise<void>)[] = [];
  const env: Record<string, string | undefined> = {
    ...process.env,
    HOST: '127.0.0.1',
    PORT: String(await freePort()),
    IO_BRIDGE_PREFIX: '/io-bridge',
    AUTH_MODE: 'none',
    MODEL: 'scripted',
    LOG_LEVEL: 'warn',
    DATABASE_URL: undefined,
  };
  const server = await localPostgres();
  if (server) {
    const database = `iobridge_conformance_${randomBytes(4).toString('hex')}`;
    await admin(server, `CREATE DATABASE ${database}`);
    cleanups.push(() => admin(server, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
    const url = new URL(server);
    url.pathname = `/${database}`;
    env.DATABASE_URL = url.toString();
    process.stderr.write(`conformance: database ${database} on ${url.host}\n`);
  } else {
    // No local server: the service starts its embedded Postgres, in a directory of its own.
    const dir = mkdtempSync(join(tmpdir(), 'io-bridge-conformance-pg-'));
    env.EMBEDDED_PG_DIR = dir;
    env.EMBEDDED_PG_PORT = String(await freePort());
    cleanups.push(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));
    process.stderr.write(`conformance: embedded Postgres in ${dir}\n`);
  }
  const log = join(mkdtempSync(join(tmpdir(), 'io-bridge-conformance-')), 'service.log');
  const out = openSync(log, 'a');
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'main.js')], {
    cwd: ROOT,
    env,
    stdio: ['ignore', out, out],
  });
  closeSync(out);
  const exited = exitOf(child);
  let running = true;
  void exited.then(() => (running = false));
  const stop = async () => {
    if (running) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  const origin = `http://127.0.0.1:${env.PORT}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (!running) {
      await stop();
      throw new Error(`the service exited before it was ready:\n${readFileSync(log, 'utf8')}`);
    }
    const ready = await fetch(`${origin}/health/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the service was not ready within 120 s:\n${readFileSync(log, 'utf8')}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  process.stderr.write(`conformance: node dist/src/main.js on ${origin} (log: ${log})\n`);
  return { base: `${origin}/io-bridge`, log, stop };
}

const service = args.base
  ? undefined
  : await startService().catch((err: Error) => {
      process.stderr.write(`conformance: ${err.message}\n`);
      process.exit(1);
    });
const base = args.base ?? service!.base;
const stopOnSignal = (signal: NodeJS.Signals) =>
  void (service?.stop() ?? Promise.resolve()).then(() => process.exit(signal === 'SIGINT' ? 130 : 143));
process.once('SIGINT', stopOnSignal);
process.once('SIGTERM', stopOnSignal);

const report = await runConformance(
  { base, headers },
  {
    ...(levels ? { levels } : {}),
    profile: profile as 'protocol' | 'io-bridge',
    ...(timeoutMs ? { timeoutMs } : {}),
    ...(args.agent ? { agentId: args.agent } : {}),
    prompts: {
      ...(args['prompt-text'] ? { text: args['prompt-text'] } : {}),
      ...(args['prompt-server-tool'] ? { serverTool: args['prompt-server-tool'] } : {}),
      ...(args['prompt-frontend-tool'] ? { frontendTool: args['prompt-frontend-tool'] } : {}),
      ...(args['prompt-mixed'] ? { mixed: args['prompt-mixed'] } : {}),
      ...(args['prompt-approval'] ? { approval: args['prompt-approval'] } : {}),
    },
  },
);
process.stdout.write(
  args.report === 'json' ? `${JSON.stringify(report, null, 2)}\n` : `${formatReport(report)}\n`,
);
if (service) {
  await service.stop();
  // The service's log is kept only when something failed.
  if (!report.ok) process.stderr.write(`conformance: the service's log is in ${service.log}\n`);
  else rmSync(dirname(service.log), { recursive: true, force: true });
}
process.exit(report.ok ? 0 : 1);
