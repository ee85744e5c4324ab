/** Stable codes a client can branch on; each maps to one HTTP status. */
export const ERROR_STATUS = {
  VALIDATION_FAILED: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  RUN_ALREADY_EXISTS: 409,
  THREAD_BUSY: 409,
  THREAD_ID_CONFLICT: 409,
  TOOL_RESULT_ALREADY_SUBMITTED: 409,
  RUN_NOT_ACTIVE: 409,
  INTERRUPT_ALREADY_RESOLVED: 409,
  RUN_EVENTS_EXPIRED: 410,
  INTERRUPT_EXPIRED: 410,
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  TOO_MANY_ACTIVE_RUNS: 429,
  QUOTA_EXCEEDED: 429,
  TOO_MANY_READERS: 429,
  HEADERS_TOO_LARGE: 431,
  INTERNAL: 500,
  SERVICE_UNAVAILABLE: 503,
  SHUTTING_DOWN: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** Every HTTP error code, in the order of ERROR_STATUS: the OpenAPI enum of the envelope's `code`. */
export const ERROR_CODES = Object.keys(ERROR_STATUS) as readonly ErrorCode[];

export type ErrorDetail = { path?: string; message: string };

/** The error a service throws; the HTTP layer maps it once, in DomainErrorFilter. */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    /** Seconds a client should wait before trying again (the `Retry-After` header). */
    readonly retryAfterS?: number,
  ) {
    super(message);
    this.name = 'DomainError';
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export type ErrorEnvelope = { statusCode: number; code: string; message: string; details?: ErrorDetail[] };

export function envelope(err: DomainError): ErrorEnvelope {
  return {
    statusCode: err.status,
    code: err.code,
    message: err.message,
    ...(err.details?.length ? { details: err.details } : {}),
  };
}

/** Error text safe to show a user: the message only, never a stack, bounded in length. */
export function safeErrorMessage(error: unknown, fallback: string): string {
  const raw =
    typeof error === 'string'
      ? error
      : typeof (error as { message?: unknown })?.message === 'string'
        ? (error as { message: string }).message
        : '';
  const firstLine = raw.split('\n')[0].trim();
  return firstLine ? firstLine.slice(0, 500) : fallback;
}
