import { HttpAgent } from '@ag-ui/client';
import type { Check, CheckContext } from './check';
import {
  accepted,
  body,
  brief,
  finished,
  listIn,
  must,
  ofType,
  plainRun,
  sequence,
  shownText,
  toolCalls,
} from './check-support';
import { kitId } from './http';
import type { RunStream } from './http';
import { FRONTEND_TOOL } from './options';
import { PROTOCOL_STREAM_RULES, streamRule } from './stream-rules';

/** The protocol's words each protocol check quotes: a table row as `cell | cell`, bullets joined by `; `. */
const SEED = {
  response: 'response: text/event-stream',
  events:
    'The current bridge contract uses this AG-UI event subset: … ' +
    'Run lifecycle | RUN_STARTED, RUN_FINISHED, RUN_ERROR; ' +
    'Text streaming | TEXT_MESSAGE_START, TEXT_MESSAGE_CONTENT, TEXT_MESSAGE_END; ' +
    'Tool lifecycle | TOOL_CALL_START, TOOL_CALL_ARGS, TOOL_CALL_END, TOOL_CALL_RESULT; ' +
    'Step markers | STEP_STARTED, STEP_FINISHED',
  unknownKeys: 'Unknown keys should be tolerated and, when safe, passed through rather than rejected.',
  roles:
    'activity messages are frontend-only markers and must not be forwarded to the model; reasoning messages ' +
    'may be present in history, but must not be forwarded to the model',
  serverTool:
    'When the backend executes the tool itself, it emits TOOL_CALL_RESULT for that toolCallId. Frontends must ' +
    'not execute that tool again locally.',
  frontendTool:
    '1. The backend emits TOOL_CALL_START, TOOL_CALL_ARGS, and TOOL_CALL_END. 2. The frontend executes the ' +
    'tool locally after TOOL_CALL_END. 3. The frontend submits the result with POST ' +
    '/runs/:runId/tool-calls/:toolCallId/result. 4. The backend resolves the pending tool execution inside ' +
    'the same run. 5. Mastra emits TOOL_CALL_RESULT and continues reasoning with memory intact.',
  mixed:
    'The protocol allows both models in the same turn. Frontend clients must execute only the locally owned ' +
    'tools they recognize and leave all visible TOOL_CALL_RESULT events to the backend stream.',
  replay: 'For replayable tool history, backends must preserve: assistant toolCalls; tool-message toolCallId',
  agentId: 'agentId | Select the backend agent',
};

const SUBSET = new Set([
  'RUN_STARTED',
  'RUN_FINISHED',
  'RUN_ERROR',
  'TEXT_MESSAGE_START',
  'TEXT_MESSAGE_CONTENT',
  'TEXT_MESSAGE_END',
  'TOOL_CALL_START',
  'TOOL_CALL_ARGS',
  'TOOL_CALL_END',
  'TOOL_CALL_RESULT',
  'STEP_STARTED',
  'STEP_FINISHED',
]);

/**
 * Runs `fn` with console.error held back: @ag-ui/client logs each stream it rejects there, and the
 * report already shows the error.
 */
async function quietly<T>(fn: () => Promise<T>): Promise<T> {
  const error = console.error;
  console.error = () => undefined;
  try {
    return await fn();
  } finally {
    console.error = error;
  }
}

/** The protocol's stream rules (and AG-UI 1.0's), as checks that judge every stream the kit read. */
export const STREAM_RULES = PROTOCOL_STREAM_RULES.map(streamRule);

const RULE_IDS = STREAM_RULES.map((r) => r.id);

