import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { ConfigError, loadConfig } from '../config/config';
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

/** Each migration, `[X]` when applied to the database at `url`, as the TypeORM CLI lists them. */
async function showMigrations(url: string): Promise<string> {
  const ds = new DataSource(dataSourceOptions(url, 1));
  await ds.initialize();
  try {
    const table = await ds.query(`SELECT to_regclass('migrations') AS t`);
    const rows: { name: string }[] = table[0].t ? await ds.query('SELECT name FROM migrations') : [];
    const applied = new Set(rows.map((r) => r.name));
    return ds.migrations.map((m) => `${applied.has(m.name!) ? '[X]' : '[ ]'} ${m.name}`).join('\n');
  } finally {
    await ds.destroy();
  }
}

/**
 * `npm run migration:run|show`: DATABASE_URL, or the embedded database when it is unset (the
 * service's own choice, so both commands and the service see the same database).
 */
async function main(command = 'run'): Promise<void> {
  if (command !== 'run' && command !== 'show')
    throw new ConfigError(`unknown command '${command}': use run or show`);
  const { config, stop } = await resolveDatabase(loadConfig());
  try {
    if (command === 'show') {
      console.log(await showMigrations(config.database.url!));
      return;
    }
    const applied = await runMigrations(config.database.url!);
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'no pending migrations');
  } finally {
    await stop();
  }
}

if (require.main === module) {
  main(process.argv[2]).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
