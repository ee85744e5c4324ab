import { AppConfig } from '../config/config';
import { startEmbeddedPostgres } from './embedded-postgres';

export type ResolvedDatabase = { config: AppConfig; stop: () => Promise<void> };

/** `DATABASE_URL` when set; otherwise starts the embedded Postgres and points the config at it. */
export async function resolveDatabase(config: AppConfig): Promise<ResolvedDatabase> {
  if (config.database.url) return { config, stop: async () => {} };
  const db = await startEmbeddedPostgres(config.database.embeddedDir, config.database.embeddedPort);
  return { config: { ...config, database: { ...config.database, url: db.url } }, stop: db.stop };
}