const LEVEL_1: Check[] = [
  {
    id: 'L1.event-stream',
    level: 1,
    title: 'POST /run answers 200 with Content-Type text/event-stream',
    source: { kind: 'protocol', clause: SEED.response },
    run: async (ctx) => {
      const stream = await plainRun(ctx);
      const type = stream.res.headers.get('content-type') ?? '(none)';
      must(/^text\/event-stream\b/i.test(type), `200 with Content-Type ${type}`);
      return `200, Content-Type ${type}`;
    },
  },
  {
    id: 'L1.sse-events',
    level: 1,
    title: 'the body is an SSE stream whose every event holds one AG-UI event as JSON in its data',
    source: {
      kind: 'ag-ui',
      clause: 'the SSE transport: each AG-UI event is one SSE event whose data is the event as JSON',
    },
    run: async (ctx) => {
      const stream = await plainRun(ctx);
      must(stream.ended(), 'the stream did not end');
      must(stream.events.length > 0, `no SSE event in the body: ${brief(stream.raw())}`);
      must(stream.problems.length === 0, stream.problems.join('\n'));
      const ids = stream.frames.filter((f) => f.id !== undefined).length;
      const named = stream.frames.filter((f) => f.event !== undefined).length;
      return `${stream.frames.length} SSE events (${ids} with id:, ${named} with event:, ${stream.comments.length} comments), each one AG-UI event: ${sequence(stream.events)}`;
    },
  },
  {
    id: 'L1.answer-text',
    level: 1,
    title: 'a text prompt is answered with an assistant text message (TEXT_MESSAGE_START/CONTENT/END)',
    source: {
      kind: 'protocol',
      clause: 'Text streaming | TEXT_MESSAGE_START, TEXT_MESSAGE_CONTENT, TEXT_MESSAGE_END',
    },
    run: async (ctx) => {
      const { events } = await plainRun(ctx);
      const starts = ofType(events, 'TEXT_MESSAGE_START');
      must(starts.length > 0, `no TEXT_MESSAGE_START: ${sequence(events)}`);
      const roles = starts.map((s) => s.role ?? 'assistant');
      must(
        roles.every((r) => r === 'assistant'),
        `TEXT_MESSAGE_START with role ${roles.join(', ')}`,
      );
      const text = shownText(events);
      must(/\S/.test(text), `the deltas hold no text: ${brief(text)}`);
      return `${starts.length} assistant message(s): ${brief(text, 120)}`;
    },
  },
  {
    id: 'L1.history-roles',
    level: 1,
    title: 'accepts activity and reasoning messages in the history and runs',
    source: { kind: 'protocol', clause: SEED.roles },
    run: async (ctx) => {
      const input = body(ctx, ctx.options.prompts.text);
      input.messages = [
        { id: kitId('activity'), role: 'activity', activityType: 'conformance', content: { step: 1 } },
        { id: kitId('reasoning'), role: 'reasoning', content: 'thinking about it' },
        ...input.messages,
      ];
      const stream = await ctx.client.run(input);
      accepted(stream);
      finished(stream);
      return `200 and ${sequence(stream.events)}`;
    },
  },
  {
    id: 'L1.unknown-forwarded-props',
    level: 1,
    required: false,
    title: 'tolerates unknown forwardedProps keys',
    source: { kind: 'protocol', clause: SEED.unknownKeys },
    run: async (ctx) => {
      const input = body(ctx, ctx.options.prompts.text);
      input.forwardedProps = { ...input.forwardedProps, conformanceUnknownKey: { nested: [1, 'two'] } };
      const stream = await ctx.client.run(input);
      accepted(stream);
      finished(stream);
      return `forwardedProps.conformanceUnknownKey: 200 and ${sequence(stream.events)}`;
    },
  },
  {
    id: 'L1.event-subset',
    level: 1,
    final: true,
    required: false,
    title: "uses the protocol's AG-UI event subset",
    source: { kind: 'protocol', clause: SEED.events },
    run: (ctx) => {
      const used = new Set(ctx.client.runs.flatMap((s) => s.events.map((e) => String(e.type))));
      const other = [...used].filter((t) => !SUBSET.has(t));
      must(other.length === 0, `also ${other.join(', ')}`);
      return Promise.resolve(`used ${[...used].join(', ')}`);
    },
  },
  {
    id: 'L1.ag-ui-client',
    level: 1,
    title: 'the official AG-UI client (@ag-ui/client HttpAgent) runs it and rebuilds the assistant message',
    source: {
      kind: 'ag-ui',
      clause: 'a stream the reference client @ag-ui/client 1.0 accepts (it verifies the event order)',
    },
    after: [...RULE_IDS, 'L1.sse-events'],
    run: async (ctx) => {
      const agent = new HttpAgent({
        url: `${ctx.client.base}/run`,
        headers: ctx.client.headers,
        threadId: kitId('thread'),
      });
      agent.addMessage({ id: kitId('msg'), role: 'user', content: ctx.options.prompts.text });
      const errors: unknown[] = [];
      const { newMessages } = await quietly(() =>
        agent.runAgent(
          {
            runId: kitId('run'),
            forwardedProps: ctx.options.agentId ? { agentId: ctx.options.agentId } : {},
          },
          { onRunErrorEvent: ({ event }) => void errors.push(event) },
        ),
      );
      must(errors.length === 0, `RUN_ERROR: ${brief(errors)}`);
      const text = newMessages
        .filter((m) => m.role === 'assistant')
        .map((m) => (typeof m.content === 'string' ? m.content : ''))
        .join('');
      must(/\S/.test(text), `no assistant text among ${brief(newMessages)}`);
      return `assistant message rebuilt: ${brief(text, 120)}`;
    },
  },
];

