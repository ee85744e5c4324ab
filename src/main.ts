import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { ConsoleLogger, Logger, LogLevel } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp, logLevels } from './app.factory';
import { ConfigError, loadConfig } from './config/config';
import { resolveDatabase } from './database/resolve-database';
import { GracefulShutdown } from './runs/graceful-shutdown';
import { databaseStartupProblem } from './ops/startup-errors';
import { buildInfo } from './common/build-info';

/** Nest's per-module chatter, which a boot that fails replays from its buffer. */
const BOOT_CHATTER = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer']);

/** Nest logs a failed boot with its stack, then rethrows it: main prints it once, one line for a ConfigError. */
class BootLogger extends ConsoleLogger {
  constructor(levels: LogLevel[]) {
    super({ logLevels: levels });
  }

  override log(message: unknown, ...rest: unknown[]): void {
    if (BOOT_CHATTER.has(String(rest.at(-1)))) return;
    super.log(message, ...rest);
  }

  override error(message: unknown, ...rest: unknown[]): void {
    if (rest.at(-1) === 'ExceptionHandler') return;
    super.error(message, ...rest);
  }
}

/**
 * `.env` of the working directory, when there is one: variables already in the environment win.
 * Not under the test suite (NODE_ENV=test), whose settings a developer's `.env` must not change.
 */
function loadDotEnv(): void {
  if (process.env.NODE_ENV === 'test') return;
  try {
    process.loadEnvFile('.env');
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT')
      throw new ConfigError(`.env: ${(err as Error).message}`);
  }
}

async function bootstrap(): Promise<void> {
  const log = new Logger('Bootstrap');
  loadDotEnv();
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
          // SIGTERM (a rollout, a node drain) hands runs over to the other replicas; Ctrl-C lets them finish.
          .drainRuns(signal === 'SIGTERM')
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
    const database = databaseStartupProblem(err, config.database.url);
    throw database ? new ConfigError(`Cannot start: ${database}`) : err;
  }
  log.log(startupLine(app, config.prefix));
}

/** The listening line: the pages a person opens and the API's agent list, each a URL that answers. */
function startupLine(app: NestFastifyApplication, prefix: string): string {
  const fastify = app.getHttpAdapter().getInstance();
  const address = app.getHttpServer().address() as AddressInfo;
  // Every interface: the local one is the address to open here.
  const host = ['0.0.0.0', '::'].includes(address.address)
    ? 'localhost'
    : address.family === 'IPv6'
      ? `[${address.address}]`
      : address.address;
  const origin = `http://${host}:${address.port}`;
  const urls = [
    ...(fastify.hasRoute({ method: 'GET', url: '/playground' }) ? [`playground ${origin}/playground`] : []),
    `docs ${origin}/docs`,
    `API ${origin}${prefix}/agents`,
  ];
  return `io-bridge ${buildInfo().version} listening on ${origin} (node ${process.version}): ${urls.join(', ')}`;
}

bootstrap().catch((err: unknown) => {
  // A bad configuration is the operator's to fix: say exactly what, without a stack trace.
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
