import type { Pool } from 'pg';
import { DataSource, QueryFailedError } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

/**
 * Runs `text` as a named prepared statement on TypeORM's pg pool: each connection plans it once,
 * not on every call. For the statements of every run (claim, end), where planning a multi-CTE
 * statement costs Postgres as much as running it. A failure is a TypeORM `QueryFailedError`, as
 * from `DataSource.query`, so callers map constraint violations the same way.
 */
export async function queryPrepared<T>(
  db: DataSource,
  name: string,
  text: string,
  values: unknown[],
): Promise<T[]> {
  const pool = (db.driver as PostgresDriver).master as Pool;
  try {
    return (await pool.query<T & object>({ name, text, values })).rows;
  } catch (err) {
    throw err instanceof Error && 'code' in err ? new QueryFailedError(text, values, err) : err;
  }
}
