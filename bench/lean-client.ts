import { connect, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

/** Milliseconds from the request's write to its first RUN_STARTED and its first TEXT_MESSAGE_CONTENT. */
export type LeanSample = { started: number; firstDelta: number };

const STARTED = '"type":"RUN_STARTED"';
/**
 * First content: the service's TEXT_MESSAGE_CONTENT, or the TEXT_MESSAGE_CHUNK a plain `@ag-ui/mastra`
 * server sends (the persisting peer of bench/README.md, "Baseline guard", is timed with this client too).
 */
const CONTENT = ['"type":"TEXT_MESSAGE_CONTENT"', '"type":"TEXT_MESSAGE_CHUNK"'];
const LONGEST = Math.max(...CONTENT.map((m) => m.length));
const FINISHED = '"type":"RUN_FINISHED"';
/** The last chunk of a chunked HTTP/1.1 body. */
const BODY_END = '\r\n0\r\n\r\n';

/**
 * A load generator that costs the machine as little as possible, for latency measured on the same
 * two vCPUs as the server and its database: keep-alive connections opened beforehand (as an
 * ingress keeps them to a pod), requests written as prepared bytes, and responses scanned for
 * the frames timed instead of parsed. What it measures is the server's own time from a request
 * to its events; a client that spends a millisecond of CPU per request here (node:http with a new
 * connection each) takes that millisecond from the server and the database.
 */
export class WarmConnections {
  private constructor(
    private readonly url: URL,
    private readonly sockets: Socket[],
  ) {}

  static async open(url: string, count: number): Promise<WarmConnections> {
    const target = new URL(url);
    const sockets = await Promise.all(
      Array.from(
        { length: count },
        () =>
          new Promise<Socket>((resolve, reject) => {
            const socket = connect({ host: target.hostname, port: Number(target.port), noDelay: true });
            socket.setEncoding('latin1');
            socket.once('connect', () => resolve(socket));
            socket.once('error', reject);
          }),
      ),
    );
    return new WarmConnections(target, sockets);
  }

  /** Writes one request per connection at once; resolves when every response has ended with RUN_FINISHED. */
  async round(bodies: string[]): Promise<LeanSample[]> {
    if (bodies.length !== this.sockets.length) throw new Error('one body per connection');
    const requests = bodies.map((body) =>
      Buffer.from(
        `POST ${this.url.pathname} HTTP/1.1\r\nhost: ${this.url.host}\r\ncontent-type: application/json\r\n` +
          `accept: text/event-stream\r\nconnection: keep-alive\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      ),
    );
    const done = this.sockets.map((socket) => this.response(socket));
    const t0 = performance.now();
    for (const [i, socket] of this.sockets.entries()) socket.write(requests[i]);
    const times = await Promise.all(done);
    return times.map((t) => ({ started: t.started - t0, firstDelta: t.firstDelta - t0 }));
  }

  close(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  private response(socket: Socket): Promise<LeanSample> {
    return new Promise((resolve, reject) => {
      let text = '';
      let started = NaN;
      let firstDelta = NaN;
      const fail = (why: string) => {
        socket.off('data', onData);
        socket.off('close', onClose);
        reject(new Error(why));
      };
      const onClose = () => fail('the connection closed before the response ended');
      const onData = (chunk: string) => {
        // A frame may span two chunks: search from just before the new text.
        const from = Math.max(0, text.length - LONGEST);
        text += chunk;
        if (Number.isNaN(started) && text.indexOf(STARTED, from) !== -1) started = performance.now();
        if (Number.isNaN(firstDelta) && CONTENT.some((m) => text.indexOf(m, from) !== -1))
          firstDelta = performance.now();
        if (!text.endsWith(BODY_END)) return;
        socket.off('data', onData);
        socket.off('close', onClose);
        if (!text.startsWith('HTTP/1.1 200')) return fail(`HTTP ${text.slice(9, 12)}: ${text.slice(0, 300)}`);
        if (!text.includes(FINISHED)) return fail('the stream ended without RUN_FINISHED');
        resolve({ started, firstDelta });
      };
      socket.on('data', onData);
      socket.once('close', onClose);
    });
  }
}
