import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { dataSourceOptions } from './data-source';
import { runMigrations } from './migrate';
import { LeaseConnection } from './lease-connection';
import { PgNotifications } from './pg-notifications.service';

/** TypeORM on the database the bootstrap resolved (`DATABASE_URL` or the embedded one), LISTEN/NOTIFY, and the leases' connection. */
@Global()
@Module({
  providers: [PgNotifications, LeaseConnection],
  exports: [PgNotifications, LeaseConnection],
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: async (config: AppConfig) => {
        if (!config.database.url) throw new Error('database.url must be resolved before the app is created');
        // Through the migration command's own connection: the app's statement timeout must not cut a migration short.
        if (config.database.migrationsRun) await runMigrations(config.database.url);
        return {
          ...dataSourceOptions(config.database.url, config.database.poolSize, config.database.timeouts),
          autoLoadEntities: true,
          retryAttempts: 2,
        };
      },
    }),
  ],
})
export class DatabaseModule {}
