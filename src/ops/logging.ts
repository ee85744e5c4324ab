import type { IncomingMessage } from 'node:http';
import type { LogLevel } from '@nestjs/common';
import type { Params } from 'nestjs-pino';

const PINO_LEVEL: Record<LogLevel, string> = {
  fatal: 'fatal',
  error: 'error',
  warn: 'warn',
  log: 'info',
  debug: 'debug',
  verbose: 'trace',
};

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

/** W3C `traceparent` (version-traceid-parentid-flags): its trace and parent span ids, when well formed. */
export function traceContext(header: unknown): { traceId: string; spanId: string } | undefined {
  const m = typeof header === 'string' ? TRACEPARENT.exec(header.trim().toLowerCase()) : null;
  if (!m || /^0+$/.test(m[1]) || /^0+$/.test(m[2])) return undefined;
  return { traceId: m[1], spanId: m[2] };
}

/**
 * Structured JSON logs: every line of a request carries its request id (the caller's `X-Request-Id`
 * or a new one, echoed back, assigned by Fastify) and the W3C trace context; run lines add runId, threadId, resourceId.
 * Requests are logged by method, path and status only: no headers (tokens), no bodies (messages).
 */
export function loggingParams(level: LogLevel): Params {
  return {
    pinoHttp: {
      level: PINO_LEVEL[level],
      // Fastify assigns the id (X-Request-Id or a new one): pino-http takes it from the request.
      customProps: (req: IncomingMessage) => traceContext(req.headers.traceparent) ?? {},
      serializers: {
        req: (req: { id: unknown; method: string; url: string }) => ({
          id: req.id,
          method: req.method,
          path: req.url.split('?')[0],
        }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      autoLogging: { ignore: (req: IncomingMessage) => /^\/(health|metrics)/.test(req.url ?? '') },
      quietReqLogger: true,
    },
  };
}
