import { Client } from 'pg';

export default async function globalTeardown(): Promise<void> {
  const admin = new Client({ connectionString: process.env.E2E_ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${process.env.E2E_DATABASE_NAME} WITH (FORCE)`);
  await admin.end();
  const embedded = (globalThis as Record<string, unknown>).__EMBEDDED_PG__ as
    { stop: () => Promise<void> } | undefined;
  await embedded?.stop();
}
