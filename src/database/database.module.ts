import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { dataSourceOptions } from './data-source';
import { PgNotifications } from './pg-notifications.service';

/** TypeORM on the database the bootstrap resolved (`DATABASE_URL` or the embedded one), and LISTEN/NOTIFY. */
@Global()
@Module({
  providers: [PgNotifications],
  exports: [PgNotifications],
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => {
        if (!config.database.url) throw new Error('database.url must be resolved before the app is created');
        return {
          ...dataSourceOptions(config.database.url, config.database.poolSize),
          migrationsRun: config.database.migrationsRun,
          retryAttempts: 2,
        };
      },
    }),
  ],
})
export class DatabaseModule {}
