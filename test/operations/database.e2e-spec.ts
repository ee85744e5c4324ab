import { Client } from 'pg';
import { migrations } from '../../migrations';
import { runMigrations } from '../../src/database/migrate';
import { startApp } from '../support/app';
import { postRun, runInput } from '../support/sse';

const created: string[] = [];

/** A database of its own, so this file can watch migrations happen. */
async function freshDatabase(): Promise<string> {
  const name = `iobridge_mig_${Date.now().toString(36)}_${created.length}`;
  created.push(name);
  const admin = new Client({ connectionString: process.env.E2E_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(process.env.E2E_ADMIN_URL!);
  url.pathname = `/${name}`;
  return url.toString();
}

async function tableExists(url: string, table: string): Promise<boolean> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table]);
    return rows[0].t !== null;
  } finally {
    await client.end();
  }
}

describe('migrations', () => {
  afterAll(async () => {
    const admin = new Client({ connectionString: process.env.E2E_ADMIN_URL });
    await admin.connect();
    for (const name of created) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  it('run at start-up by default; synchronize never creates tables', async () => {
    const url = await freshDatabase();
    const t = await startApp({ DATABASE_URL: url });
    try {
      expect(await tableExists(url, 'runs')).toBe(true);
      expect(await tableExists(url, 'migrations')).toBe(true);
    } finally {
      await t.close();
    }
  });

  it('with MIGRATIONS_RUN=false are left to the migration command, which applies each once', async () => {
    const url = await freshDatabase();
    const t = await startApp({ DATABASE_URL: url, MIGRATIONS_RUN: 'false' });
    try {
      expect(await tableExists(url, 'runs')).toBe(false);
      expect(await runMigrations(url)).toEqual(migrations.map((m) => m.name));
      expect(await runMigrations(url)).toEqual([]);
      expect(await tableExists(url, 'runs')).toBe(true);
      const res = await postRun(t.runUrl, runInput('hi'));
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('RUN_FINISHED');
    } finally {
      await t.close();
    }
  });
});
