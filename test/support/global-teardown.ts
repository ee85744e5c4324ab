import { Client } from 'pg';

export default async function globalTeardown(): Promise<void> {
  const admin = new Client({ connectionString: process.env.E2E_ADMIN_URL });
  await admin.connect();
  // The template and whatever copies of it a spec that crashed left behind.
  const { rows } = await admin.query<{ datname: string }>(
    `SELECT datname FROM pg_database WHERE datname = $1 OR starts_with(datname, $1 || '_')`,
    [process.env.E2E_DATABASE_NAME],
  );
  for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  await admin.end();
  const embedded = (globalThis as Record<string, unknown>).__EMBEDDED_PG__ as
    { stop: () => Promise<void> } | undefined;
  await embedded?.stop();
}
