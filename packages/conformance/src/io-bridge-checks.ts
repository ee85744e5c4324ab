import type { Check, CheckContext } from './check';
import {
  accepted,
  body,
  brief,
  errorEnvelope,
  finished,
  must,
  nullAt,
  ofType,
  plainRun,
  sequence,
  shownText,
  toolCalls,
} from './check-support';
import { kitId, runBody } from './http';
import type { RunStream } from './http';
import { FRONTEND_TOOL } from './options';
import { createdThread, messagesOf } from './protocol-checks';
import { readSse } from './sse';
import { eventIdsFinding, IO_BRIDGE_STREAM_RULES, streamRule } from './stream-rules';

/**
 * io-bridge's own contract, beyond the protocol: checked in the io-bridge profile only, reported apart
 * from the protocol's levels. Each clause states the rule as io-bridge's contract (docs/) writes it.
 */

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** io-bridge's contract for any AG-UI 1.0 client (docs/clients.md), as the extension checks quote it. */
const ANY_CLIENT = {
  loop: "forwardedProps.clientProtocol 'ag-ui': when a step has emitted its frontend tool calls the run ends RUN_FINISHED {outcome: {type:'success', pendingToolCallIds}} (1.x; before 1.0 a plain RUN_FINISHED); the next run carrying role:'tool' messages answering them (the whole history, or only the new message on a stored thread) goes on, each message stored once",
  usage:
    'RUN_FINISHED and RUN_ERROR carry usage: TokenUsage[] (AG-UI 1.0 accounting) when the model reported any, to a request that declares 1.x; the run record (GET /runs/:runId, usage) keeps the same for every request',
  approvals:
    "a tool with requiresApproval does not run when the model calls it: the run ends RUN_FINISHED {outcome: {type:'interrupt', interrupts: [{id, reason:'tool_approval', toolCallId, message}]}} (before 1.0 a plain RUN_FINISHED, the interrupt on GET /runs/:runId); a later run whose resume answers it goes on (approved: the tool's TOOL_CALL_RESULT; declined: the model is told), recorded in Run.approvals; an unknown interrupt is a 404, an answered one 409 INTERRUPT_ALREADY_RESOLVED, before any stream",
};

/** A list of objects as JSON with each object's keys in order: equal lists give equal text. */
const canonical = (list: unknown) =>
  JSON.stringify(
    Array.isArray(list)
      ? list.map((item) =>
          item && typeof item === 'object' ? Object.fromEntries(Object.entries(item).sort()) : item,
        )
      : list,
  );

const agentProps = (ctx: CheckContext) => (ctx.options.agentId ? { agentId: ctx.options.agentId } : {});

/**
 * The first half of the stock-client loop: a run on a thread the kit made, with
 * `clientProtocol: 'ag-ui'`, in which the model calls the kit's frontend tool.
 */
async function agUiToolRun(ctx: CheckContext, key: string, version: Record<string, unknown>) {
  const thread = await createdThread(ctx, key);
  const forwardedProps = { ...agentProps(ctx), clientProtocol: 'ag-ui' };
  const input = body(ctx, ctx.options.prompts.frontendTool, {
    threadId: thread.id,
    tools: [FRONTEND_TOOL],
    forwardedProps,
    ...version,
  });
  const stream = await ctx.client.run(input);
  accepted(stream);
  finished(stream);
  const call = toolCalls(stream.events).find((c) => c.name === FRONTEND_TOOL.name);
  must(call, `no ${FRONTEND_TOOL.name} call: ${sequence(stream.events)}`);
  must(
    call.results.length === 0,
    `TOOL_CALL_RESULT for the frontend call in the run that ended at it: ${sequence(stream.events)}`,
  );
  return { thread, forwardedProps, input, stream, call };
}

/** The thread as stored reads user, the call, the tool message with the kit's answer, the answer: once each. */
async function storedOnce(ctx: CheckContext, threadId: string, toolCallId: string) {
  const stored = await messagesOf(ctx, threadId, '?format=agui');
  const roles = stored.map((m) => m.role).join(', ');
  must(roles === 'user, assistant, tool, assistant', `the thread holds ${roles}`);
  must(
    stored[2].toolCallId === toolCallId && String(stored[2].content).includes('conformance-42'),
    `the stored tool message is ${brief(stored[2])}`,
  );
  return roles;
}

/** A run on a thread the kit made in which the model calls a tool that needs approval. */
async function approvalRun(ctx: CheckContext, key: string, version: Record<string, unknown>) {
  const thread = await createdThread(ctx, key);
  const input = body(ctx, ctx.options.prompts.approval, {
    threadId: thread.id,
    forwardedProps: agentProps(ctx),
    ...version,
  });
  const stream = await ctx.client.run(input);
  accepted(stream);
  finished(stream);
  const calls = toolCalls(stream.events).filter((c) => c.results.length === 0);
  must(calls.length === 1, `not one tool call left without a result: ${sequence(stream.events)}`);
  const agents = await ctx.client.json('/agents');
  const agentId = ctx.options.agentId ?? agents.body?.defaultAgentId;
  const agent = (agents.body?.agents ?? []).find((a: { id: string }) => a.id === agentId);
  const tool = (agent?.tools ?? []).find((t: { name: string }) => t.name === calls[0].name);
  must(
    tool?.requiresApproval === true,
    `${calls[0].name} is not a tool of ${agentId} with requiresApproval in GET /agents: ${brief(tool ?? agent)}`,
  );
  return { thread, input, stream, call: calls[0] };
}

const resumeBody = (
  ctx: CheckContext,
  threadId: string,
  interruptId: string,
  approved: boolean,
  version: Record<string, unknown>,
) => ({
  threadId,
  runId: kitId('run'),
  messages: [],
  tools: [],
  context: [],
  forwardedProps: agentProps(ctx),
  resume: [{ interruptId, status: 'resolved', payload: { approved } }],
  ...version,
});

