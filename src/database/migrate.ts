import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { loadConfig } from '../config/config';
import { dataSourceOptions } from './data-source';
import { resolveDatabase } from './resolve-database';

/** Applies pending migrations to the database at `url`; returns the names applied. */
export async function runMigrations(url: string): Promise<string[]> {
  const ds = new DataSource(dataSourceOptions(url, 1));
  await ds.initialize();
  try {
    const applied = await ds.runMigrations({ transaction: 'each' });
    return applied.map((m) => m.name);
  } finally {
    await ds.destroy();
  }
}

/** `npm run migration:run`: DATABASE_URL, or the embedded database when it is unset. */
async function main(): Promise<void> {
  const { config, stop } = await resolveDatabase(loadConfig());
  try {
    const applied = await runMigrations(config.database.url!);
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'no pending migrations');
  } finally {
    await stop();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
