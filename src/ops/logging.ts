import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestMethod, type LoggerService, type LogLevel } from '@nestjs/common';
import type { Params } from 'nestjs-pino';
import { logTraceIds } from './tracing';

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

/** The caller's W3C trace context as log fields: its trace id, and its span as this request's parent. */
function callerTrace(header: unknown): { traceId: string; parentSpanId: string } | undefined {
  const caller = traceContext(header);
  return caller && { traceId: caller.traceId, parentSpanId: caller.spanId };
}

/** Probes and scrapes: every few seconds from every kubelet and Prometheus, never worth a line. */
const PROBE = /^\/(health(\/|$|\?)|metrics($|\?))/;

/** Nest's start-up chatter (one line per module and per route): debug, not info. */
const QUIET_CONTEXTS = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer']);

/** The path the client asked for: middie rewrites `req.url` relative to the route a middleware is mounted on. */
const pathOf = (req: IncomingMessage) => (req as { originalUrl?: string }).originalUrl ?? req.url ?? '';

/** The Error pino-http makes up for a 5xx that carried none: its stack is pino-http's own code. */
export const isInvented = (err: Error, res: ServerResponse) =>
  (res as { err?: unknown }).err !== err && /^failed with status code \d+$/.test(err.message);

/** Where the JSON lines go instead of stdout: the e2e tests' sink, which keeps the lines a test provokes. */
export type LogDestination = { write: (line: string) => void };

/**
 * Structured JSON logs: every line of a request carries its request id (the caller's `X-Request-Id`
 * or a new one, echoed back, assigned by Fastify) and the W3C trace context; run lines add runId, threadId, resourceId
 * (the request's completion line too: assignResponse). Requests are logged by method, path and status only:
 * no headers (tokens), no bodies (messages). Probes, /metrics and /docs (outside the prefix) are not logged; 4xx is one warn line, 5xx an
 * error line (the real error and its stack are logged once, by DomainErrorFilter).
 */
export function loggingParams(
  level: LogLevel,
  tracing = false,
  pretty = prettyByDefault(),
  destination?: LogDestination,
  /** In a host app: only requests under this path (io-bridge's routes) are logged, and have a request logger. */
  only?: string,
): Params {
  return {
    // Mounted once, on the API (the prefix): nestjs-pino's default mounted it a second time on the routes outside it.
    // In a host app, io-bridge's routes only.
    forRoutes: [{ path: only ? `${only}{/*splat}` : '{/*splat}', method: RequestMethod.ALL }],
    assignResponse: true,
    pinoHttp: {
      level: PINO_LEVEL[level],
      ...(destination ? { stream: destination } : pretty ? { stream: prettyStream() } : {}),
      // Fastify assigns the id (X-Request-Id or a new one): pino-http takes it from the request.
      // Tracing on: every line names this server's span (the request's, or the run's or tool's inside it).
      ...(tracing ? { mixin: (line: { res?: unknown }) => logTraceIds(line.res) ?? {} } : {}),
      // Tracing off: the caller's trace, if it sent one, and its span as the parent. Without one, no
      // props: pino-http would otherwise make each request's logger a child for nothing (held as long as
      // the request, an SSE stream's whole run).
      customProps: (req: IncomingMessage) =>
        (tracing ? undefined : callerTrace(req.headers.traceparent)) as object,
      serializers: {
        req: (req: { id: unknown; method: string; url: string; originalUrl?: string }) => ({
          id: req.id,
          method: req.method,
          path: (req.originalUrl ?? req.url).split('?')[0],
        }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      customLogLevel: (_req: IncomingMessage, res: ServerResponse, err?: Error) =>
        err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info',
      // pino-http invents an Error ("failed with status code 500") for a 5xx: a stack of its own code, dropped.
      customErrorObject: (
        _req: IncomingMessage,
        res: ServerResponse,
        err: Error,
        value: Record<string, unknown>,
      ) => (isInvented(err, res) ? { ...value, err: undefined } : value),
      customErrorMessage: (req: IncomingMessage, res: ServerResponse) =>
        `request failed with status code ${res.statusCode}`,
      autoLogging: { ignore: (req: IncomingMessage) => PROBE.test(pathOf(req)) },
      quietReqLogger: true,
    },
  };
}

/** A readable terminal (`npm start`) gets readable lines; anything else (a pod, a pipe) gets JSON. */
function prettyByDefault(): boolean {
  return !!process.stdout.isTTY && process.env.NODE_ENV !== 'production';
}

const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO ',
  40: 'WARN ',
  50: 'ERROR',
  60: 'FATAL',
};
const SHOWN_ELSEWHERE = new Set([
  'level',
  'time',
  'pid',
  'hostname',
  'msg',
  'context',
  'req',
  'res',
  'err',
  'responseTime',
]);

/** One pino JSON line as `HH:MM:SS.mmm LEVEL [Context] message key=value`, with an error's stack below it. */
export function prettyLine(json: string): string {
  let o: Record<string, any>;
  try {
    o = JSON.parse(json) as Record<string, any>;
  } catch {
    return json;
  }
  const time = new Date(o.time as number).toISOString().slice(11, 23);
  const head = [time, LEVEL_NAMES[o.level as number] ?? String(o.level)];
  if (o.context) head.push(`[${String(o.context)}]`);
  if (o.req) head.push(`${o.req.method} ${o.req.path}`);
  if (o.res) head.push(`${o.res.statusCode} ${o.responseTime ?? '?'}ms`);
  if (o.msg !== undefined && !o.req) head.push(String(o.msg));
  const extras = Object.entries(o)
    .filter(([k, v]) => !SHOWN_ELSEWHERE.has(k) && v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  const stack = o.err?.stack ? `\n  ${String(o.err.stack).replace(/\n/g, '\n  ')}` : '';
  return `${[...head, ...extras].join(' ')}${stack}\n`;
}

/** A pino destination writing prettyLine to stdout (pino-pretty is not a dependency). */
function prettyStream(): { write: (line: string) => void } {
  return { write: (line) => void process.stdout.write(prettyLine(line)) };
}

/** Nest's logger with its start-up chatter (QUIET_CONTEXTS) moved from log to debug. */
export function quietStartup(logger: LoggerService): LoggerService {
  return {
    log: (message: unknown, ...rest: unknown[]) => {
      const context = rest[rest.length - 1];
      if (typeof context === 'string' && QUIET_CONTEXTS.has(context)) logger.debug?.(message, ...rest);
      else logger.log(message, ...rest);
    },
    error: (message: unknown, ...rest: unknown[]) => logger.error(message, ...rest),
    warn: (message: unknown, ...rest: unknown[]) => logger.warn(message, ...rest),
    debug: (message: unknown, ...rest: unknown[]) => logger.debug?.(message, ...rest),
    verbose: (message: unknown, ...rest: unknown[]) => logger.verbose?.(message, ...rest),
    fatal: (message: unknown, ...rest: unknown[]) => logger.fatal?.(message, ...rest),
    setLogLevels: (levels: LogLevel[]) => logger.setLogLevels?.(levels),
  };
}