/** The resumed run: 200, the approved (or declined) call's one TOOL_CALL_RESULT, then RUN_FINISHED. */
async function resumed(ctx: CheckContext, input: ReturnType<typeof resumeBody>, toolCallId: string) {
  const stream = await ctx.client.run(input);
  accepted(stream);
  finished(stream);
  const results = ofType(stream.events, 'TOOL_CALL_RESULT').filter((e) => e.toolCallId === toolCallId);
  must(
    results.length === 1,
    `${results.length} TOOL_CALL_RESULT for ${toolCallId}: ${sequence(stream.events)}`,
  );
  return { stream, result: results[0] };
}

/** The answer on the interrupted run's record: `Run.approvals`. */
async function audited(ctx: CheckContext, runId: string, toolCallId: string, approved: boolean) {
  const run = await ctx.client.json(`/runs/${encodeURIComponent(runId)}`);
  must(run.status === 200, `GET /runs/:runId answered ${run.status}`);
  const entry = (run.body?.approvals ?? []).find((a: { toolCallId: string }) => a.toolCallId === toolCallId);
  must(
    entry?.approved === approved && typeof entry.by === 'string' && typeof entry.at === 'string',
    `approvals ${brief(run.body?.approvals)}, where ${toolCallId} ${approved ? 'approved' : 'declined'} was due`,
  );
  return `audited (${entry.by}, ${entry.at})`;
}

