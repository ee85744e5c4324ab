import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { FastifyReply } from 'fastify';
import { isDatabaseUnavailable } from '../database/database-errors';
import { DomainError, ErrorCode, ERROR_STATUS, envelope } from './errors';

/** Seconds a client is told to wait before retrying a 503: about a database restart or failover's first steps. */
export const RETRY_AFTER_S = 5;

const STATUS_CODES: Partial<Record<number, ErrorCode>> = Object.fromEntries(
  Object.entries(ERROR_STATUS).map(([code, status]) => [status, code as ErrorCode]),
);
// A bare status is mapped to its general code, never to a specific one that shares it.
STATUS_CODES[409] = 'CONFLICT';
STATUS_CODES[503] = 'SERVICE_UNAVAILABLE';
STATUS_CODES[429] = 'RATE_LIMITED';

/**
 * Turns any error into a DomainError: ours as they are, a database down or not answering as
 * SERVICE_UNAVAILABLE, Fastify's and Nest's by status, the rest INTERNAL.
 */
export function toDomainError(err: unknown): DomainError {
  if (err instanceof DomainError) return err;
  if (isDatabaseUnavailable(err)) {
    return new DomainError('SERVICE_UNAVAILABLE', 'The database is unavailable; retry later');
  }
  const fastifyCode = (err as { code?: unknown })?.code;
  if (fastifyCode === 'FST_ERR_CTP_INVALID_JSON_BODY' || fastifyCode === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
    return new DomainError('VALIDATION_FAILED', 'The request body is not valid JSON');
  }
  if (fastifyCode === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new DomainError('PAYLOAD_TOO_LARGE', 'The request body is too large');
  }
  if (fastifyCode === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new DomainError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be application/json');
  }
  // A value Postgres cannot take (SQLSTATE class 22, data exception) is the request's fault, not ours.
  const sqlState = (err as { driverError?: { code?: unknown } })?.driverError?.code;
  if (typeof sqlState === 'string' && sqlState.startsWith('22')) {
    return new DomainError('VALIDATION_FAILED', 'The request holds a value that cannot be stored');
  }
  const status =
    err instanceof HttpException ? err.getStatus() : Number((err as { statusCode?: unknown })?.statusCode);
  if (Number.isInteger(status) && status >= 400 && status < 500) {
    const code = STATUS_CODES[status] ?? 'VALIDATION_FAILED';
    const message = err instanceof Error && err.message ? err.message : 'Bad request';
    if (code === 'NOT_FOUND') return new DomainError(code, 'Not found');
    if (code === 'RATE_LIMITED') return new DomainError(code, 'Too many requests; try again later');
    return new DomainError(code, message);
  }
  if (status === 503) {
    // Terminus reports each failing indicator: keep them as details.
    const body = err instanceof HttpException ? err.getResponse() : undefined;
    const failing = (body as { error?: Record<string, { status?: string; message?: string }> })?.error ?? {};
    const details = Object.entries(failing).map(([path, v]) => ({
      path,
      message: v.message ?? v.status ?? 'down',
    }));
    return new DomainError('SERVICE_UNAVAILABLE', 'Service unavailable', details);
  }
  return new DomainError('INTERNAL', 'Internal server error');
}

/** The one place errors become HTTP responses, in the envelope of docs/protocol.md#routes. */
@Catch()
export class DomainErrorFilter implements ExceptionFilter {
  private readonly log = new Logger('Errors');

  catch(err: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const domain = toDomainError(err);
    if (domain.code === 'INTERNAL')
      this.log.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    else if (!(err instanceof DomainError) && isDatabaseUnavailable(err))
      this.log.warn(`database unavailable: ${(err as Error).message}`);
    if (reply.sent || reply.raw.headersSent) return;
    // Every 503 is temporary (database, draining, a dependency): say when to come back.
    if (domain.retryAfterS !== undefined) void reply.header('retry-after', String(domain.retryAfterS));
    else if (domain.status === 503) void reply.header('retry-after', String(RETRY_AFTER_S));
    void reply.status(domain.status).send(envelope(domain));
  }
}
