import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { loadConfig } from '../config/config';
import { dataSourceOptions } from './data-source';
import { resolveDatabase } from './resolve-database';

/** `npm run migration:run`: applies pending migrations on DATABASE_URL, or on the embedded database. */
async function main(): Promise<void> {
  const { config, stop } = await resolveDatabase(loadConfig());
  const ds = new DataSource(dataSourceOptions(config.database.url!));
  await ds.initialize();
  try {
    const applied = await ds.runMigrations({ transaction: 'each' });
    console.log(
      applied.length ? `applied: ${applied.map((m) => m.name).join(', ')}` : 'no pending migrations',
    );
  } finally {
    await ds.destroy();
    await stop();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
