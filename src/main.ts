import 'reflect-metadata';
import { ConsoleLogger, Logger, LogLevel } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp, logLevels } from './app.factory';
import { ConfigError, loadConfig } from './config/config';
import { resolveDatabase } from './database/resolve-database';
import { GracefulShutdown } from './runs/graceful-shutdown';

/** Nest logs a failed boot with its stack, then rethrows it: main prints it once, one line for a ConfigError. */
class BootLogger extends ConsoleLogger {
  constructor(levels: LogLevel[]) {
    super({ logLevels: levels });
  }

  override error(message: unknown, ...rest: unknown[]): void {
    if (rest.at(-1) === 'ExceptionHandler') return;
    super.error(message, ...rest);
  }
}

async function bootstrap(): Promise<void> {
  const log = new Logger('Bootstrap');
  const initial = loadConfig();
  Logger.overrideLogger(new BootLogger(logLevels(initial.logLevel)));
  const { config, stop } = await resolveDatabase(initial);
  let app: NestFastifyApplication | undefined;
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    log.log(`${signal}: shutting down`);
    // Not ready, runs drained (or ended SHUTTING_DOWN and recorded), then the pool, and the (embedded) database last.
    const drained = app
      ? app
          .get(GracefulShutdown)
          .drainRuns()
          .then(() => app!.close())
      : Promise.resolve();
    void drained.then(stop).then(
      () => process.exit(0),
      (err: unknown) => {
        log.error(err instanceof Error ? err.message : String(err));
        process.exit(1);
      },
    );
  };
  // Before the app exists, so a signal during start-up still stops the embedded database.
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  try {
    app = await createApp(config);
    await app.listen(config.port, config.host);
  } catch (err) {
    await app?.close().catch(() => undefined);
    await stop();
    if ((err as { code?: string }).code === 'EADDRINUSE')
      throw new ConfigError(`port ${config.port} on ${config.host} is in use: set PORT to a free port`);
    throw err;
  }
  log.log(
    `io-bridge listening on http://${config.host}:${config.port}${config.prefix} (node ${process.version})`,
  );
}

bootstrap().catch((err: unknown) => {
  // A bad configuration is the operator's to fix: say exactly what, without a stack trace.
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
