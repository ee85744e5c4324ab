import { Inject, Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import {
  bodyLimitError,
  bodyLimitsOf,
  forwardedPropsLimitError,
  runBodyLimitError,
} from '../common/body-limits';
import { toDomainError } from '../common/error.filter';
import { envelope } from '../common/errors';
import { scannedBodies } from '../common/json-body-parser';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { HOOKED_ROUTES, type HookedRoutes } from '../config/host';
import { Metrics } from './metrics.service';

/**
 * io-bridge's hooks on the Fastify instance, installed as Nest builds the application (before its
 * routes are registered), in the standalone service and in a host app alike:
 * - a body that `boundedJsonParser` did not scan (another content type, or a host's own JSON parser)
 *   is checked against the limits as soon as it is parsed, before guards and validation walk it
 *   (docs/limits.md#request-bodies);
 * - each response's duration is observed (`io_bridge_http_request_duration_seconds`), except a run's
 *   stream, which its controller observes when it closes;
 * - in a host app, an error answered on an io-bridge route before io-bridge's handler ran (the host's
 *   body parser, the host's guards) is put in io-bridge's envelope, which its clients read.
 */
@Injectable()
export class HttpHooks {
  constructor(
    adapterHost: HttpAdapterHost,
    @Inject(APP_CONFIG) config: AppConfig,
    metrics: Metrics,
    @Inject(HOOKED_ROUTES) routes: HookedRoutes,
  ) {
    const fastify = adapterHost.httpAdapter.getInstance<FastifyInstance>();
    const { prefix, limits } = config;
    const bodyLimits = bodyLimitsOf(limits);
    const ours = (url: string | undefined) =>
      routes === 'all' || (url !== undefined && (url.includes(`${prefix}/`) || url.endsWith(prefix)));
    const isRun = (method: string, url: string | undefined) =>
      method === 'POST' && url !== undefined && url.endsWith(`${prefix}/run`);
    fastify.addHook('preValidation', (request, reply, done) => {
      const url = request.routeOptions.url;
      if (request.body === undefined || scannedBodies.has(request) || !ours(url)) return done();
      const run = isRun(request.method, url);
      const error =
        (run ? runBodyLimitError(request.body, limits) : undefined) ??
        bodyLimitError(request.body, bodyLimits) ??
        (run ? forwardedPropsLimitError(request.body, limits) : undefined);
      if (!error) return done();
      void reply.status(error.status).send(envelope(error));
    });
    if (routes !== 'all') {
      fastify.addHook('preSerialization', (request, reply, payload, done) => {
        const body = payload as { code?: unknown; message?: unknown } | null;
        if (
          reply.statusCode < 400 ||
          typeof body !== 'object' ||
          body === null ||
          typeof body.code === 'string'
        )
          return done(null, payload);
        if (!ours(request.routeOptions.url ?? request.url)) return done(null, payload);
        const message = typeof body.message === 'string' ? body.message : undefined;
        done(null, envelope(toDomainError({ statusCode: reply.statusCode, message })));
      });
    }
    fastify.addHook('onResponse', (request, reply, done) => {
      // A streamed run is observed once, by its controller, when its stream closes.
      if (metrics.timedByController.has(reply.raw)) return done();
      const route = request.routeOptions.url;
      if (!ours(route)) return done();
      metrics.httpDuration.observe(
        { method: request.method, route: route ?? 'unmatched', status: String(reply.statusCode) },
        reply.elapsedTime / 1000,
      );
      done();
    });
  }
}
