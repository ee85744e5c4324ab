import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

/**
 * The stock AG-UI client's frontend tool round trip (CLIENT_PROTOCOL ag-ui, docs/clients.md): the
 * run ends at the call, the client runs the tool and sends its result as a `role:'tool'` message in
 * the next run. Measured: from that next run's POST being sent to its first TEXT_MESSAGE_CONTENT,
 * against the same for a plain run (a new user message), both as `@ag-ui/client` 1.0 sends them.
 */
export type StockRoundTripResult = Record<
  'plainStored' | 'plainNextTurn' | 'toolStored' | 'toolOnlyMessage' | 'plainStateless' | 'toolStateless',
  number[]
>;

type Event = {
  type: string;
  toolCallId?: string;
  parentMessageId?: string;
  toolCallName?: string;
  messageId?: string;
  delta?: string;
};
type Message = Record<string, unknown>;

const GET_CITY = {
  name: 'get_city',
  description: 'Asks the browser for the user city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** POST /run read to its end: its events and the ms from sending it to its first TEXT_MESSAGE_CONTENT. */
async function run(base: string, body: Record<string, unknown>): Promise<{ first: number; events: Event[] }> {
  const sent = performance.now();
  const res = await fetch(`${base}/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ tools: [GET_CITY], context: [], protocolVersion: '1.0', ...body }),
  });
  if (!res.ok || !res.body) throw new Error(`run refused: ${res.status} ${await res.text()}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const events: Event[] = [];
  let buffer = '';
  let first = NaN;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const data = buffer
        .slice(0, cut)
        .split('\n')
        .find((l) => l.startsWith('data: '));
      buffer = buffer.slice(cut + 2);
      if (!data) continue;
      const event = JSON.parse(data.slice(6)) as Event;
      if (event.type === 'TEXT_MESSAGE_CONTENT' && Number.isNaN(first)) first = performance.now() - sent;
      events.push(event);
    }
  }
  if (events.at(-1)?.type !== 'RUN_FINISHED')
    throw new Error(`run ended with ${events.at(-1)?.type}: ${events.map((e) => e.type).join(', ')}`);
  return { first, events };
}

/** ms of the first content, which must have come. */
const firstOf = (r: { first: number; events: Event[] }) => {
  if (Number.isNaN(r.first)) throw new Error(`no content: ${r.events.map((e) => e.type).join(', ')}`);
  return r.first;
};

/** A plain run: one user message, on a new stored thread (`stored`) or stateless. */
async function plain(base: string, stored: boolean): Promise<number> {
  const threadId = `st-${randomUUID()}`;
  return firstOf(
    await run(base, {
      threadId,
      runId: `st-${randomUUID()}`,
      messages: [{ id: randomUUID(), role: 'user', content: 'hello' }],
      forwardedProps: stored ? { memory: { thread: threadId } } : {},
    }),
  );
}

/** A plain second turn on a stored thread: the whole history again (as `@ag-ui/client` sends it) and a new user message. */
async function plainNextTurn(base: string): Promise<number> {
  const threadId = `st-${randomUUID()}`;
  const forwardedProps = { memory: { thread: threadId } };
  const user = { id: randomUUID(), role: 'user', content: 'hello' };
  const first = await run(base, { threadId, runId: `st-${randomUUID()}`, messages: [user], forwardedProps });
  const answer = {
    id: first.events.find((e) => e.type === 'TEXT_MESSAGE_START')?.messageId ?? randomUUID(),
    role: 'assistant',
    content: first.events
      .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
      .map((e) => e.delta)
      .join(''),
  };
  const next = { id: randomUUID(), role: 'user', content: 'hello again' };
  return firstOf(
    await run(base, {
      threadId,
      runId: `st-${randomUUID()}`,
      messages: [user, answer, next],
      forwardedProps,
    }),
  );
}

/**
 * The loop: a run that ends at the frontend call (outcome.pendingToolCallIds), then the timed one with
 * the tool message: after the whole history (`whole`, as `@ag-ui/client` sends it) or alone (a client
 * that sends only what is new; stored threads only).
 */
