import 'reflect-metadata';
import type { Client } from 'pg';
import { AfterQueryEvent, DataSource, DataSourceOptions, EntitySubscriberInterface } from 'typeorm';
import type { PostgresQueryRunner } from 'typeorm/driver/postgres/PostgresQueryRunner';
import { migrations } from '../../migrations';
import type { DatabaseTimeouts } from '../config/config';
import { isQueryTimeout } from './database-errors';

/**
 * A connection whose query got no answer in time still has that query in flight: ended here, so
 * the pool drops it instead of handing it to the next caller to wait behind (TypeORM releases it
 * without the error, which is what would tell the pool; pool.query does that on its own).
 */
export class DiscardTimedOutConnections implements EntitySubscriberInterface {
  async afterQuery(event: AfterQueryEvent): Promise<void> {
    if (event.success || !isQueryTimeout(event.error)) return;
    // TypeORM awaits this before releasing the connection, so the pool sees it ending and drops it.
    const client = (await (event.queryRunner as PostgresQueryRunner).connect()) as Client;
    void client.end().catch(() => undefined);
  }
}

/**
 * No JIT compilation in the service's sessions (docs/operations.md#the-database-sessions): Postgres
 * compiles a statement whose plan costs more than `jit_above_cost` before running it, which took
 * 60–130 ms for a run's claim or end once the memory tables made its plan look large; every
 * statement of the service runs in milliseconds, so compiling one never pays.
 */
const NO_JIT = '-c jit=off';

/**
 * The sessions' startup options: no JIT, then libpq's `PGOPTIONS` when the environment sets it (pg
 * reads that variable only when given no options of its own, so it is kept here; given after, what
 * it sets wins).
 */
const sessionOptions = (): string => [NO_JIT, process.env.PGOPTIONS].filter(Boolean).join(' ');

/**
 * The one set of options for the app, the migration script and the TypeORM CLI. With `timeouts`
 * (the app), no call waits on a database that is down or frozen longer than they allow; without
 * (migrations), a long migration is not cut short.
 */
export function dataSourceOptions(
  url: string,
  poolSize = 10,
  timeouts?: DatabaseTimeouts,
): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    // Entities come from the features' TypeOrmModule.forFeature (autoLoadEntities); migrations are plain SQL.
    entities: [],
    migrations,
    migrationsTableName: 'migrations',
    synchronize: false,
    // Expected constraint violations (THREAD_BUSY, RUN_ALREADY_EXISTS) are mapped, not logged; the rest reach the error filter.
    logging: false,
    subscribers: timeouts ? [DiscardTimedOutConnections] : [],
    extra: {
      max: poolSize,
      application_name: 'io-bridge',
      ...pgSession(timeouts),
    },
  };
}

/**
 * The pg client settings of every session the app opens (pool, leases, LISTEN, migrations): no JIT,
 * and `timeouts` when given (the migrations run without).
 */
export function pgSession(timeouts?: DatabaseTimeouts) {
  return {
    options: sessionOptions(),
    ...(timeouts && {
      // Also bounds the wait for a free pooled connection (pg-pool), so a starved pool fails too.
      connectionTimeoutMillis: timeouts.connectMs,
      statement_timeout: timeouts.statementMs,
      query_timeout: timeouts.queryMs,
      idle_in_transaction_session_timeout: timeouts.idleInTransactionMs,
      // A dead peer (host gone, cable cut) is noticed by the kernel, not only by the next query.
      keepAlive: true,
    }),
  };
}

// The TypeORM CLI (`npm run migration:show|revert`) loads this default export; it needs DATABASE_URL.
export default new DataSource(
  dataSourceOptions(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/iobridge'),
);