/** Waits for the kit's frontend tool call to end in a live stream; resolves with its START. */
async function frontendCall(stream: RunStream) {
  const start = await stream.waitFor(
    (e) => e.type === 'TOOL_CALL_START' && e.toolCallName === FRONTEND_TOOL.name,
  );
  await stream.waitFor((e) => e.type === 'TOOL_CALL_END' && e.toolCallId === start.toolCallId);
  return start;
}

const LEVEL_2: Check[] = [
  {
    id: 'L2.server-tool',
    level: 2,
    title:
      'a server tool call streams TOOL_CALL_START/ARGS/END, then one TOOL_CALL_RESULT from the backend, then the answer',
    source: { kind: 'protocol', clause: SEED.serverTool },
    run: async (ctx) => {
      const stream = await serverToolRun(ctx);
      const { events } = stream;
      const calls = toolCalls(events);
      must(calls.length > 0, `no tool call: ${sequence(events)}`);
      for (const call of calls) {
        must(call.endIndex >= 0, `tool call ${call.name} never ended: ${sequence(events)}`);
        must(
          call.results.length === 1,
          `tool call ${call.name}: ${call.results.length} TOOL_CALL_RESULT events: ${sequence(events)}`,
        );
        must(
          events.indexOf(call.results[0]) > call.endIndex,
          `TOOL_CALL_RESULT of ${call.name} before its TOOL_CALL_END`,
        );
      }
      const last = Math.max(...calls.map((c) => events.indexOf(c.results[0])));
      must(
        ofType(events.slice(last), 'TEXT_MESSAGE_CONTENT').length > 0,
        `no answer after the result: ${sequence(events)}`,
      );
      finished(stream);
      return calls
        .map((c) => `${c.name}(${brief(c.args, 80)}) → ${brief(c.results[0].content, 80)}`)
        .concat(`then ${brief(shownText(events.slice(last)), 80)}`)
        .join('; ');
    },
  },
  {
    id: 'L2.frontend-tool',
    level: 2,
    title:
      'a frontend tool call waits, inside the run, for POST /runs/:runId/tool-calls/:toolCallId/result; then TOOL_CALL_RESULT and the answer',
    source: { kind: 'protocol', clause: SEED.frontendTool },
    run: async (ctx) => {
      const input = body(ctx, ctx.options.prompts.frontendTool, { tools: [FRONTEND_TOOL] });
      const stream = await ctx.client.openRun(input);
      accepted(stream);
      const start = await frontendCall(stream);
      must(
        !stream.events.some((e) => e.type === 'TOOL_CALL_RESULT' && e.toolCallId === start.toolCallId),
        'TOOL_CALL_RESULT before the frontend posted one',
      );
      must(!stream.ended(), `the run ended before the result was posted: ${sequence(stream.events)}`);
      const posted = await ctx.client.postToolResult(input.runId, start.toolCallId, {
        content: { answer: 'conformance-42' },
      });
      must(
        posted.status >= 200 && posted.status < 300,
        `the result post answered ${posted.status} ${brief(posted.body)}`,
      );
      await stream.done;
      const { events } = stream;
      const results = ofType(events, 'TOOL_CALL_RESULT').filter((e) => e.toolCallId === start.toolCallId);
      must(results.length === 1, `${results.length} TOOL_CALL_RESULT for the call: ${sequence(events)}`);
      must(
        String(results[0].content).includes('conformance-42'),
        `TOOL_CALL_RESULT content ${brief(results[0].content)} is not the posted result`,
      );
      must(
        ofType(events.slice(events.indexOf(results[0])), 'TEXT_MESSAGE_CONTENT').length > 0,
        `no answer after the result: ${sequence(events)}`,
      );
      finished(stream);
      return `waited for the post (${posted.status}); then ${sequence(events.slice(events.indexOf(results[0])))}`;
    },
  },
  {
    id: 'L2.mixed-turn',
    level: 2,
    title:
      'a turn with a server tool and a frontend tool: each call gets exactly one result, and the run finishes',
    source: { kind: 'protocol', clause: SEED.mixed },
    run: async (ctx) => {
      const input = body(ctx, ctx.options.prompts.mixed, { tools: [FRONTEND_TOOL] });
      const stream = await ctx.client.openRun(input);
      accepted(stream);
      const start = await frontendCall(stream);
      const posted = await ctx.client.postToolResult(input.runId, start.toolCallId, {
        content: 'Lyon is in France',
      });
      must(posted.status >= 200 && posted.status < 300, `the result post answered ${posted.status}`);
      await stream.done;
      const calls = toolCalls(stream.events);
      must(
        calls.some((c) => c.name !== FRONTEND_TOOL.name),
        `no server tool call: ${sequence(stream.events)}`,
      );
      for (const call of calls)
        must(call.results.length === 1, `${call.name}: ${call.results.length} results`);
      finished(stream);
      return calls.map((c) => `${c.name}: 1 result`).join(', ');
    },
  },
  {
    id: 'L2.ag-ui-client-tools',
    level: 2,
    title:
      'the official AG-UI client drives the frontend tool loop: assistant toolCalls, the tool message, then the answer',
    source: {
      kind: 'ag-ui',
      clause: 'messages rebuilt by @ag-ui/client 1.0 from the stream (assistant toolCalls, tool message)',
    },
    after: [...RULE_IDS, 'L1.sse-events', 'L1.ag-ui-schema', 'L2.frontend-tool'],
    run: async (ctx) => {
      const agent = new HttpAgent({
        url: `${ctx.client.base}/run`,
        headers: ctx.client.headers,
        threadId: kitId('thread'),
      });
      agent.addMessage({ id: kitId('msg'), role: 'user', content: ctx.options.prompts.frontendTool });
      const runId = kitId('run');
      const posts: Promise<{ status: number }>[] = [];
      const errors: unknown[] = [];
      const { newMessages } = await quietly(() =>
        agent.runAgent(
          {
            runId,
            tools: [FRONTEND_TOOL],
            forwardedProps: ctx.options.agentId ? { agentId: ctx.options.agentId } : {},
          },
          {
            onRunErrorEvent: ({ event }) => void errors.push(event),
            onToolCallEndEvent: ({ event, toolCallName, toolCallArgs }) => {
              if (toolCallName === FRONTEND_TOOL.name)
                posts.push(
                  ctx.client.postToolResult(runId, event.toolCallId, {
                    content: `found ${String(toolCallArgs.query)}`,
                  }),
                );
            },
          },
        ),
      );
      must(errors.length === 0, `RUN_ERROR: ${brief(errors)}`);
      must(posts.length > 0, `the client saw no ${FRONTEND_TOOL.name} call`);
      const statuses = (await Promise.all(posts)).map((p) => p.status);
      must(
        statuses.every((s) => s >= 200 && s < 300),
        `result posts answered ${statuses.join(', ')}`,
      );
      const call = newMessages.find((m) => m.role === 'assistant' && m.toolCalls?.length) as any;
      must(call, `no assistant message with toolCalls: ${brief(newMessages)}`);
      must(call.toolCalls[0].function.name === FRONTEND_TOOL.name, `toolCalls: ${brief(call.toolCalls)}`);
      const tool = newMessages.find((m) => m.role === 'tool') as any;
      must(tool?.toolCallId === call.toolCalls[0].id, `no tool message for the call: ${brief(newMessages)}`);
      const last = newMessages.at(-1) as any;
      must(
        last?.role === 'assistant' && /\S/.test(String(last.content ?? '')),
        `the last message is not the answer: ${brief(last)}`,
      );
      return `messages: ${newMessages.map((m) => m.role).join(', ')}`;
    },
  },
];

