import { connect, Socket } from 'node:net';
import { eventually, runRow, startApp, TestApp } from '../support/app';
import { runInput } from '../support/sse';

/**
 * A frontend tool call whose arguments are 5 MB (more than the kernel buffers of a loopback
 * connection take), sent at once; then the run waits for the browser's result.
 */
const BIG_ARGS = JSON.stringify({ city: 'x'.repeat(5 * 1024 * 1024) });
const GET_CITY = {
  name: 'get_city',
  description: 'Asks the browser for the user city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('STREAM_WRITE_TIMEOUT_MS: a reader whose socket takes nothing', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({
      STREAM_WRITE_TIMEOUT_MS: '500',
      FRONTEND_TOOL_TIMEOUT_MS: '120000',
      MAX_BODY_BYTES: String(32 * 1024 * 1024),
      MAX_STRING_LENGTH: String(8 * 1024 * 1024),
    });
  });
  afterAll(() => t?.close());

  const closedForTimeout = async () => {
    const text = await (await fetch(`${t.baseUrl}/metrics`)).text();
    return Number(/^io_bridge_stream_closed_total\{reason="write_timeout"\} (\d+)/m.exec(text)?.[1] ?? 0);
  };

  it('is closed and counted, and its run, waiting on the browser, follows the disconnect rules (no grace: cancelled)', async () => {
    const before = await closedForTimeout();
    const input = runInput(`/tool get_city ${BIG_ARGS}`, { tools: [GET_CITY] });
    const body = JSON.stringify(input);
    const url = new URL(t.runUrl);
    const socket: Socket = connect(Number(url.port), url.hostname);
    let received = 0;
    let closed = false;
    let reading = true;
    socket.on('data', (d: Buffer) => {
      received += d.length;
      // Takes the headers and the first frames, then nothing more (until told to read again).
      if (reading && received > 1000) socket.pause();
    });
    socket.on('close', () => (closed = true));
    socket.write(
      `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\n` +
        `Accept: text/event-stream\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    try {
      await eventually(async () => ((await closedForTimeout()) > before ? true : undefined), 30_000);
      // Its run had no disconnect grace: with its only reader gone it stopped, and is recorded so.
      const row = await eventually(async () => {
        const r = await runRow(input.runId);
        return r && r.status !== 'running' && r.status !== 'waiting_for_tool' ? r : undefined;
      }, 15_000);
      expect(row).toMatchObject({ status: 'cancelled', error_code: 'CANCELLED' });
      // What the socket still holds is read; then it is over, without the run's terminal event.
      reading = false;
      socket.resume();
      await eventually(() => Promise.resolve(closed || undefined), 15_000);
      expect(received).toBeLessThan(BIG_ARGS.length);
    } finally {
      socket.destroy();
    }
  }, 60_000);

  it('leaves a reader that keeps up alone: a whole answer, nothing counted', async () => {
    const before = await closedForTimeout();
    const res = await fetch(t.runUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(runInput('/slow 5 one two three four five six')),
    });
    const text = await res.text();
    expect(text).toContain('"type":"RUN_FINISHED"');
    expect(await closedForTimeout()).toBe(before);
  });
});
