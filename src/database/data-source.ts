import 'reflect-metadata';
import { DataSource, DataSourceOptions } from 'typeorm';
import { migrations } from '../../migrations';
import { Run } from '../runs/run.entity';

export const entities = [Run];

/** The one set of options for the app, the migration script and the TypeORM CLI. */
export function dataSourceOptions(url: string, poolSize = 10): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities,
    migrations,
    migrationsTableName: 'migrations',
    synchronize: false,
    // Expected constraint violations (THREAD_BUSY, RUN_ALREADY_EXISTS) are mapped, not logged; the rest reach the error filter.
    logging: false,
    extra: { max: poolSize, application_name: 'io-bridge' },
  };
}

// The TypeORM CLI (`npm run migration:show|revert`) loads this default export; it needs DATABASE_URL.
export default new DataSource(
  dataSourceOptions(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/iobridge'),
);