/** The kit's server tool run, shared by the checks that only read it. */
const serverToolRun = (ctx: CheckContext) =>
  ctx.shared('server tool run', async () => {
    const stream = await ctx.client.run(body(ctx, ctx.options.prompts.serverTool));
    accepted(stream);
    return stream;
  });

/** A thread made through POST /threads; its id as the backend gave it. */
export const createdThread = (ctx: CheckContext, key = 'thread') =>
  ctx.shared(key, async () => {
    const created = await ctx.client.json('/threads', { body: { title: 'conformance' } });
    must(
      created.status >= 200 && created.status < 300 && typeof created.body?.id === 'string',
      `POST /threads answered ${created.status} ${brief(created.body)}`,
    );
    return created.body as { id: string } & Record<string, unknown>;
  });

const threadPath = (id: string) => `/threads/${encodeURIComponent(id)}`;

/** A run on a thread the kit created, and the thread's messages read back. */
const conversation = (ctx: CheckContext, key: string, prompt: string) =>
  ctx.shared(key, async () => {
    const thread = await createdThread(ctx, `${key} thread`);
    const input = body(ctx, prompt, { threadId: thread.id });
    const stream = await ctx.client.run(input);
    accepted(stream);
    finished(stream);
    return { thread, input, stream };
  });

