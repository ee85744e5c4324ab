import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startApp, TestApp } from '../support/app';
import { startOpenAiServer, OpenAiServer } from '../support/openai-server';
import { runToFrames } from '../support/sse';

/**
 * What the model receives for a long agent loop in the history: the exact provider request, pinned
 * byte for byte (recorded on the code before any change to how the history is handed over). Mastra's
 * MessageList merges consecutive assistant and tool messages before the call; the merge drops a text
 * the merged run already holds (the repeated "Let me check.") and a step without a text of its own
 * then joins the step before it as parallel calls. `RECORD_PROVIDER_REQUESTS=1` rewrites the
 * expectation.
 */
const EXPECTED = join(__dirname, '..', 'fixtures', 'provider-requests', 'many-tool-turns.json');
const TURNS = 40;

/** A user question, TURNS assistant steps each with a tool call and its result, a user follow-up. */
function history(): unknown[] {
  const messages: unknown[] = [{ id: 'msg-q', role: 'user', content: 'What is 2 to the power of 40?' }];
  for (let i = 0; i < TURNS; i++) {
    // Every fourth step says the same thing; the others say something of their own.
    const text = i % 4 === 3 ? 'Let me check.' : `Step ${i}: doubling ${2 ** i}.`;
    messages.push({
      id: `msg-a${i}`,
      role: 'assistant',
      content: i % 5 === 4 ? '' : text,
      toolCalls: [
        {
          id: `call_${i}`,
          type: 'function',
          function: { name: 'calculate', arguments: JSON.stringify({ expression: `${2 ** i}*2` }) },
        },
      ],
    });
    const result = i % 7 === 6 ? 'not a number' : JSON.stringify({ value: 2 ** (i + 1) });
    messages.push({ id: `msg-t${i}`, role: 'tool', toolCallId: `call_${i}`, content: result });
  }
  messages.push({ id: 'msg-f', role: 'user', content: 'So what is it?' });
  return messages;
}

describe('a history with a long agent loop', () => {
  let server: OpenAiServer;
  let t: TestApp;
  beforeAll(async () => {
    server = await startOpenAiServer(() => ({ text: ['2^40 is 1099511627776'] }));
    t = await startApp({ MODEL: 'openai/gpt-test', OPENAI_BASE_URL: server.url, OPENAI_API_KEY: 'test-key' });
  });
  afterAll(async () => {
    await t.close();
    await server.close();
  });

  it('reaches the provider as the exact request recorded for it', async () => {
    const input = {
      threadId: 'thread-many-tool-turns',
      runId: 'run-many-tool-turns',
      messages: history(),
      tools: [],
      context: [],
    };
    const { frames } = await runToFrames(t.runUrl, input);
    expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_FINISHED' });
    // The request as the provider got it, serialized again: the bytes of its JSON, key order included.
    const sent = JSON.stringify(server.requests.at(-1));
    if (process.env.RECORD_PROVIDER_REQUESTS === '1') {
      writeFileSync(EXPECTED, `${JSON.stringify(server.requests.at(-1), null, 2)}\n`);
    }
    expect(sent).toBe(JSON.stringify(JSON.parse(readFileSync(EXPECTED, 'utf8'))));
  });
});
