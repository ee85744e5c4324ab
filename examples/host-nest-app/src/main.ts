import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module';

/**
 * A company's own Nest app on Fastify, serving io-bridge beside its routes: `/me` is the host's,
 * `/io-bridge/…` io-bridge's, both behind the host's EmployeeGuard.
 */
async function main(): Promise<void> {
  if (!process.env.DATABASE_URL) throw new Error('DATABASE_URL is required');
  // Histories of AG-UI clients can be large: the body limit io-bridge's MAX_BODY_BYTES defaults to.
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule,
    new FastifyAdapter({ bodyLimit: 4 * 1024 * 1024 }),
  );
  app.enableShutdownHooks();
  await app.listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? '127.0.0.1');
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