export const messagesOf = async (ctx: CheckContext, threadId: string, query = '') => {
  const read = await ctx.client.json(`${threadPath(threadId)}/messages${query}`);
  must(read.status === 200, `GET …/messages${query} answered ${read.status} ${brief(read.body)}`);
  const list = listIn(read.body, 'messages');
  must(list, `GET …/messages${query}: no list of messages in ${brief(read.body)}`);
  return list;
};

const LEVEL_3: Check[] = [
  {
    id: 'L3.create-thread',
    level: 3,
    title: 'POST /threads creates a thread and answers it with its id',
    source: { kind: 'protocol', clause: 'POST | /threads | Create a thread' },
    run: async (ctx) => {
      const thread = await createdThread(ctx);
      return `thread ${thread.id}: ${brief(thread, 160)}`;
    },
  },
  {
    id: 'L3.list-threads',
    level: 3,
    title: 'GET /threads lists the thread',
    source: { kind: 'protocol', clause: 'GET | /threads | List threads' },
    run: async (ctx) => {
      const thread = await createdThread(ctx);
      const read = await ctx.client.json('/threads');
      must(read.status === 200, `GET /threads answered ${read.status} ${brief(read.body)}`);
      const list = listIn(read.body, 'threads');
      must(list, `no list of threads in ${brief(read.body)}`);
      must(
        list.some((t) => t?.id === thread.id),
        `thread ${thread.id} not among the ${list.length} listed`,
      );
      return `${list.length} threads, the kit's among them`;
    },
  },
  {
    id: 'L3.read-thread',
    level: 3,
    title: 'GET /threads/:threadId reads the thread',
    source: { kind: 'protocol', clause: 'GET | /threads/:threadId | Read one thread' },
    run: async (ctx) => {
      const thread = await createdThread(ctx);
      const read = await ctx.client.json(threadPath(thread.id));
      must(read.status === 200 && read.body?.id === thread.id, `answered ${read.status} ${brief(read.body)}`);
      return `200 ${brief(read.body, 160)}`;
    },
  },
  {
    id: 'L3.update-thread',
    level: 3,
    title: "PATCH /threads/:threadId changes the thread's title",
    source: { kind: 'protocol', clause: 'PATCH | /threads/:threadId | Update a thread' },
    run: async (ctx) => {
      const thread = await createdThread(ctx);
      const patched = await ctx.client.json(threadPath(thread.id), {
        method: 'PATCH',
        body: { title: 'conformance renamed' },
      });
      must(
        patched.status >= 200 && patched.status < 300,
        `answered ${patched.status} ${brief(patched.body)}`,
      );
      const read = await ctx.client.json(threadPath(thread.id));
      must(read.body?.title === 'conformance renamed', `read back after the PATCH: ${brief(read.body)}`);
      return `${patched.status}; read back with the new title`;
    },
  },
  {
    id: 'L3.delete-thread',
    level: 3,
    title: 'DELETE /threads/:threadId deletes it: reading it afterwards answers 404',
    source: { kind: 'protocol', clause: 'DELETE | /threads/:threadId | Delete a thread' },
    run: async (ctx) => {
      const thread = await createdThread(ctx, 'thread to delete');
      const del = await ctx.client.request(threadPath(thread.id), { method: 'DELETE' });
      must(del.status >= 200 && del.status < 300, `DELETE answered ${del.status} ${brief(await del.text())}`);
      const read = await ctx.client.request(threadPath(thread.id));
      must(read.status === 404, `GET after DELETE answered ${read.status} ${brief(await read.text())}`);
      return `DELETE ${del.status}, then GET 404`;
    },
  },
  {
    id: 'L3.thread-messages',
    level: 3,
    title: "GET /threads/:threadId/messages holds a run's user message and its answer",
    source: { kind: 'protocol', clause: 'GET | /threads/:threadId/messages | Read thread messages' },
    run: async (ctx) => {
      const { thread, stream } = await conversation(ctx, 'text conversation', ctx.options.prompts.text);
      const messages = await messagesOf(ctx, thread.id);
      const text = JSON.stringify(messages);
      const answer = shownText(stream.events);
      must(
        text.includes(JSON.stringify(ctx.options.prompts.text).slice(1, -1)),
        `the user message is missing: ${brief(messages)}`,
      );
      must(
        /\S/.test(answer) && text.includes(JSON.stringify(answer).slice(1, -1)),
        `the answer ${brief(answer, 80)} is missing: ${brief(messages)}`,
      );
      return `${messages.length} messages, the prompt and the answer among them`;
    },
  },
  {
    id: 'L3.tool-history',
    level: 3,
    title:
      'after a tool call, the thread keeps the assistant message with toolCalls and the tool message with toolCallId',
    source: { kind: 'protocol', clause: SEED.replay },
    run: async (ctx) => {
      const { thread, stream } = await conversation(ctx, 'tool conversation', ctx.options.prompts.serverTool);
      const [call] = toolCalls(stream.events);
      must(call, `the run made no tool call: ${sequence(stream.events)}`);
      const messages = await messagesOf(ctx, thread.id, '?format=agui');
      must(
        messages.some(
          (m) => m?.role === 'assistant' && m.toolCalls?.some((c: any) => c?.id === call.toolCallId),
        ),
        `no assistant message with toolCalls[].id ${call.toolCallId}: ${brief(messages, 400)}`,
      );
      must(
        messages.some((m) => m?.role === 'tool' && m.toolCallId === call.toolCallId),
        `no tool message with toolCallId ${call.toolCallId}: ${brief(messages, 400)}`,
      );
      return `roles ${messages.map((m) => m.role).join(', ')}; ${call.toolCallId} kept on both`;
    },
  },
];

