import { createHash } from 'node:crypto';
import {
  Context,
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  propagation,
  ROOT_CONTEXT,
  Span,
  SpanKind,
  SpanStatusCode,
  trace,
  Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppConfig } from '../config/config';

/** The one tracer provider of the process, while tracing is on; undefined means off (the API's no-op). */
let provider: NodeTracerProvider | undefined;
let tracer: Tracer | undefined;
const w3c = new W3CTraceContextPropagator();

/**
 * Whether spans are being made. Every call site checks this first, so with tracing off the hot path
 * builds no span, no attributes and no context.
 */
export const tracingOn = (): boolean => tracer !== undefined;

/** The owner as traces name it: never the resourceId itself, a stable 16-hex-digit digest of it. */
export const ownerHash = (resourceId: string): string =>
  createHash('sha256').update(resourceId).digest('hex').slice(0, 16);

/**
 * Starts exporting spans over OTLP/HTTP (JSON) when `config.tracing.url` is set; otherwise registers
 * nothing and @opentelemetry/api stays the no-op. Returns the shutdown that flushes what is left.
 */
export function startTracing(config: AppConfig['tracing']): () => Promise<void> {
  if (!config.url) return () => Promise.resolve();
  // One provider per process: a second app in the same process (tests) takes over from the first.
  if (provider) void stopTracing();
  const own = new NodeTracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: config.serviceName,
      [ATTR_SERVICE_VERSION]: config.serviceVersion,
    }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: config.url }))],
  });
  // The AsyncLocalStorage context manager: a span stays current across awaits, so children nest.
  own.register({ propagator: w3c });
  provider = own;
  tracer = own.getTracer('io-bridge', config.serviceVersion);
  return () => (provider === own ? stopTracing() : Promise.resolve());
}

async function stopTracing(): Promise<void> {
  const own = provider;
  provider = undefined;
  tracer = undefined;
  trace.disable();
  context.disable();
  propagation.disable();
  await own?.shutdown();
}

/** A span started under `parent` (the current context by default), or undefined with tracing off. */
export function startSpan(
  name: string,
  kind: SpanKind,
  attributes: Record<string, string | number | boolean | undefined>,
  parent: Context = context.active(),
): Span | undefined {
  return tracer?.startSpan(name, { kind, attributes }, parent);
}

/** Runs `fn` with `span` current (its children nest under it); with no span, just runs it. */
export function withSpan<T>(span: Span | undefined, fn: () => T): T {
  return span ? context.with(trace.setSpan(context.active(), span), fn) : fn();
}

/** Ends `span` with an error status naming `code` (a message safe to show, never a stack). */
export function endWithError(span: Span, code: string, message?: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: message ?? code });
  span.end();
}

/** `headers` with this context's `traceparent` (and `tracestate`) added: the model provider continues the trace. */
export function withTraceHeaders(
  headers: Record<string, string | undefined> | undefined,
  span: Span,
): Record<string, string | undefined> {
  const carrier: Record<string, string | undefined> = { ...headers };
  w3c.inject(trace.setSpan(context.active(), span), carrier, defaultTextMapSetter);
  return carrier;
}

/** Probes, scrapes and the pages' documents and assets: frequent, and not worth a trace. */
const UNTRACED = /^\/(health(\/|$)|metrics$|docs(-json|\/|$)|playground(\/|$))/;

/** Whether a request to `url` (path and query) makes no span. */
export const untraced = (url: string): boolean => UNTRACED.test(url.split('?')[0]);

/** The SERVER span of each response being written: every log line of the request names it. */
const serverSpans = new WeakMap<ServerResponse, Span>();

/**
 * The trace and span ids a log line carries: the SERVER span of `res` (a request's completion line),
 * otherwise the span current where the line is logged; undefined outside any span.
 */
export function logTraceIds(res?: unknown): { traceId: string; spanId: string } | undefined {
  const span = (res ? serverSpans.get(res as ServerResponse) : undefined) ?? trace.getActiveSpan();
  if (!span) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { traceId, spanId };
}

/**
 * A SERVER span for each HTTP request but the UNTRACED ones, continuing the caller's W3C trace context (`traceparent`,
 * `tracestate`). It is current from the handler on (after the body is parsed, whose stream events
 * would lose it), and ends when the connection's response closes, an SSE stream included.
 */
export function traceRequests(fastify: FastifyInstance): void {
  const spans = new WeakMap<FastifyRequest, { span: Span; parent: Context }>();
  fastify.addHook('onRequest', (request, reply, done) => {
    if (untraced(request.url)) return done();
    const parent = w3c.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter);
    const span = startSpan(
      request.method,
      SpanKind.SERVER,
      { 'http.request.method': request.method, 'url.path': request.url.split('?')[0] },
      parent,
    );
    if (!span) return done();
    spans.set(request, { span, parent });
    serverSpans.set(reply.raw, span);
    reply.raw.once('close', () => {
      const route = request.routeOptions.url;
      const status = reply.raw.statusCode;
      if (route) {
        span.updateName(`${request.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      span.setAttribute('http.response.status_code', status);
      // A response that never finished (client gone mid-stream) still ends its span.
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    // Current for the hooks and middleware that follow (the request logger), until the body is read.
    context.with(trace.setSpan(parent, span), done);
  });
  fastify.addHook('preHandler', (request, _reply, done) => {
    const traced = spans.get(request);
    if (!traced) return done();
    context.with(trace.setSpan(traced.parent, traced.span), done);
  });
}
