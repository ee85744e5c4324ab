/** An error answer of io-bridge (`{statusCode, code, message, details?}`), or a stream lost for good. */
export class IoBridgeError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details?: Array<{ path?: string; message: string }>,
    /** Seconds to wait before retrying, from `Retry-After` (429, 503). */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'IoBridgeError';
  }
}

/** The error envelope of a failed response, or one made from its status when the body is not one. */
export async function errorOf(res: Response): Promise<IoBridgeError> {
  const text = await res.text().catch(() => '');
  let body: { code?: unknown; message?: unknown; details?: unknown } = {};
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (a proxy's page): the status speaks.
  }
  const header = res.headers.get('retry-after');
  const retry = header === null ? NaN : Number(header);
  return new IoBridgeError(
    res.status,
    typeof body.code === 'string' ? body.code : `HTTP_${res.status}`,
    typeof body.message === 'string' ? body.message : `${res.status} ${res.statusText}`.trim(),
    Array.isArray(body.details) ? body.details : undefined,
    Number.isFinite(retry) && retry >= 0 ? retry : undefined,
  );
}
