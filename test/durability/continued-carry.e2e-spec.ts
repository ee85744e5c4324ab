import { db, runRowWhen, storedMessages } from '../support/app';
import { BuiltService, startBuiltService } from '../support/built-service';
import { OpenAiServer, Reply, startOpenAiServer } from '../support/openai-server';
import { PICK, postResult, rejoin } from '../support/durable';
import { Frame, memoryOf, openRun, uid } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

/**
 * A run continued on another replica (docs/durable-runs.md#continuing-a-run-on-another-replica) carries what
 * its earlier attempt had. The tokens its completed steps spent count in its end (the record, RUN_FINISHED's
 * usage, the owner's budget), it keeps the budget its claim found, and the approvals its `resume` answered
 * stay answered. Two built services on one database and a provider that streams as OpenAI does, with usage.
 */

describe('a continued run carries what its earlier attempt spent and was answered', () => {
  let server: OpenAiServer;
  const all: BuiltService[] = [];
  const start = async (extra: Record<string, string> = {}) => {
    const s = await startBuiltService({
      RUN_LEASE_MS: '3000',
      MODEL: 'openai/gpt-test',
      OPENAI_BASE_URL: server.url,
      OPENAI_API_KEY: 'test-key',
      ...extra,
    });
    all.push(s);
    return s;
  };
  beforeAll(async () => {
    server = await startOpenAiServer(() => ({ text: ['Fine'] }));
  });
  afterEach(() => all.splice(0).forEach((s) => s.kill()));
  afterAll(() => server.close());

  /**
   * A run on `a` whose first step (a frontend tool call, 30 + 10 tokens) completes and is
   * checkpointed; `a` dies in the middle of the second step; `b` continues it from its log.
   */
  async function killedAfterFirstStep(a: BuiltService, b: BuiltService, continued: Reply) {
    const threadId = uid('spent');
    const input = {
      threadId,
      runId: uid('run'),
      messages: [{ id: uid('msg'), role: 'user', content: 'pick one' }],
      tools: [PICK],
      context: [],
      forwardedProps: memoryOf(threadId, uid('owner')),
      protocolVersion: '1.0',
    };
    server.enqueue(
      {
        toolCalls: [{ id: 'call_pick_1', name: 'pick', arguments: '{}' }],
        usage: { prompt: 30, completion: 10 },
      },
      { hang: 'Half an ans' },
      continued,
    );
    const live = await openRun(`${a.base}/run`, input);
    await live.waitFor((e) => e.type === 'TOOL_CALL_END', 15_000);
    expect(await postResult(a.base, input.runId, 'call_pick_1', 'the red one')).toBeLessThan(300);
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT', 15_000);
    // The first step's checkpoint (at most a second after it completed) is written before the replica dies.
    await runRowWhen(input.runId, (row) => Boolean(row.progress));
    a.kill();
    await live.done.catch(() => undefined);
    const whole = await rejoined(b, input.runId, [...live.frames]);
    assertStreamRules(whole, input);
    return { input, whole };
  }

  /** What a client that saw `seen` gets by rejoining the run at `b`: the whole stream. */
  const rejoined = async (b: BuiltService, runId: string, seen: Frame[]): Promise<Frame[]> => [
    ...seen,
    ...(await (await rejoin(b.base, runId, seen.at(-1)!.id)).done),
  ];

  it('the tokens of the steps completed before a kill -9 count in the continued run’s usage, record and budget', async () => {
    const a = await start();
    const b = await start();
    const { input, whole } = await killedAfterFirstStep(a, b, {
      text: ['The', ' red', ' one'],
      usage: { prompt: 50, completion: 5 },
    });
    const both = {
      provider: 'openai',
      model: 'gpt-test',
      inputTokens: 80,
      outputTokens: 15,
      totalTokens: 95,
    };
    expect(whole.at(-1)!.event).toMatchObject({ type: 'RUN_FINISHED', usage: [both] });
    const { rows } = await db((q) =>
      q.query('SELECT status, attempt, usage, tokens FROM runs WHERE id = $1', [input.runId]),
    );
    expect(rows[0]).toMatchObject({ status: 'finished', attempt: 2, usage: [both] });
    expect(Number(rows[0].tokens)).toBe(95);
  }, 120_000);

  it('a continued run keeps its owner’s budget: the step that crosses it, counting the earlier attempt’s tokens, ends the run QUOTA_EXCEEDED', async () => {
    // 60 tokens: the first step spends 40, the continued one 55 more.
    const a = await start({ TOKEN_BUDGET_PER_OWNER: '60' });
    const b = await start({ TOKEN_BUDGET_PER_OWNER: '60' });
    // Without the budget, or without the first step's 40 tokens, the run would wait for this call's result.
    const { input, whole } = await killedAfterFirstStep(a, b, {
      toolCalls: [{ id: 'call_pick_2', name: 'pick', arguments: '{}' }],
      usage: { prompt: 50, completion: 5 },
    });
    expect(whole.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'QUOTA_EXCEEDED' });
    const { rows } = await db((q) =>
      q.query('SELECT status, error_code, tokens FROM runs WHERE id = $1', [input.runId]),
    );
    expect(rows[0]).toMatchObject({ status: 'error', error_code: 'QUOTA_EXCEEDED' });
    expect(Number(rows[0].tokens)).toBe(95);
  }, 120_000);

  it('an approval answered by `resume` stays answered: the tool result a killed replica showed is carried, not run again, and the model sees it', async () => {
    const a = await start();
    const b = await start();
    const threadId = uid('approved');
    const turn = (extra: Record<string, unknown>) => ({
      threadId,
      runId: uid('run'),
      tools: [],
      context: [],
      forwardedProps: memoryOf(threadId),
      protocolVersion: '1.0',
      ...extra,
    });
    server.enqueue({
      toolCalls: [{ id: 'call_note_1', name: 'publish_note', arguments: '{"text":"hello"}' }],
    });
    const asking = await openRun(
      `${a.base}/run`,
      turn({ messages: [{ id: uid('msg'), role: 'user', content: 'note it' }] }),
    );
    const interrupt = (await asking.done).at(-1)!.event.outcome.interrupts[0];
    expect(interrupt.toolCallId).toBe('call_note_1');

    // The approving run shows the tool's result, then dies in the model's answer (no step completed).
    server.enqueue({ hang: 'Published' }, { text: ['Published', ' it'] });
    const input = turn({
      messages: [],
      resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { approved: true } }],
    });
    const live = await openRun(`${a.base}/run`, input);
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT', 15_000);
    a.kill();
    await live.done.catch(() => undefined);
    const whole = await rejoined(b, input.runId, [...live.frames]);
    assertStreamRules(whole, input);
    expect(whole.at(-1)!.event.type).toBe('RUN_FINISHED');
    const results = whole.filter((f) => f.event.type === 'TOOL_CALL_RESULT');
    expect(results.map((f) => f.event.toolCallId)).toEqual(['call_note_1']);

    // The continued model call was told the tool's result.
    const told = server.requests.at(-1)!.messages.find((m) => m.role === 'tool');
    expect(told).toMatchObject({ tool_call_id: 'call_note_1' });
    expect(String(told!.content)).toContain('"published":true');
    const rows = await db((q) => storedMessages(q, threadId));
    expect(rows.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(rows[2].toolCallId).toBe('call_note_1');
  }, 120_000);
});
