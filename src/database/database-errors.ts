import { QueryFailedError } from 'typeorm';

/** Socket-level failures reaching the database host. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs that mean the server cannot serve us now, not that the statement is wrong: admin and
 * crash shutdown, starting up, too many connections, statement timeout or cancel, and the server
 * closing an idle session or transaction. Class 08 (connection exceptions) is matched by prefix.
 */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '57P05', '53300', '57014', '25P03']);

/** What pg and pg-pool throw when a connection cannot be made, is lost, or a query gets no answer. */
const DRIVER_MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|timeout expired|Client has encountered a connection error|Client was closed and is not queryable)/i;

/** The client gave up waiting for the server's answer (pg `query_timeout`). */
export function isQueryTimeout(err: unknown): boolean {
  return messageOf(err) === 'Query read timeout';
}

/**
 * True when `err` says the database is down, unreachable or not answering (as opposed to a bad
 * statement or a constraint): pg and pg-pool errors as they are, or wrapped by TypeORM
 * (`driverError`), as a `cause`, or inside an AggregateError (one per address tried).
 */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  const e = err as { code?: unknown; driverError?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string') {
    if (NETWORK_CODES.has(e.code) || UNAVAILABLE_SQLSTATES.has(e.code) || /^08[0-9A-Z]{3}$/.test(e.code))
      return true;
  }
  if (DRIVER_MESSAGES.test(messageOf(err))) return true;
  const nested = [e.driverError, e.cause, ...(Array.isArray(e.errors) ? e.errors : [])];
  return nested.some((inner) => inner !== err && isDatabaseUnavailable(inner, depth + 1));
}

function messageOf(err: unknown): string {
  const message = (err as { message?: unknown })?.message;
  return typeof message === 'string' ? message : '';
}

/** A unique constraint (this one, when named) refused the statement. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  if (!(err instanceof QueryFailedError)) return false;
  const driver = err.driverError as { code?: string; constraint?: string };
  return driver?.code === '23505' && (constraint === undefined || driver.constraint === constraint);
}

/** Postgres broke a deadlock by failing this statement (it holds nothing any more: try it again). */
export function isDeadlock(err: unknown): boolean {
  const e = err as { code?: unknown; driverError?: { code?: unknown } };
  return e?.code === '40P01' || e?.driverError?.code === '40P01';
}
