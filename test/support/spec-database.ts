import { randomBytes } from 'node:crypto';
import { basename } from 'node:path';
import { Client } from 'pg';

/**
 * Every e2e spec file gets a database of its own, copied from the migrated template global setup
 * made (E2E_DATABASE_URL names it during the file, for its services and for `db`). Specs may leave
 * live runs behind (a frozen database, a killed replica, a drain that hands its runs over), and any
 * service on the same database continues them (durable runs): shared, they disturbed later specs'
 * figures, as when ops.e2e counted a stranger's continued run among its active runs.
 */
const template = process.env.E2E_DATABASE_NAME!;
const shared = process.env.E2E_DATABASE_URL!;
const spec = basename(expect.getState().testPath ?? 'spec')
  .replace(/\.e2e-spec\.ts$/, '')
  .replace(/[^a-z0-9]+/gi, '_')
  .toLowerCase()
  .slice(0, 24);
const database = `${template}_${spec}_${randomBytes(2).toString('hex')}`;

async function admin(sql: string): Promise<void> {
  const client = new Client({ connectionString: process.env.E2E_ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  await admin(`CREATE DATABASE ${database} TEMPLATE ${template}`);
  const url = new URL(shared);
  url.pathname = `/${database}`;
  process.env.E2E_DATABASE_URL = url.toString();
});

afterAll(async () => {
  process.env.E2E_DATABASE_URL = shared;
  await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
});
