import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres';
import { runMigrations } from '../../src/database/migrate';

/** The server to create the test database in: TEST_PG_URL, else the local one on 5432 when it answers. */
async function localServer(): Promise<string | undefined> {
  const url = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return url;
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Creates one fresh, migrated database for the whole e2e run, in a real Postgres (local or embedded):
 * the template each spec file's own database is copied from (spec-database.ts).
 */
export default async function globalSetup(): Promise<void> {
  let serverUrl = await localServer();
  if (!serverUrl) {
    const dir = mkdtempSync(join(tmpdir(), 'io-bridge-e2e-pg-'));
    const embedded = await startEmbeddedPostgres(dir, Number(process.env.TEST_EMBEDDED_PG_PORT ?? 54330));
    (globalThis as Record<string, unknown>).__EMBEDDED_PG__ = embedded;
    serverUrl = embedded.url.replace(/\/[^/]+$/, '/postgres');
  }
  const database = `iobridge_e2e_${randomBytes(4).toString('hex')}`;
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${database}`);
    await runMigrations(url.toString());
    // Only ever copied from: a spec connected to it by mistake would change every later copy.
    await admin.query(`ALTER DATABASE ${database} WITH ALLOW_CONNECTIONS false`);
  } finally {
    await admin.end();
  }
  process.env.E2E_DATABASE_URL = url.toString();
  process.env.E2E_ADMIN_URL = serverUrl;
  process.env.E2E_DATABASE_NAME = database;
}