/** Rejoining a run reads the same SSE framing as POST /run. */
async function rejoin(ctx: CheckContext, runId: string, lastEventId?: string) {
  const res = await ctx.client.request(`/runs/${encodeURIComponent(runId)}/events`, {
    headers: { accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
  });
  const stream = readSse(res, ctx.options.timeoutMs);
  await stream.done;
  return stream;
}

const LEVEL_1: Check[] = [
  {
    id: 'X1.stream-headers',
    level: 1,
    title: 'POST /run answers with Cache-Control no-cache and X-Accel-Buffering no',
    source: {
      kind: 'io-bridge',
      clause:
        'response headers Cache-Control: no-cache, no-transform and X-Accel-Buffering: no (proxies must not buffer)',
    },
    run: async (ctx) => {
      const { res } = await plainRun(ctx);
      const cache = res.headers.get('cache-control');
      const accel = res.headers.get('x-accel-buffering');
      must(/\bno-cache\b/.test(cache ?? ''), `Cache-Control ${cache ?? '(none)'}`);
      must(accel === 'no', `X-Accel-Buffering ${accel ?? '(none)'}`);
      return `Cache-Control ${cache}, X-Accel-Buffering ${accel}`;
    },
  },
  {
    id: 'X1.event-ids',
    level: 1,
    title: 'every event is framed `id: <seq>` + `data: <json>`, seq from 1, LF only, UTF-8, no `event:` line',
    source: {
      kind: 'io-bridge',
      clause:
        'wire format per event: id: <seq>\\n then data: <json>\\n\\n, LF only, no event: line, UTF-8; seq starts at 1 and counts the events of the run (so a client can rejoin)',
    },
    run: async (ctx) => {
      const stream = await plainRun(ctx);
      let raw: string;
      try {
        raw = new TextDecoder('utf-8', { fatal: true }).decode(stream.bytes());
      } catch {
        return must(false, 'the body is not valid UTF-8') as never;
      }
      must(!raw.includes('\r'), 'CR in the stream');
      must(raw.endsWith('\n\n'), `the body does not end with a blank line: ${brief(raw.slice(-80))}`);
      const bad = raw
        .slice(0, -2)
        .split('\n\n')
        .filter((block) => !/^(: ping|id: \d+\ndata: [^\n]+)$/.test(block));
      must(
        bad.length === 0,
        `frames not \`id: <seq>\` + \`data: <json>\`: ${bad
          .slice(0, 3)
          .map((b) => brief(b, 120))
          .join(' | ')}`,
      );
      const ids = stream.frames.map((f) => f.id);
      const miscounted = eventIdsFinding(ids);
      must(!miscounted, miscounted!);
      return `${ids.length} frames with ids 1…${ids.length}`;
    },
  },
  {
    id: 'X1.rejoin',
    level: 1,
    title:
      'GET /runs/:runId/events replays a run with the same ids and events; Last-Event-ID resumes after it; 204 past the end',
    source: {
      kind: 'io-bridge',
      clause:
        'GET /runs/:runId/events: rejoin a run: its events after Last-Event-ID (or ?after=), then live to the terminal event; finished runs replay within a retention window',
    },
    run: async (ctx) => {
      const stream = await plainRun(ctx);
      const all = await rejoin(ctx, stream.input.runId);
      must(all.res.status === 200, `answered ${all.res.status} ${brief(all.raw())}`);
      must(
        JSON.stringify(all.frames) === JSON.stringify(stream.frames),
        `the replay differs: ${sequence(all.events)} with ids ${all.frames.map((f) => f.id).join(',')}`,
      );
      const after = await rejoin(ctx, stream.input.runId, '2');
      must(
        JSON.stringify(after.frames) === JSON.stringify(stream.frames.slice(2)),
        `after Last-Event-ID 2: ids ${after.frames.map((f) => f.id).join(',')}`,
      );
      const past = await rejoin(ctx, stream.input.runId, String(stream.frames.length));
      must(past.res.status === 204, `after the last id: ${past.res.status} ${brief(past.raw())}`);
      return `${all.frames.length} events replayed; ${after.frames.length} after id 2; 204 after id ${stream.frames.length}`;
    },
  },
  {
    id: 'X1.usage',
    level: 1,
    title:
      "a 1.x run whose model reported tokens carries the run record's usage on RUN_FINISHED; one whose model reported none carries none",
    source: { kind: 'io-bridge', clause: ANY_CLIENT.usage },
    run: async (ctx) => {
      const stream = await ctx.client.run(body(ctx, ctx.options.prompts.text, { protocolVersion: '1.0' }));
      accepted(stream);
      finished(stream);
      const end = stream.events.at(-1)!;
      const read = await ctx.client.json(`/runs/${encodeURIComponent(stream.input.runId)}`);
      must(read.status === 200, `GET /runs/:runId answered ${read.status} ${brief(read.body)}`);
      const recorded: unknown[] = read.body?.usage ?? [];
      must(
        canonical(end.usage ?? []) === canonical(recorded),
        `RUN_FINISHED usage ${brief(end.usage ?? 'none')}, where the run record has ${brief(recorded)}`,
      );
      return recorded.length
        ? `RUN_FINISHED and the run record: ${brief(recorded, 200)}`
        : 'the model reported no tokens: no usage on RUN_FINISHED or the run record';
    },
  },
  {
    id: 'X1.run-record',
    level: 1,
    title: 'GET /runs/:runId shows a finished run in the Run shape; an unknown run is 404',
    source: {
      kind: 'io-bridge',
      clause:
        'GET /runs/:runId: Run {id, threadId, agentId, status, startedAt, finishedAt?, error?, pendingToolCalls}',
    },
    run: async (ctx) => {
      const stream = await plainRun(ctx);
      const read = await ctx.client.json(`/runs/${encodeURIComponent(stream.input.runId)}`);
      const run = read.body;
      must(
        read.status === 200 &&
          run?.id === stream.input.runId &&
          run.threadId === stream.input.threadId &&
          typeof run.agentId === 'string' &&
          run.status === 'finished' &&
          ISO_8601.test(run.startedAt) &&
          ISO_8601.test(run.finishedAt) &&
          Array.isArray(run.pendingToolCalls),
        `answered ${read.status} ${run === undefined ? '(no body)' : brief(run)}`,
      );
      const missing = await errorEnvelope(
        await ctx.client.request(`/runs/${kitId('no-such-run')}`),
        404,
        'NOT_FOUND',
      );
      return `status finished; unknown run ${missing}`;
    },
  },
  {
    id: 'X1.tool-without-description',
    level: 1,
    title: 'accepts a tool declared without a description',
    source: { kind: 'io-bridge', clause: "lenient where AG-UI is: a tool's description is optional" },
    run: async (ctx) => {
      const stream = await ctx.client.run(
        body(ctx, ctx.options.prompts.text, {
          tools: [{ name: FRONTEND_TOOL.name, parameters: FRONTEND_TOOL.parameters }],
        }),
      );
      accepted(stream);
      finished(stream);
      return `200 and ${sequence(stream.events)}`;
    },
  },
  {
    id: 'X1.default-tools-context',
    level: 1,
    title: 'accepts a body without tools and context (they default to [])',
    source: { kind: 'io-bridge', clause: 'RunAgentInput: tools and context default to []' },
    run: async (ctx) => {
      const input: Record<string, unknown> = body(ctx, ctx.options.prompts.text);
      delete input.tools;
      delete input.context;
      const stream = await ctx.client.run(input as RunStream['input']);
      accepted(stream);
      finished(stream);
      return `200 and ${sequence(stream.events)}`;
    },
  },
  {
    id: 'X1.bad-body',
    level: 1,
    title: 'a bad body is a 400 VALIDATION_FAILED error envelope, never a stream',
    source: {
      kind: 'io-bridge',
      clause:
        'validate the whole body before anything streams: a bad body is a 400 {statusCode, code: VALIDATION_FAILED, message, details?}',
    },
    run: async (ctx) => {
      const good = body(ctx, ctx.options.prompts.text);
      const cases: [string, unknown][] = [
        ['not JSON', '{"threadId": '],
        ['an empty object', {}],
        ['no runId', { ...good, runId: undefined }],
        ['messages not an array', { ...good, messages: 'hi' }],
        ['an unknown role', { ...good, messages: [{ id: 'm1', role: 'wizard', content: 'hi' }] }],
        ['a tool without a JSON Schema object', { ...good, tools: [{ name: 'x', parameters: 'nope' }] }],
        ['forwardedProps not an object', { ...good, forwardedProps: 'x' }],
      ];
      for (const [what, payload] of cases) {
        const res = await ctx.client.request('/run', {
          body: payload,
          headers: { accept: 'text/event-stream' },
        });
        await errorEnvelope(res, 400, 'VALIDATION_FAILED').catch((err: Error) => {
          throw new Error(`${what}: ${err.message}`);
        });
      }
      return `${cases.map(([what]) => what).join(', ')}: 400 VALIDATION_FAILED`;
    },
  },
  {
    id: 'X1.run-exists',
    level: 1,
    title: 'a runId used before is a 409 RUN_ALREADY_EXISTS, never a stream',
    source: { kind: 'io-bridge', clause: 'a runId that already exists is a 409 RUN_ALREADY_EXISTS' },
    run: async (ctx) => {
      const { input } = await plainRun(ctx);
      const res = await ctx.client.request('/run', {
        body: { ...body(ctx, ctx.options.prompts.text), runId: input.runId },
        headers: { accept: 'text/event-stream' },
      });
      return errorEnvelope(res, 409, 'RUN_ALREADY_EXISTS');
    },
  },
  ...IO_BRIDGE_STREAM_RULES.filter((rule) => rule.level === 1).map(streamRule),
];

/** Starts a run that waits for the kit's frontend tool; resolves once its call has ended. */
async function waitingRun(ctx: CheckContext, extra: Record<string, unknown> = {}) {
  const input = body(ctx, ctx.options.prompts.frontendTool, { tools: [FRONTEND_TOOL], ...extra });
  const stream = await ctx.client.openRun(input);
  accepted(stream);
  const start = await stream.waitFor(
    (e) => e.type === 'TOOL_CALL_START' && e.toolCallName === FRONTEND_TOOL.name,
  );
  await stream.waitFor((e) => e.type === 'TOOL_CALL_END' && e.toolCallId === start.toolCallId);
  return { input, stream, toolCallId: start.toolCallId as string };
}

const LEVEL_2: Check[] = [
  ...IO_BRIDGE_STREAM_RULES.filter((rule) => rule.level === 2).map(streamRule),
  {
    id: 'X2.result-answers',
    level: 2,
    title:
      'result posts: 202 {accepted: true}; unknown tool call 404; a second result 409; after the run 409 RUN_NOT_ACTIVE; unknown run 404',
    source: {
      kind: 'io-bridge',
      clause:
        '202 when it reached the waiting run; 404 unknown run; for a live run, 404 an unknown tool call and 409 TOOL_RESULT_ALREADY_SUBMITTED a second result; for a run that has ended, 409 RUN_NOT_ACTIVE',
    },
    run: async (ctx) => {
      const { input, stream, toolCallId } = await waitingRun(ctx);
      const path = ctx.client.resultPath;
      const unknownCall = await errorEnvelope(
        await ctx.client.request(path(input.runId, kitId('no-such-call')), { body: { content: 'x' } }),
        404,
        'NOT_FOUND',
      );
      const first = await ctx.client.postToolResult(input.runId, toolCallId, { content: 'first' });
      must(
        first.status === 202 && first.body?.accepted === true,
        `the result answered ${first.status} ${brief(first.body)}`,
      );
      // The run may have ended already once the first result let it go on.
      const second = await errorEnvelope(
        await ctx.client.request(path(input.runId, toolCallId), { body: { content: 'second' } }),
        409,
        ['TOOL_RESULT_ALREADY_SUBMITTED', 'RUN_NOT_ACTIVE'],
      );
      await stream.done;
      const results = ofType(stream.events, 'TOOL_CALL_RESULT').map((e) => e.content);
      must(JSON.stringify(results) === JSON.stringify(['first']), `results streamed: ${brief(results)}`);
      const late = await errorEnvelope(
        await ctx.client.request(path(input.runId, toolCallId), { body: { content: 'late' } }),
        409,
        'RUN_NOT_ACTIVE',
      );
      const unknownRun = await errorEnvelope(
        await ctx.client.request(path(kitId('no-such-run'), 'call'), { body: { content: 'x' } }),
        404,
        'NOT_FOUND',
      );
      return `202; unknown call ${unknownCall}; second ${second}; after the run ${late}; unknown run ${unknownRun}`;
    },
  },
  {
    id: 'X2.error-result',
    level: 2,
    title:
      '{error} from the frontend reaches the model as a failed call: TOOL_CALL_RESULT, and the run finishes',
    source: {
      kind: 'io-bridge',
      clause: 'result body {error: "text"} reports a tool failure (the model sees it as a failed tool call)',
    },
    run: async (ctx) => {
      const { input, stream, toolCallId } = await waitingRun(ctx);
      const posted = await ctx.client.postToolResult(input.runId, toolCallId, { error: 'user declined' });
      must(posted.status === 202, `the error post answered ${posted.status} ${brief(posted.body)}`);
      await stream.done;
      const results = ofType(stream.events, 'TOOL_CALL_RESULT').filter((e) => e.toolCallId === toolCallId);
      must(results.length === 1, `${results.length} TOOL_CALL_RESULT: ${sequence(stream.events)}`);
      finished(stream);
      return `TOOL_CALL_RESULT ${brief(results[0].content, 80)}; ${sequence(stream.events.slice(-2))}`;
    },
  },
  {
    id: 'X2.server-result-first',
    level: 2,
    title: "in a mixed turn, the server tool's result streams while the frontend call still waits",
    source: {
      kind: 'io-bridge',
      clause:
        "each TOOL_CALL_RESULT is emitted as soon as that result exists (a server tool's result never waits for a frontend tool's)",
    },
    run: async (ctx) => {
      const input = body(ctx, ctx.options.prompts.mixed, { tools: [FRONTEND_TOOL] });
      const stream = await ctx.client.openRun(input);
      accepted(stream);
      const names = new Map<string, string>();
      stream.onEvent((e) => {
        if (e.type === 'TOOL_CALL_START') names.set(e.toolCallId, e.toolCallName);
      });
      const frontend = await stream.waitFor(
        (e) => e.type === 'TOOL_CALL_END' && names.get(e.toolCallId) === FRONTEND_TOOL.name,
      );
      const server = await stream.waitFor(
        (e) =>
          e.type === 'TOOL_CALL_RESULT' &&
          names.has(e.toolCallId) &&
          names.get(e.toolCallId) !== FRONTEND_TOOL.name,
      );
      const posted = await ctx.client.postToolResult(input.runId, frontend.toolCallId, { content: 'Lyon' });
      must(posted.status === 202, `the result post answered ${posted.status}`);
      await stream.done;
      finished(stream);
      return `${names.get(server.toolCallId)} result streamed before the ${FRONTEND_TOOL.name} result was posted`;
    },
  },
  {
    id: 'X2.thread-busy',
    level: 2,
    title: 'a second run on a thread whose run is still going is a 409 THREAD_BUSY',
    source: {
      kind: 'io-bridge',
      clause: 'one active run per thread: a second POST /run on a busy thread answers 409 THREAD_BUSY',
    },
    run: async (ctx) => {
      const threadId = kitId('thread');
      const memory = { memory: { thread: threadId } };
      const forwardedProps = { ...(ctx.options.agentId ? { agentId: ctx.options.agentId } : {}), ...memory };
      const { input, stream, toolCallId } = await waitingRun(ctx, { threadId, forwardedProps });
      const second = await ctx.client.request('/run', {
        body: runBody(ctx.options.prompts.text, ctx.options.agentId, { threadId, forwardedProps }),
        headers: { accept: 'text/event-stream' },
      });
      const busy = await errorEnvelope(second, 409, 'THREAD_BUSY');
      await ctx.client.postToolResult(input.runId, toolCallId, { content: 'done' });
      await stream.done;
      return `while waiting for ${FRONTEND_TOOL.name}: ${busy}`;
    },
  },
  {
    id: 'X2.cancel',
    level: 2,
    title:
      'POST /runs/:runId/cancel ends a waiting run with RUN_ERROR CANCELLED; the run is recorded cancelled',
    source: {
      kind: 'io-bridge',
      clause: "POST /runs/:runId/cancel: 202; a cancelled run ends with RUN_ERROR {code:'CANCELLED'}",
    },
    run: async (ctx) => {
      const { input, stream } = await waitingRun(ctx);
      const cancel = await ctx.client.json(`/runs/${encodeURIComponent(input.runId)}/cancel`, { body: {} });
      must(cancel.status === 202, `cancel answered ${cancel.status} ${brief(cancel.body)}`);
      await stream.done;
      const last = stream.events.at(-1);
      must(last?.type === 'RUN_ERROR' && last.code === 'CANCELLED', `the stream ended ${brief(last)}`);
      const read = await ctx.client.json(`/runs/${encodeURIComponent(input.runId)}`);
      must(read.body?.status === 'cancelled', `the run reads ${brief(read.body)}`);
      return 'RUN_ERROR CANCELLED; status cancelled';
    },
  },
  {
    id: 'X2.ag-ui-loop',
    level: 2,
    title:
      "clientProtocol 'ag-ui', 1.x: the run ends with outcome.pendingToolCallIds; the next run with the whole history and the tool message goes on, each message stored once",
    source: { kind: 'io-bridge', clause: ANY_CLIENT.loop },
    run: async (ctx) => {
      const version = { protocolVersion: '1.0' };
      const { thread, forwardedProps, input, stream, call } = await agUiToolRun(ctx, 'ag-ui loop', version);
      const outcome = stream.events.at(-1)?.outcome;
      must(
        outcome?.type === 'success' &&
          Array.isArray(outcome.pendingToolCallIds) &&
          outcome.pendingToolCallIds.includes(call.toolCallId),
        `RUN_FINISHED ${brief(stream.events.at(-1))} does not name ${call.toolCallId} in outcome.pendingToolCallIds`,
      );
      // What @ag-ui/client sends next: the whole history, the call as the stream built it, the tool message.
      const history = [
        ...input.messages,
        {
          id: call.start.parentMessageId ?? kitId('msg'),
          role: 'assistant',
          toolCalls: [
            { id: call.toolCallId, type: 'function', function: { name: call.name, arguments: call.args } },
          ],
        },
        { id: kitId('tool'), role: 'tool', toolCallId: call.toolCallId, content: 'conformance-42' },
      ];
      const next = await ctx.client.run(
        body(ctx, '', {
          threadId: thread.id,
          tools: [FRONTEND_TOOL],
          forwardedProps,
          messages: history,
          ...version,
        }),
      );
      accepted(next);
      finished(next);
      const end = next.events.at(-1)!;
      must(
        end.outcome?.type === 'success' && !end.outcome.pendingToolCallIds?.length,
        `the next run ended ${brief(end)}`,
      );
      must(
        ofType(next.events, 'TEXT_MESSAGE_CONTENT').length > 0,
        `no answer after the tool message: ${sequence(next.events)}`,
      );
      const roles = await storedOnce(ctx, thread.id, call.toolCallId);
      return `pendingToolCallIds [${outcome.pendingToolCallIds.join(', ')}]; then ${brief(shownText(next.events), 80)}; stored ${roles}`;
    },
  },
  {
    id: 'X2.ag-ui-loop-pre-1.0',
    level: 2,
    title:
      "clientProtocol 'ag-ui', no version: the run ends with a plain RUN_FINISHED at the frontend call; the next run with only the tool message goes on",
    source: { kind: 'io-bridge', clause: ANY_CLIENT.loop },
    run: async (ctx) => {
      const { thread, forwardedProps, stream, call } = await agUiToolRun(ctx, 'ag-ui loop pre-1.0', {});
      const end = stream.events.at(-1)!;
      must(end.type === 'RUN_FINISHED' && end.outcome === undefined, `the run ended ${brief(end)}`);
      const next = await ctx.client.run(
        body(ctx, '', {
          threadId: thread.id,
          tools: [FRONTEND_TOOL],
          forwardedProps,
          messages: [
            { id: kitId('tool'), role: 'tool', toolCallId: call.toolCallId, content: 'conformance-42' },
          ],
        }),
      );
      accepted(next);
      finished(next);
      must(
        ofType(next.events, 'TEXT_MESSAGE_CONTENT').length > 0,
        `no answer after the tool message: ${sequence(next.events)}`,
      );
      const roles = await storedOnce(ctx, thread.id, call.toolCallId);
      return `a plain RUN_FINISHED after ${call.name}; then ${brief(shownText(next.events), 80)}; stored ${roles}`;
    },
  },
  {
    id: 'X2.interrupt-resume',
    level: 2,
    title:
      'a tool that needs approval ends a 1.x run with an interrupt outcome; resume approving it runs the tool, audited; a second answer is 409',
    source: { kind: 'io-bridge', clause: ANY_CLIENT.approvals },
    run: async (ctx) => {
      const version = { protocolVersion: '1.0' };
      const { thread, input, stream, call } = await approvalRun(ctx, 'interrupt 1.x', version);
      const outcome = stream.events.at(-1)?.outcome;
      const interrupt = (outcome?.interrupts ?? [])[0];
      must(
        outcome?.type === 'interrupt' &&
          outcome.interrupts.length === 1 &&
          interrupt.reason === 'tool_approval' &&
          interrupt.toolCallId === call.toolCallId,
        `RUN_FINISHED ${brief(stream.events.at(-1))}, where an interrupt for ${call.toolCallId} was due`,
      );
      const answer = resumeBody(ctx, thread.id, interrupt.id, true, version);
      const { result } = await resumed(ctx, answer, call.toolCallId);
      const audit = await audited(ctx, input.runId, call.toolCallId, true);
      const again = await ctx.client.request('/run', {
        body: { ...answer, runId: kitId('run') },
        headers: { accept: 'text/event-stream' },
      });
      const twice = await errorEnvelope(again, 409, 'INTERRUPT_ALREADY_RESOLVED');
      return `interrupt ${interrupt.id} for ${call.name}; approved: ${brief(result.content, 80)}; ${audit}; again: ${twice}`;
    },
  },
  {
    id: 'X2.interrupt-pre-1.0',
    level: 2,
    title:
      'without a version the interrupted run ends with a plain RUN_FINISHED and the interrupt is on GET /runs/:runId; declining it tells the model; an unknown interrupt is 404',
    source: { kind: 'io-bridge', clause: ANY_CLIENT.approvals },
    run: async (ctx) => {
      const { thread, input, stream, call } = await approvalRun(ctx, 'interrupt pre-1.0', {});
      const end = stream.events.at(-1)!;
      must(end.outcome === undefined, `the run ended ${brief(end)}`);
      const run = await ctx.client.json(`/runs/${encodeURIComponent(input.runId)}`);
      const interrupt = (run.body?.interrupts ?? []).find(
        (i: { toolCallId?: string }) => i.toolCallId === call.toolCallId,
      );
      must(interrupt?.id, `GET /runs/:runId has no interrupt for ${call.toolCallId}: ${brief(run.body)}`);
      const { result } = await resumed(
        ctx,
        resumeBody(ctx, thread.id, interrupt.id, false, {}),
        call.toolCallId,
      );
      const audit = await audited(ctx, input.runId, call.toolCallId, false);
      const unknown = await ctx.client.request('/run', {
        body: resumeBody(ctx, thread.id, kitId('interrupt'), true, {}),
        headers: { accept: 'text/event-stream' },
      });
      const missing = await errorEnvelope(unknown, 404, 'NOT_FOUND');
      return `interrupt ${interrupt.id} on the run record; declined: ${brief(result.content, 80)}; ${audit}; unknown: ${missing}`;
    },
  },
];

/** io-bridge's Thread shape. */
function threadShape(thread: any): string | undefined {
  const ok =
    typeof thread?.id === 'string' &&
    typeof thread.resourceId === 'string' &&
    typeof thread.metadata === 'object' &&
    thread.metadata !== null &&
    ISO_8601.test(thread.createdAt) &&
    ISO_8601.test(thread.updatedAt) &&
    !nullAt(thread);
  return ok
    ? undefined
    : `not a Thread {id, resourceId, title?, metadata, createdAt, updatedAt}: ${brief(thread)}`;
}

async function newThread(ctx: CheckContext, payload: unknown, status = 201) {
  const created = await ctx.client.json('/threads', { body: payload });
  must(
    created.status === status,
    `POST /threads ${brief(payload)} answered ${created.status} ${brief(created.body)}, where ${status} was due`,
  );
  const problem = threadShape(created.body);
  must(!problem, problem!);
  return created.body;
}

const threadPath = (id: string) => `/threads/${encodeURIComponent(id)}`;

const messages = async (ctx: CheckContext, threadId: string, query = '') => {
  const read = await ctx.client.json(`${threadPath(threadId)}/messages${query}`);
  must(
    read.status === 200 &&
      Array.isArray(read.body?.messages) &&
      (read.body.nextCursor === null || typeof read.body.nextCursor === 'string'),
    `GET …/messages${query} answered ${read.status} ${brief(read.body)}, not {messages, nextCursor}`,
  );
  return read.body.messages as any[];
};

/** A text run on a thread the kit created: a run on an existing thread of the owner is stored. */
const storedRun = (ctx: CheckContext, key: string, prompt: string) =>
  ctx.shared(`x ${key}`, async () => {
    const thread = await newThread(ctx, {});
    const input = body(ctx, prompt, { threadId: thread.id });
    const stream = await ctx.client.run(input);
    accepted(stream);
    finished(stream);
    return { thread, input, stream };
  });

const LEVEL_3: Check[] = [
  {
    id: 'X3.create-thread',
    level: 3,
    title:
      'POST /threads with {}, {title}, {metadata} → 201 Thread; with an id → 201, the same id again → 200',
    source: {
      kind: 'io-bridge',
      clause:
        'POST /threads → 201 Thread {id, resourceId, title?, metadata, createdAt, updatedAt}; same id again by the same owner → 200 with the existing thread',
    },
    run: async (ctx) => {
      await newThread(ctx, {});
      const titled = await newThread(ctx, { title: 'Conformance title' });
      must(titled.title === 'Conformance title', `title: ${brief(titled)}`);
      const meta = { a: 1, nested: { b: [true] } };
      const withMeta = await newThread(ctx, { metadata: meta });
      must(JSON.stringify(withMeta.metadata) === JSON.stringify(meta), `metadata: ${brief(withMeta)}`);
      const id = kitId('thread');
      const mine = await newThread(ctx, { id, title: 'mine' });
      must(mine.id === id, `id: ${brief(mine)}`);
      const again = await newThread(ctx, { id }, 200);
      must(JSON.stringify(again) === JSON.stringify(mine), `the same id again: ${brief(again)}`);
      return '201 ×4 in the Thread shape; the same id again 200 with the same thread';
    },
  },
  {
    id: 'X3.bad-thread-body',
    level: 3,
    title: 'POST /threads with a bad body → 400 VALIDATION_FAILED',
    source: { kind: 'io-bridge', clause: 'every error, every route: {statusCode, code, message, details?}' },
    run: async (ctx) =>
      errorEnvelope(
        await ctx.client.request('/threads', { body: { metadata: 'x' } }),
        400,
        'VALIDATION_FAILED',
      ),
  },
  {
    id: 'X3.thread-pages',
    level: 3,
    title: 'GET /threads lists newest first, pages with limit and nextCursor; limit outside 1–100 → 400',
    source: {
      kind: 'io-bridge',
      clause:
        'GET /threads → {threads, nextCursor}: limit 1–100 (outside → 400), cursor; newest updatedAt first; nextCursor null on the last page',
    },
    run: async (ctx) => {
      const mine: string[] = [];
      for (let i = 0; i < 3; i++) mine.push((await newThread(ctx, { title: `page ${i}` })).id);
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 50; page++) {
        const query: string = `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const read = await ctx.client.json(`/threads${query}`);
        must(
          read.status === 200 &&
            Array.isArray(read.body?.threads) &&
            read.body.threads.length <= 2 &&
            (read.body.nextCursor === null || typeof read.body.nextCursor === 'string'),
          `GET /threads${query} answered ${read.status} ${brief(read.body)}`,
        );
        for (const t of read.body.threads) must(!threadShape(t), threadShape(t)!);
        seen.push(...read.body.threads.map((t: { id: string }) => t.id));
        cursor = read.body.nextCursor;
        if (cursor === null || mine.every((id) => seen.includes(id))) break;
      }
      must(new Set(seen).size === seen.length, 'a thread came twice');
      const positions = mine.map((id) => seen.indexOf(id));
      must(
        positions.every((p) => p >= 0),
        `not every new thread was listed: ${positions.join(',')}`,
      );
      must(
        positions.every((p, i) => i === 0 || p < positions[i - 1]),
        `not newest first: positions ${positions.join(',')}`,
      );
      for (const limit of ['0', '101'])
        await errorEnvelope(await ctx.client.request(`/threads?limit=${limit}`), 400, 'VALIDATION_FAILED');
      return `${seen.length} threads paged by 2, newest first; limit 0 and 101: 400`;
    },
  },
  {
    id: 'X3.thread-routes',
    level: 3,
    title:
      'GET/PATCH of a thread (PATCH replaces metadata); unknown ids 404 NOT_FOUND; DELETE 204, then 404 for it and its messages',
    source: {
      kind: 'io-bridge',
      clause:
        "PATCH /threads/:threadId {title?, metadata?} (metadata replaces); DELETE → 204, its messages too; an unknown thread (or another owner's) is 404",
    },
    run: async (ctx) => {
      const thread = await newThread(ctx, { title: 'before', metadata: { a: 1, b: 2 } });
      const read = await ctx.client.json(threadPath(thread.id));
      must(JSON.stringify(read.body) === JSON.stringify(thread), `GET: ${brief(read.body)}`);
      const patched = await ctx.client.json(threadPath(thread.id), {
        method: 'PATCH',
        body: { title: 'after', metadata: { c: 3 } },
      });
      must(
        patched.status === 200 &&
          patched.body?.title === 'after' &&
          JSON.stringify(patched.body.metadata) === JSON.stringify({ c: 3 }),
        `PATCH answered ${patched.status} ${brief(patched.body)}`,
      );
      const missing = kitId('missing');
      await errorEnvelope(await ctx.client.request(threadPath(missing)), 404, 'NOT_FOUND');
      await errorEnvelope(
        await ctx.client.request(threadPath(missing), { method: 'PATCH', body: { title: 'x' } }),
        404,
        'NOT_FOUND',
      );
      await errorEnvelope(await ctx.client.request(`${threadPath(missing)}/messages`), 404, 'NOT_FOUND');
      const del = await ctx.client.request(threadPath(thread.id), { method: 'DELETE' });
      must(del.status === 204 && (await del.text()) === '', `DELETE answered ${del.status}`);
      await errorEnvelope(await ctx.client.request(threadPath(thread.id)), 404, 'NOT_FOUND');
      await errorEnvelope(await ctx.client.request(`${threadPath(thread.id)}/messages`), 404, 'NOT_FOUND');
      await errorEnvelope(
        await ctx.client.request(threadPath(thread.id), { method: 'DELETE' }),
        404,
        'NOT_FOUND',
      );
      return 'GET, PATCH 200; unknown ids 404 NOT_FOUND; DELETE 204, then 404 ×3';
    },
  },
  {
    id: 'X3.messages-agui',
    level: 3,
    title: 'GET …/messages?format=agui: the user message and the answer, with the ids the events carried',
    source: {
      kind: 'io-bridge',
      clause:
        'what a run produces is stored with the ids its events carried; format=agui gives the AG-UI message as stored',
    },
    run: async (ctx) => {
      const { thread, input, stream } = await storedRun(ctx, 'text', ctx.options.prompts.text);
      const stored = await messages(ctx, thread.id, '?format=agui');
      const answerId = ofType(stream.events, 'TEXT_MESSAGE_START')[0]?.messageId;
      const user = input.messages[0];
      must(
        stored.length === 2 &&
          stored[0].id === user.id &&
          stored[0].role === 'user' &&
          stored[0].content === user.content &&
          stored[1].id === answerId &&
          stored[1].role === 'assistant' &&
          stored[1].content === shownText(stream.events),
        `stored ${brief(stored)}`,
      );
      const latest = await messages(ctx, thread.id, '?format=agui&limit=1');
      must(latest.length === 1 && latest[0].role === 'assistant', `limit=1: ${brief(latest)}`);
      return `user ${user.id as string}, assistant ${answerId}; limit=1 gives the answer`;
    },
  },
  {
    id: 'X3.messages-ui',
    level: 3,
    title:
      'GET …/messages (format=ui, the default): {id, threadId, role, createdAt, content {format: 2, parts}}',
    source: {
      kind: 'io-bridge',
      clause:
        'format=ui (default): {id, threadId, role, createdAt, content: {format: 2, parts}}; a tool call and its result are one tool-invocation part with state result',
    },
    run: async (ctx) => {
      const { thread, stream } = await storedRun(ctx, 'text', ctx.options.prompts.text);
      const ui = await messages(ctx, thread.id, '?format=ui');
      const byDefault = await messages(ctx, thread.id);
      must(JSON.stringify(ui) === JSON.stringify(byDefault), 'format=ui is not the default');
      must(
        ui.length === 2 &&
          ui.every(
            (m) =>
              m.threadId === thread.id &&
              ISO_8601.test(m.createdAt) &&
              m.content?.format === 2 &&
              Array.isArray(m.content.parts) &&
              !nullAt(m),
          ) &&
          ui[1].content.parts.some((p: any) => p.type === 'text' && p.text === shownText(stream.events)),
        `format=ui: ${brief(ui)}`,
      );
      const tool = await storedRun(ctx, 'tool', ctx.options.prompts.serverTool);
      const [call] = toolCalls(tool.stream.events);
      must(call, 'the tool run made no tool call');
      const parts = (await messages(ctx, tool.thread.id, '?format=ui')).flatMap((m) => m.content.parts);
      const invocations = parts.filter(
        (p) => p.type === 'tool-invocation' && p.toolInvocation?.toolCallId === call.toolCallId,
      );
      must(
        invocations.length === 1 &&
          invocations[0].toolInvocation.state === 'result' &&
          invocations[0].toolInvocation.toolName === call.name,
        `tool-invocation parts: ${brief(invocations)}`,
      );
      return 'text parts as streamed; one tool-invocation part with state result';
    },
  },
  {
    id: 'X3.memory-creates-thread',
    level: 3,
    title:
      'a run whose forwardedProps.memory names a new thread creates it for the caller and stores the turn',
    source: {
      kind: 'io-bridge',
      clause:
        'a run is stored in its thread when forwardedProps.memory.thread names it; a thread that does not exist yet is created',
    },
    run: async (ctx) => {
      const input = body(ctx, ctx.options.prompts.text);
      input.forwardedProps = { ...input.forwardedProps, memory: { thread: input.threadId } };
      const stream = await ctx.client.run(input);
      accepted(stream);
      finished(stream);
      const read = await ctx.client.json(threadPath(input.threadId));
      must(
        read.status === 200 && !threadShape(read.body),
        `GET the thread: ${read.status} ${brief(read.body)}`,
      );
      const roles = (await messages(ctx, input.threadId, '?format=agui')).map((m) => m.role);
      must(roles.join(',') === 'user,assistant', `roles ${roles.join(',')}`);
      return 'thread created; user and assistant stored';
    },
  },
];

const LEVEL_4: Check[] = [
  {
    id: 'X4.agent-shape',
    level: 4,
    title: 'GET /agents → {agents, defaultAgentId}, each agent in the Agent shape, the default among them',
    source: {
      kind: 'io-bridge',
      clause:
        'Agent: {id, name, description?, modelId, tools: [{name, description, requiresApproval?}], capabilities: {frontendTools: true, structuredOutput, memory}}',
    },
    run: async (ctx) => {
      const read = await ctx.client.json('/agents');
      const list = read.body?.agents;
      must(read.status === 200 && Array.isArray(list) && list.length > 0, `GET /agents: ${brief(read.body)}`);
      for (const agent of list)
        must(
          typeof agent.id === 'string' &&
            typeof agent.name === 'string' &&
            typeof agent.modelId === 'string' &&
            Array.isArray(agent.tools) &&
            agent.tools.every((t: any) => typeof t?.name === 'string') &&
            agent.capabilities?.frontendTools === true &&
            typeof agent.capabilities.structuredOutput === 'boolean' &&
            typeof agent.capabilities.memory === 'boolean' &&
            !nullAt(agent),
          `not an Agent: ${brief(agent)}`,
        );
      must(
        list.some((a: any) => a.id === read.body.defaultAgentId),
        `defaultAgentId ${read.body.defaultAgentId} is not listed`,
      );
      return `${list.length} agents; default ${read.body.defaultAgentId}`;
    },
  },
  {
    id: 'X4.unknown-agent',
    level: 4,
    title: 'an unknown agent is 404 NOT_FOUND: GET /agents/:agentId, and POST /run before any stream',
    source: {
      kind: 'io-bridge',
      clause: 'forwardedProps.agentId unknown → 404 before streaming; GET /agents/:agentId 404 unknown',
    },
    run: async (ctx) => {
      const route = await errorEnvelope(
        await ctx.client.request(`/agents/${kitId('no-such-agent')}`),
        404,
        'NOT_FOUND',
      );
      const run = await errorEnvelope(
        await ctx.client.request('/run', {
          body: runBody(ctx.options.prompts.text, kitId('no-such-agent')),
          headers: { accept: 'text/event-stream' },
        }),
        404,
        'NOT_FOUND',
      );
      return `route ${route}; run ${run}`;
    },
  },
];

export const IO_BRIDGE_CHECKS: Check[] = [...LEVEL_1, ...LEVEL_2, ...LEVEL_3, ...LEVEL_4];
