import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, envelope } from './errors';

/** A request Node's HTTP parser refused (malformed request line or header, headers too large, too slow). */
function clientErrorOf(err: NodeJS.ErrnoException): DomainError {
  if (err.code === 'HPE_HEADER_OVERFLOW')
    return new DomainError('HEADERS_TOO_LARGE', 'The request headers are too large');
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return new DomainError('REQUEST_TIMEOUT', 'The request took too long to arrive');
  return new DomainError('VALIDATION_FAILED', 'The HTTP request is malformed');
}

/**
 * Fastify's `clientErrorHandler`: the error envelope for requests that never reach a route, written
 * on the socket as Node does (the parser's state is lost, so the connection closes).
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const error = clientErrorOf(err);
    const body = JSON.stringify(envelope(error));
    socket.write(
      `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** Fastify's `frameworkErrors`: a URL that routing cannot decode, in the envelope instead of Fastify's own body. */
export function frameworkErrors(
  err: Error & { code?: string },
  _request: FastifyRequest,
  reply: FastifyReply,
): void {
  const error =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? new DomainError('URI_TOO_LONG', 'A path parameter is too long')
      : new DomainError('VALIDATION_FAILED', 'The URL is not valid');
  void reply.status(error.status).send(envelope(error));
}