const agents = (ctx: CheckContext) =>
  ctx.shared('agents', async () => {
    const read = await ctx.client.json('/agents');
    must(read.status === 200, `GET /agents answered ${read.status} ${brief(read.body)}`);
    const list = listIn(read.body, 'agents');
    must(list && list.length > 0, `no agents in ${brief(read.body)}`);
    must(
      list.every((a) => typeof a?.id === 'string'),
      `an agent without an id: ${brief(list)}`,
    );
    return { body: read.body, list: list as ({ id: string } & Record<string, unknown>)[] };
  });

const LEVEL_4: Check[] = [
  {
    id: 'L4.list-agents',
    level: 4,
    title: 'GET /agents lists the agents, each with an id',
    source: { kind: 'protocol', clause: 'GET | /agents | List available agents' },
    run: async (ctx) => `agents ${(await agents(ctx)).list.map((a) => a.id).join(', ')}`,
  },
  {
    id: 'L4.read-agent',
    level: 4,
    title: 'GET /agents/:agentId reads each listed agent',
    source: { kind: 'protocol', clause: 'GET | /agents/:agentId | Read one agent' },
    run: async (ctx) => {
      const { list } = await agents(ctx);
      for (const agent of list) {
        const read = await ctx.client.json(`/agents/${encodeURIComponent(agent.id)}`);
        must(
          read.status === 200 && read.body?.id === agent.id,
          `GET /agents/${agent.id} answered ${read.status} ${brief(read.body)}`,
        );
      }
      return `${list.length} agents read`;
    },
  },
  {
    id: 'L4.select-agent',
    level: 4,
    title: 'a run naming a listed agent in forwardedProps.agentId runs',
    source: { kind: 'protocol', clause: SEED.agentId },
    run: async (ctx) => {
      const { list } = await agents(ctx);
      const agentId = ctx.options.agentId ?? list[0].id;
      const stream = await ctx.client.run(
        body(ctx, ctx.options.prompts.text, { forwardedProps: { agentId } }),
      );
      accepted(stream);
      finished(stream);
      return `agentId ${agentId}: ${sequence(stream.events)}`;
    },
  },
];

export const PROTOCOL_CHECKS: Check[] = [...LEVEL_1, ...STREAM_RULES, ...LEVEL_2, ...LEVEL_3, ...LEVEL_4];
