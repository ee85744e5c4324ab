import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { createApp, logLevels } from './app.factory';
import { ConfigError, loadConfig } from './config/config';
import { resolveDatabase } from './database/resolve-database';
import { GracefulShutdown } from './runs/graceful-shutdown';

async function bootstrap(): Promise<void> {
  const log = new Logger('Bootstrap');
  const initial = loadConfig();
  Logger.overrideLogger(logLevels(initial.logLevel));
  const { config, stop } = await resolveDatabase(initial);
  const app = await createApp(config);
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    log.log(`${signal}: shutting down`);
    // Not ready, runs drained (or ended SHUTTING_DOWN and recorded), then the pool and the database.
    void app
      .get(GracefulShutdown)
      .drainRuns()
      .then(() => app.close())
      .then(stop)
      .then(
        () => process.exit(0),
        (err: unknown) => {
          log.error(err instanceof Error ? err.message : String(err));
          process.exit(1);
        },
      );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  await app.listen(config.port, config.host);
  log.log(
    `io-bridge listening on http://${config.host}:${config.port}${config.prefix} (node ${process.version})`,
  );
}

bootstrap().catch((err: unknown) => {
  // A bad configuration is the operator's to fix: say exactly what, without a stack trace.
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
