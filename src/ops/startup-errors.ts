import { isDatabaseUnavailable } from '../database/database-errors';

/** Where a postgres:// URL points, without its credentials: `host:port/database`. */
export function databaseAddress(url: string | undefined): string {
  if (!url) return 'the database';
  try {
    const u = new URL(url);
    return `${u.hostname || 'localhost'}:${u.port || '5432'}/${decodeURIComponent(u.pathname.slice(1)) || 'postgres'}`;
  } catch {
    return 'the database';
  }
}

/** The error, or the first of its causes, that Postgres or the socket gave a code. */
function coded(err: unknown, depth = 0): { code: string; message: string } | undefined {
  if (!err || typeof err !== 'object' || depth > 4) return undefined;
  const e = err as {
    code?: unknown;
    message?: unknown;
    driverError?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  if (typeof e.code === 'string')
    return { code: e.code, message: typeof e.message === 'string' ? e.message : '' };
  for (const inner of [e.driverError, e.cause, ...(Array.isArray(e.errors) ? e.errors : [])]) {
    const found = inner !== err ? coded(inner, depth + 1) : undefined;
    if (found) return found;
  }
  return undefined;
}

/**
 * One line saying why the service could not start on its database and what to do, for the errors an
 * operator meets (down, unreachable, missing, refused); undefined for anything else (a bug: its stack
 * is worth having).
 */
export function databaseStartupProblem(err: unknown, url: string | undefined): string | undefined {
  const at = databaseAddress(url);
  const found = coded(err);
  const database = at.slice(at.indexOf('/') + 1);
  switch (found?.code) {
    case '3D000':
      return `database "${database}" does not exist on ${at.slice(0, at.indexOf('/'))}: create it (createdb ${database}) or fix DATABASE_URL`;
    case '28P01':
    case '28000':
      return `the database at ${at} refused the credentials of DATABASE_URL (${found.message})`;
  }
  if (isDatabaseUnavailable(err))
    return `the database at ${at} is unreachable (${found?.code ?? (err as Error).message}): is Postgres running there, and is DATABASE_URL right?`;
  return undefined;
}