async function toolLoop(base: string, stored: boolean, whole: boolean): Promise<number> {
  const threadId = `st-${randomUUID()}`;
  const forwardedProps = { clientProtocol: 'ag-ui', ...(stored ? { memory: { thread: threadId } } : {}) };
  const user = { id: randomUUID(), role: 'user', content: '/tool get_city {"city":"x"}' };
  const first = await run(base, {
    threadId,
    runId: `st-${randomUUID()}`,
    messages: [user],
    forwardedProps,
  });
  const start = first.events.find((e) => e.type === 'TOOL_CALL_START');
  if (!start?.toolCallId) throw new Error(`no tool call: ${first.events.map((e) => e.type).join(', ')}`);
  const tool: Message = { id: randomUUID(), role: 'tool', toolCallId: start.toolCallId, content: 'Lyon' };
  const call: Message = {
    id: start.parentMessageId ?? randomUUID(),
    role: 'assistant',
    toolCalls: [
      {
        id: start.toolCallId,
        type: 'function',
        function: { name: start.toolCallName, arguments: '{"city":"x"}' },
      },
    ],
  };
  return firstOf(
    await run(base, {
      threadId,
      runId: `st-${randomUUID()}`,
      messages: whole ? [user, call, tool] : [tool],
      forwardedProps,
    }),
  );
}

/** `rounds` of each, interleaved (after a few warm-up rounds), one at a time. */
export async function benchStockRoundTrip(base: string, rounds = 50): Promise<StockRoundTripResult> {
  const result: StockRoundTripResult = {
    plainStored: [],
    plainNextTurn: [],
    toolStored: [],
    toolOnlyMessage: [],
    plainStateless: [],
    toolStateless: [],
  };
  for (let i = 0; i < 5 + rounds; i++) {
    const round = {
      plainStored: await plain(base, true),
      plainNextTurn: await plainNextTurn(base),
      toolStored: await toolLoop(base, true, true),
      toolOnlyMessage: await toolLoop(base, true, false),
      plainStateless: await plain(base, false),
      toolStateless: await toolLoop(base, false, true),
    };
    if (i < 5) continue;
    for (const [key, ms] of Object.entries(round)) result[key as keyof StockRoundTripResult].push(ms);
  }
  return result;
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};

/** The loop's run against the plain one may be this much slower at p50 and still count as "as fast". */
export const STOCK_ROUND_TRIP_TARGET = 1.2;

export function formatStockRoundTrip(r: StockRoundTripResult): string {
  const row = (name: string, v: number[], against?: number[]) => {
    const ratio = against ? quantile(v, 0.5) / quantile(against, 0.5) : undefined;
    return (
      `${name.padEnd(52)}${quantile(v, 0.5).toFixed(2).padStart(9)}${quantile(v, 0.99).toFixed(2).padStart(9)}` +
      `${Math.max(...v)
        .toFixed(2)
        .padStart(9)}` +
      (ratio === undefined
        ? ''
        : `${ratio.toFixed(2).padStart(8)}  ${ratio <= STOCK_ROUND_TRIP_TARGET ? 'met' : 'MISSED'}`)
    );
  };
  return [
    `9. stock AG-UI client round trip (clientProtocol ag-ui, 1.x): next run's POST sent -> its first TEXT_MESSAGE_CONTENT (${r.plainStored.length} runs each)`,
    `${'run'.padEnd(52)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'max ms'.padStart(9)}${'p50/plain'.padStart(10)} (against the plain run of the same kind above; target <= ${STOCK_ROUND_TRIP_TARGET})`,
    row('plain run, stored (new thread, one user message)', r.plainStored),
    row('plain run, stored (second user message, history)', r.plainNextTurn),
    row('tool message after the whole history, stored', r.toolStored, r.plainNextTurn),
    row('tool message alone, stored', r.toolOnlyMessage, r.plainNextTurn),
    row('plain run, stateless', r.plainStateless),
    row('tool message after the whole history, stateless', r.toolStateless, r.plainStateless),
  ].join('\n');
}
