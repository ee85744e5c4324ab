import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import helmet from 'helmet';
import { Logger as PinoNestLogger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { LogDestination, quietStartup } from './ops/logging';
import { DomainErrorFilter } from './common/error.filter';
import { bodyLimitsOf } from './common/body-limits';
import { boundedJsonParser } from './common/json-body-parser';
import { clientErrorHandler, frameworkErrors } from './common/http-errors';
import { AppConfig } from './config/config';
import { openApiDocument, serveDocsPage, swaggerUiOptions } from './openapi/document';
import { startTracing, traceRequests, tracingOn } from './ops/tracing';
import { servePlayground } from './playground/playground';

const LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];

/** The configured level and every level above it. */
export const logLevels = (level: LogLevel): LogLevel[] => LEVELS.slice(0, LEVELS.indexOf(level) + 1);

/** Request headers a browser client sends: the AG-UI and io.Assist clients, and @mastra/client-js's own. */
export const CORS_ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Accept',
  'X-Resource-Id',
  'Last-Event-ID',
  'X-Request-Id',
  'X-Mastra-Client-Type',
];
/** Response headers a browser client may read: the request id, and the back-off of 429 and 503. */
export const CORS_EXPOSED_HEADERS = [
  'X-Request-Id',
  'Retry-After',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
];

/**
 * CORS for `CORS_ORIGINS`. Never with credentials: clients authenticate with a bearer token in
 * Authorization (no cookies), and browsers refuse credentials with `*` anyway.
 */
export function corsOptions(origins: '*' | string[]) {
  return {
    origin: origins,
    methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    credentials: false,
    maxAge: 600,
    // A plain OPTIONS (no Origin) gets the same 204 instead of a text/plain 400 outside the envelope.
    strictPreflight: false,
  };
}

/**
 * Builds the application (not listening): shared by main.ts, the e2e tests and the benchmark.
 * `logDestination` takes the JSON log lines instead of stdout (the e2e tests' sink).
 */
export async function createApp(
  config: AppConfig,
  logDestination?: LogDestination,
): Promise<NestFastifyApplication> {
  // Before anything makes a span; with no OTLP endpoint nothing is registered.
  const stopTracing = startTracing(config.tracing);
  const adapter = new FastifyAdapter({
    bodyLimit: config.limits.maxBodyBytes,
    // The caller's X-Request-Id when it has a sane one, otherwise a new id; echoed on the response.
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    // Ids are up to 200 characters; percent-encoded UTF-8 takes up to 12 bytes each.
    routerOptions: { maxParamLength: 2400 },
    clientErrorHandler,
    frameworkErrors,
  });
  // Spans flushed last on close, after the runs that drained have ended theirs.
  adapter.getInstance().addHook('onClose', (_instance, done) => void stopTracing().then(() => done(), done));
  if (tracingOn()) traceRequests(adapter.getInstance());
  adapter.getInstance().addHook('onRequest', (request, reply, done) => {
    if (!/^[A-Za-z0-9._:-]{1,128}$/.test(request.id)) request.id = randomUUID();
    void reply.header('x-request-id', request.id);
    done();
  });
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot(config, logDestination),
    adapter,
    {
      bufferLogs: true,
      // A failing boot throws (main.ts prints it and exits 1) instead of Nest exiting the process itself.
      abortOnError: false,
      bodyParser: false,
    },
  );
  app.useLogger(quietStartup(app.get(PinoNestLogger)));
  const { limits } = config;
  // A JSON body is checked against the limits before it is parsed, a slice of its text at a time;
  // bodies of other types as soon as they are parsed (ops/http-hooks.ts). A refusal costs what the
  // limits allow, never what the client sent (docs/limits.md#request-bodies).
  // The JSON parser reads the request stream itself (Nest's useBodyParser hands a parser the whole
  // body as one buffer), so Nest registers no body parser and the form one is added here as before.
  adapter
    .getInstance()
    .addContentTypeParser(
      'application/json',
      boundedJsonParser(
        bodyLimitsOf(limits),
        limits.maxBodyBytes,
        { route: `${config.prefix}/run`, limits },
        adapter.getInstance().getDefaultJsonParser('error', 'error'),
      ),
    );
  app.useBodyParser('application/x-www-form-urlencoded', { bodyLimit: limits.maxBodyBytes });
  app.setGlobalPrefix(config.prefix, { exclude: ['health/{*path}', 'metrics', 'docs'] });
  // Helmet's headers, computed once: with this configuration they are the same for every response
  // (@fastify/helmet rebuilt the middleware, parsing the CSP, on every request). They are set on
  // Fastify's reply, not on the raw response, so Node does not keep a header table beside the header
  // block it sent for as long as a run's stream is open.
  const securityHeaders = headersOf(
    helmet({
      // Swagger UI needs its inline styles and data: images; everything else stays same-origin.
      contentSecurityPolicy: {
        directives: {
          defaultSrc: ["'self'"],
          styleSrc: ["'self'", "'unsafe-inline'"],
          imgSrc: ["'self'", 'data:'],
          scriptSrc: ["'self'"],
          // Swagger UI's OIDC sign-in reads the provider's discovery and posts to its token endpoint.
          connectSrc: ["'self'", ...oidcOrigins(config)],
          // Helmet's default upgrade-insecure-requests rewrites /docs' own assets and its "Try it out" calls to
          // https: on plain HTTP under any host name but localhost (a cluster-internal URL) Swagger UI stays blank.
          // Every resource is same-origin, so over HTTPS nothing is lost without it.
          upgradeInsecureRequests: null,
        },
      },
    }),
  );
  adapter.getInstance().addHook('onRequest', (_request, reply, done) => {
    void reply.headers(securityHeaders);
    done();
  });
  // Only listed origins (or any, with '*') may call from a browser; with CORS_ORIGINS empty no CORS
  // headers at all (and no per-request CORS work), which browsers treat as "same origin only".
  if (config.corsOrigins.length) app.enableCors(corsOptions(config.corsOrigins));
  app.useGlobalFilters(new DomainErrorFilter());
  SwaggerModule.setup('docs', app, () => openApiDocument(app, config), swaggerUiOptions(config));
  serveDocsPage(adapter.getInstance(), config);
  const { mode, oidcIssuer, oidcClientId } = config.auth;
  const signIn =
    mode === 'jwt' && oidcIssuer && oidcClientId ? { issuer: oidcIssuer, clientId: oidcClientId } : undefined;
  if (config.playground.enabled) await servePlayground(app, config.prefix, signIn);
  return app;
}

/** The OIDC provider's origin, which Swagger UI's sign-in calls from the browser (AUTH_MODE=jwt). */
function oidcOrigins(config: AppConfig): string[] {
  return config.auth.mode === 'jwt' && config.auth.oidcIssuer ? [new URL(config.auth.oidcIssuer).origin] : [];
}

/** The headers a helmet middleware sets, read once from a response that only records them. */
function headersOf(middleware: ReturnType<typeof helmet>): Record<string, string> {
  const headers: Record<string, string> = {};
  const recorder = {
    setHeader: (name: string, value: unknown) => void (headers[name.toLowerCase()] = String(value)),
    removeHeader: (name: string) => void delete headers[name.toLowerCase()],
  };
  let failed: unknown;
  middleware({} as IncomingMessage, recorder as unknown as ServerResponse, (err?: unknown) => (failed = err));
  if (failed) throw failed instanceof Error ? failed : new Error('helmet failed to set its headers');
  if (!headers['content-security-policy'])
    throw new Error('helmet set no Content-Security-Policy when asked once');
  return headers;
}
