import { readSse } from '../src/sse';

/** A 200 response whose body arrives in exactly these chunks (strings as UTF-8, or raw bytes). */
function responseOf(chunks: (string | Uint8Array)[], status = 200): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks)
        controller.enqueue(typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk);
      controller.close();
    },
  });
  return new Response(body, { status, headers: { 'content-type': 'text/event-stream' } });
}

async function read(chunks: (string | Uint8Array)[]) {
  const stream = readSse(responseOf(chunks));
  await stream.done;
  return stream;
}

const started = '{"type":"RUN_STARTED","threadId":"t","runId":"r"}';
const finished = '{"type":"RUN_FINISHED","threadId":"t","runId":"r"}';

describe('the conformance kit reads SSE as the SSE specification does', () => {
  it('reads events without id: lines, as AG-UI servers send them', async () => {
    const stream = await read([`data: ${started}\n\ndata: ${finished}\n\n`]);
    expect(stream.events.map((e) => e.type)).toEqual(['RUN_STARTED', 'RUN_FINISHED']);
    expect(stream.frames).toEqual([{ data: started }, { data: finished }]);
    expect(stream.problems).toEqual([]);
    expect(stream.ended()).toBe(true);
  });

  it('reads id: and event: lines and keeps them on the frame', async () => {
    const stream = await read([`id: 1\nevent: message\ndata: ${started}\n\nid: 2\ndata: ${finished}\n\n`]);
    expect(stream.frames).toEqual([
      { id: '1', event: 'message', data: started },
      { id: '2', data: finished },
    ]);
  });

  it.each([
    ['CRLF', '\r\n'],
    ['CR', '\r'],
    ['LF', '\n'],
  ])('reads %s line ends', async (_, eol) => {
    const stream = await read([`data: ${started}${eol}${eol}data: ${finished}${eol}${eol}`]);
    expect(stream.events.map((e) => e.type)).toEqual(['RUN_STARTED', 'RUN_FINISHED']);
    expect(stream.problems).toEqual([]);
  });

  it('reads a CRLF split between two chunks as one line end', async () => {
    const stream = await read([`data: ${started}\r`, '\n\r', `\ndata: ${finished}\r\n\r\n`]);
    expect(stream.events.map((e) => e.type)).toEqual(['RUN_STARTED', 'RUN_FINISHED']);
  });

  it('joins multi-line data: with LF, so JSON over several lines is one event', async () => {
    const stream = await read([
      'data: {"type":"RUN_STARTED",\ndata: "threadId":"t",\ndata: "runId":"r"}\n\n',
    ]);
    expect(stream.frames[0].data).toBe('{"type":"RUN_STARTED",\n"threadId":"t",\n"runId":"r"}');
    expect(stream.events).toEqual([{ type: 'RUN_STARTED', threadId: 't', runId: 'r' }]);
  });

  it('keeps comments apart from events, and ignores retry:', async () => {
    const stream = await read([`: hello\nretry: 1000\n\ndata: ${started}\n\n: ping\n\n`]);
    expect(stream.comments.map((c) => c.trim())).toEqual(['hello', 'ping']);
    expect(stream.events.map((e) => e.type)).toEqual(['RUN_STARTED']);
    expect(stream.problems).toEqual([]);
  });

  it('reads data: without a space after the colon, and drops a leading BOM', async () => {
    const stream = await read([`\uFEFFdata:${started}\n\n`]);
    expect(stream.events.map((e) => e.type)).toEqual(['RUN_STARTED']);
  });

  it('reads a UTF-8 character split between two chunks', async () => {
    const bytes = new TextEncoder().encode(
      'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"é🙂"}\n\n',
    );
    const cut = bytes.indexOf(0xf0) + 2;
    const stream = await read([bytes.slice(0, cut), bytes.slice(cut)]);
    expect(stream.events[0].delta).toBe('é🙂');
  });

  it('reports data that is not an AG-UI event, and an event the stream cut off, without dispatching it', async () => {
    const stream = await read([`data: not json\n\ndata: [1]\n\ndata: ${started}\n\ndata: ${finished}`]);
    expect(stream.events.map((e) => e.type)).toEqual(['RUN_STARTED']);
    expect(stream.problems).toEqual([
      'event 1: data is not JSON: not json',
      'event 2: data is not an AG-UI event (an object with a type): [1]',
      `the stream ended in the middle of an event (no blank line after it), so a client drops it: ${finished}`,
    ]);
  });

  it('waits for an event as it streams, and rejects when the stream ends without it', async () => {
    const stream = readSse(responseOf([`data: ${started}\n\n`]));
    await expect(stream.waitFor((e) => e.type === 'RUN_STARTED')).resolves.toMatchObject({ runId: 'r' });
    await expect(stream.waitFor((e) => e.type === 'RUN_FINISHED')).rejects.toThrow(
      'the stream ended without it; it had: RUN_STARTED',
    );
  });

  it('reads a refused run at once, with no events', async () => {
    const stream = readSse(responseOf(['{"code":"NOPE"}'], 409));
    await stream.done;
    expect(stream.events).toEqual([]);
    expect(stream.raw()).toBe('{"code":"NOPE"}');
  });
});
