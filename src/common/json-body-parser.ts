import type { IncomingMessage } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { errorCodes, type FastifyBodyParser, type FastifyRequest } from 'fastify';
import type { BodyLimits, RunBodyLimits } from './body-limits';
import { SCAN_SLICE_CHARS, scanJson } from './json-scan';
import { largeWorkTurns, type TurnShare } from './turn-share';

/** Characters of text joined, or parsed, in about a millisecond: a unit of {@link largeWorkTurns}. */
const JOIN_CHARS_A_UNIT = 1024 * 1024;
const PARSE_CHARS_A_UNIT = 128 * 1024;

const unitsOf = (chars: number, perUnit: number) => Math.ceil(chars / perUnit);

/** The requests whose JSON body {@link boundedJsonParser} checked: the hooks after the parse skip them. */
export const scannedBodies = new WeakSet<FastifyRequest>();

/**
 * The body's text, decoded a chunk at a time as it arrives (so no turn decodes a whole large body at
 * once), or Fastify's own error for a body over `limit` bytes, a body whose length is not its
 * Content-Length, or a stream that failed.
 */
function readText(payload: IncomingMessage, contentLength: number, limit: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const decoder = new StringDecoder('utf8');
    const parts: string[] = [];
    let received = 0;
    const stop = () => {
      payload.removeListener('data', onData);
      payload.removeListener('end', onEnd);
      payload.removeListener('error', onEnd);
    };
    const onData = (chunk: Buffer | string) => {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      received += bytes.length;
      if (received > limit) {
        stop();
        reject(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
        return;
      }
      parts.push(decoder.write(bytes));
    };
    const onEnd = (err?: Error & { statusCode?: number }) => {
      stop();
      if (err) {
        if (!(typeof err.statusCode === 'number' && err.statusCode >= 400)) err.statusCode = 400;
        reject(err);
      } else if (!Number.isNaN(contentLength) && received !== contentLength) {
        reject(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
      } else {
        parts.push(decoder.end());
        resolve(parts);
      }
    };
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onEnd);
    payload.resume();
  });
}

/**
 * The `application/json` body parser (docs/limits.md#request-bodies), registered on Fastify itself
 * because it reads the request stream: its text is decoded as it arrives, then joined, scanned
 * against the limits a slice at a time ({@link scanJson}) and, only within them, parsed by Fastify's
 * own parser. Joining, each slice and the parse wait for room in {@link largeWorkTurns}, shared with
 * every other large request: the parse of a large body has a turn to itself. A refusal is the
 * limit's DomainError; text that is not JSON is Fastify's error for it. `scanned` gets each request
 * whose body it checked.
 */
export function boundedJsonParser(
  limits: BodyLimits,
  maxBodyBytes: number,
  run: { route: string; limits: RunBodyLimits },
  /** Fastify's parser of a JSON text (`getDefaultJsonParser`: prototype poisoning refused). */
  parse: FastifyBodyParser<string>,
  scanned: WeakSet<FastifyRequest> = scannedBodies,
  turns: TurnShare = largeWorkTurns,
) {
  const check = async (request: FastifyRequest, payload: IncomingMessage): Promise<unknown> => {
    const contentLength = Number(request.headers['content-length']);
    if (contentLength > maxBodyBytes) throw new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE();
    const parts = await readText(payload, contentLength, maxBodyBytes);
    const chars = parts.reduce((sum, part) => sum + part.length, 0);
    if (chars > SCAN_SLICE_CHARS) await turns.take(unitsOf(chars, JOIN_CHARS_A_UNIT));
    const text = parts.length === 1 ? parts[0] : parts.join('');
    if (text.length) {
      const isRun = request.method === 'POST' && request.routeOptions.url === run.route;
      const verdict = await scanJson(text, limits, isRun ? run.limits : undefined, SCAN_SLICE_CHARS, turns);
      if (!verdict.ok) {
        if ('error' in verdict) throw verdict.error;
        throw new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY();
      }
      scanned.add(request);
      if (text.length > SCAN_SLICE_CHARS) await turns.take(unitsOf(text.length, PARSE_CHARS_A_UNIT));
    }
    return new Promise((resolve, reject) => {
      const parsed = parse(request, text, (err, value) => (err ? reject(err) : resolve(value)));
      if (parsed) parsed.then(resolve, reject);
    });
  };
  return (
    request: FastifyRequest,
    payload: IncomingMessage,
    done: (err: Error | null, value?: unknown) => void,
  ): void =>
    void check(request, payload).then(
      (value) => done(null, value),
      (err: Error) => done(err),
    );
}
