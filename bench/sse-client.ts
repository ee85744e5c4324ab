/**
 * The bench's HTTP client for AG-UI runs: the request body of a chat turn, an SSE reader and one run
 * read to its end through fetch. run-bench.ts and baseline-guard.ts measure with the same code
 * (bench/README.md, "Throughput, start latency and memory").
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

export const JSON_HEADERS = { 'content-type': 'application/json', accept: 'text/event-stream' };

/**
 * A RunAgentInput of a chat turn (it names memory, so it is stored, as io.Assist's are); `owner`
 * (forwardedProps.resourceId) lets concurrent runs come from different users, as they do.
 */
export const runBody = (text: string, threadId = `bench-${randomUUID()}`, owner?: string, agentId?: string) =>
  JSON.stringify({
    threadId,
    runId: randomUUID(),
    messages: [{ id: randomUUID(), role: 'user', content: text }],
    tools: [],
    context: [],
    forwardedProps: {
      memory: { thread: threadId },
      ...(owner ? { resourceId: owner } : {}),
      ...(agentId ? { agentId } : {}),
    },
  });

/** Parses SSE frames (`id: n\ndata: json\n\n`, `: ping` comments) as they arrive, counting events and delta text. */
export class SseReader {
  events = 0;
  deltaChars = 0;
  lastType: string | undefined;
  private buffer = '';

  constructor(private readonly onEvent?: (type: string) => void) {}

  feed(text: string): void {
    this.buffer += text;
    let start = 0;
    for (let end = this.buffer.indexOf('\n\n'); end !== -1; end = this.buffer.indexOf('\n\n', start)) {
      this.frame(this.buffer.slice(start, end));
      start = end + 2;
    }
    this.buffer = this.buffer.slice(start);
  }

  private frame(block: string): void {
    if (block.startsWith(':')) return;
    const at = block.indexOf('data: ');
    if (at === -1) throw new Error(`malformed SSE frame: ${block.slice(0, 200)}`);
    const event = JSON.parse(block.slice(at + 6)) as { type: string; delta?: string };
    this.events++;
    // `@ag-ui/mastra` streams text as TEXT_MESSAGE_CHUNK (AG-UI's shorthand for start, content, end).
    if (event.type === 'TEXT_MESSAGE_CONTENT' || event.type === 'TEXT_MESSAGE_CHUNK')
      this.deltaChars += event.delta?.length ?? 0;
    this.lastType = event.type;
    this.onEvent?.(event.type);
  }
}

export type StreamSample = { ms: number; deltas: number; events: number };

/** One run through fetch (keep-alive, like a browser), read to the end of the stream. */
export async function fetchRun(url: string, text: string): Promise<StreamSample> {
  const body = runBody(text);
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', headers: JSON_HEADERS, body });
  if (!res.ok || !res.body) throw new Error(`POST ${url}: HTTP ${res.status} ${await res.text()}`);
  const sse = new SseReader();
  const decoder = new TextDecoder();
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    sse.feed(decoder.decode(value, { stream: true }));
  }
  sse.feed(decoder.decode());
  const ms = performance.now() - t0;
  if (sse.lastType !== 'RUN_FINISHED') throw new Error(`run ended with ${sse.lastType ?? 'nothing'}`);
  return { ms, deltas: sse.deltaChars / 2, events: sse.events };
}
