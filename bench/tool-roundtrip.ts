import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

export type RoundTripResult = { sameInstance: number[]; crossInstance: number[] };

const GET_CITY = {
  name: 'get_city',
  description: 'Asks the browser for the user city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/**
 * One frontend-tool run on `runBase`: at TOOL_CALL_END the result is posted to `postBase` (the same
 * instance or another one on the same database); returns ms from the POST being sent to
 * TOOL_CALL_RESULT arriving on the stream.
 */
async function roundTrip(runBase: string, postBase: string): Promise<number> {
  const runId = `rt-${randomUUID()}`;
  const res = await fetch(`${runBase}/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({
      threadId: `rt-${randomUUID()}`,
      runId,
      messages: [{ id: randomUUID(), role: 'user', content: '/tool get_city {"city":"x"}' }],
      tools: [GET_CITY],
      context: [],
    }),
  });
  if (!res.ok || !res.body) throw new Error(`run refused: ${res.status}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let posted = NaN;
  let result = NaN;
  let last = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = frame.split('\n').find((l) => l.startsWith('data: '));
      if (!data) continue;
      const event = JSON.parse(data.slice(6)) as { type: string; toolCallId?: string };
      last = event.type;
      if (event.type === 'TOOL_CALL_END') {
        posted = performance.now();
        const post = await fetch(`${postBase}/runs/${runId}/tool-calls/${event.toolCallId}/result`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ content: { city: 'Lyon' } }),
        });
        if (post.status !== 202) throw new Error(`result refused: ${post.status}`);
      }
      if (event.type === 'TOOL_CALL_RESULT' && Number.isNaN(result)) result = performance.now() - posted;
    }
  }
  if (last !== 'RUN_FINISHED' || Number.isNaN(result))
    throw new Error(`round trip failed (ended with ${last})`);
  return result;
}

/** `rounds` measured round trips on one instance and across two (after a few warm-up ones). */
export async function benchToolRoundTrip(
  baseA: string,
  baseB: string,
  rounds = 50,
): Promise<RoundTripResult> {
  for (let i = 0; i < 5; i++) {
    await roundTrip(baseA, baseA);
    await roundTrip(baseA, baseB);
  }
  const sameInstance: number[] = [];
  const crossInstance: number[] = [];
  for (let i = 0; i < rounds; i++) {
    sameInstance.push(await roundTrip(baseA, baseA));
    crossInstance.push(await roundTrip(baseA, baseB));
  }
  return { sameInstance, crossInstance };
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};

export function formatToolRoundTrip(r: RoundTripResult): string {
  const row = (name: string, v: number[]) =>
    `${name.padEnd(34)}${quantile(v, 0.5).toFixed(2).padStart(9)}${quantile(v, 0.99).toFixed(2).padStart(9)}${Math.max(
      ...v,
    )
      .toFixed(2)
      .padStart(9)}`;
  return [
    `6. frontend tool round trip: result POST sent -> TOOL_CALL_RESULT received (${r.sameInstance.length} runs each)`,
    `${'path'.padEnd(34)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'max ms'.padStart(9)}`,
    row('same instance', r.sameInstance),
    row('across two instances (NOTIFY)', r.crossInstance),
  ].join('\n');
}
