import { connect } from 'node:net';
import { startApp, TestApp } from '../support/app';
import { parseFrames, runInput } from '../support/sse';

/**
 * `Connection: close` (docs/protocol.md#the-stream): a client that asks for it gets the connection closed
 * after the response, on JSON routes and on a run's SSE stream (after its terminal event). Checked on a raw
 * socket: once the first response is complete, a second request is written on the same connection; a server
 * that kept the connection open answers it, one that closed it does not.
 */

type Exchange = {
  /** The first response, headers and body, as received. */
  response: string;
  /** What came on the connection after the first response (the answer to the second request). */
  after: string;
};

/** Where the first response in `text` ends, or -1 while it is incomplete (chunked or Content-Length). */
function responseEnd(text: string): number {
  const headEnd = text.indexOf('\r\n\r\n');
  if (headEnd < 0) return -1;
  const head = text.slice(0, headEnd).toLowerCase();
  const bodyAt = headEnd + 4;
  if (/\r\ntransfer-encoding: chunked/.test(head)) {
    const last = text.indexOf('\r\n0\r\n\r\n', bodyAt - 2);
    return last < 0 ? -1 : last + 7;
  }
  const length = Number(/\r\ncontent-length: (\d+)/.exec(head)?.[1] ?? 0);
  return text.length >= bodyAt + length ? bodyAt + length : -1;
}

/** Sends `request` on a fresh connection; when its response is complete, a second request; resolves when the connection closes. */
function exchange(baseUrl: string, request: string): Promise<Exchange> {
  const url = new URL(baseUrl);
  const probe = `GET /health/live HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n\r\n`;
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let text = '';
    let end = -1;
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      text += d;
      if (end >= 0) return;
      end = responseEnd(text);
      // The server may have closed already: the write then fails, which is the point.
      if (end >= 0) socket.write(probe, () => undefined);
    });
    // A reset after the server closed (the second request reached a closed socket) is a close too.
    socket.on('error', () => undefined);
    socket.on('close', () =>
      end < 0
        ? reject(new Error(`closed before the first response was complete:\n${text}`))
        : resolve({ response: text.slice(0, end), after: text.slice(end) }),
    );
    socket.write(request);
  });
}

const headerOf = (response: string, name: string) =>
  new RegExp(`\r\n${name}: ([^\r]*)`, 'i').exec(response.slice(0, response.indexOf('\r\n\r\n')))?.[1];

/** The SSE bytes of a chunked response. */
function sseOf(response: string): string {
  const body = response.slice(response.indexOf('\r\n\r\n') + 4);
  let sse = '';
  for (let at = 0; at < body.length;) {
    const eol = body.indexOf('\r\n', at);
    const size = parseInt(body.slice(at, eol), 16);
    if (!size) break;
    sse += body.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
  return Buffer.from(sse, 'latin1').toString('utf8');
}

describe('Connection: close', () => {
  let t: TestApp;
  let host: string;
  const postRun = (body: string, connection: string) =>
    `POST /io-bridge/run HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
    `Accept: text/event-stream\r\nConnection: ${connection}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

  beforeAll(async () => {
    t = await startApp();
    host = new URL(t.baseUrl).host;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a kept-alive connection answers a second request (what the other tests rely on to tell)', async () => {
    const json = await exchange(t.baseUrl, `GET /health/live HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    expect(json.response).toMatch(/^HTTP\/1\.1 200 /);
    expect(json.after).toMatch(/^HTTP\/1\.1 200 /);

    const run = await exchange(t.baseUrl, postRun(JSON.stringify(runInput('hello')), 'keep-alive'));
    expect(run.response).toMatch(/^HTTP\/1\.1 200 /);
    expect(parseFrames(sseOf(run.response)).frames.at(-1)?.event.type).toBe('RUN_FINISHED');
    expect(run.after).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('closes the connection after a JSON response (a route that answers, and a refused run)', async () => {
    const live = await exchange(
      t.baseUrl,
      `GET /health/live HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
    );
    expect(live.response).toMatch(/^HTTP\/1\.1 200 /);
    expect(headerOf(live.response, 'connection')).toBe('close');
    expect(live.after).toBe('');

    const refused = await exchange(t.baseUrl, postRun('{"runId":1}', 'close'));
    expect(refused.response).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(refused.response.slice(refused.response.indexOf('\r\n\r\n') + 4))).toMatchObject({
      code: 'VALIDATION_FAILED',
    });
    expect(headerOf(refused.response, 'connection')).toBe('close');
    expect(refused.after).toBe('');
  });

  it("closes the connection after a run's SSE stream ends with its terminal event, on POST /run and on a rejoin", async () => {
    const input = runInput('hello');
    const run = await exchange(t.baseUrl, postRun(JSON.stringify(input), 'close'));
    expect(run.response).toMatch(/^HTTP\/1\.1 200 /);
    // Nothing answered the second request: the connection was closed after the stream.
    expect(run.after).toBe('');
    expect(headerOf(run.response, 'content-type')).toBe('text/event-stream');
    expect(headerOf(run.response, 'connection')).toBe('close');
    const frames = parseFrames(sseOf(run.response)).frames;
    expect(frames[0].event.type).toBe('RUN_STARTED');
    expect(frames.at(-1)?.event.type).toBe('RUN_FINISHED');

    const rejoin = await exchange(
      t.baseUrl,
      `GET /io-bridge/runs/${encodeURIComponent(input.runId)}/events HTTP/1.1\r\nHost: ${host}\r\n` +
        'Accept: text/event-stream\r\nConnection: close\r\n\r\n',
    );
    expect(headerOf(rejoin.response, 'connection')).toBe('close');
    expect(parseFrames(sseOf(rejoin.response)).frames.map((f) => f.id)).toEqual(frames.map((f) => f.id));
    expect(rejoin.after).toBe('');
  });
});
