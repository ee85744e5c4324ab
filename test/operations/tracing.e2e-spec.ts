import { createHash, randomBytes } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import { startApp, TestApp } from '../support/app';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMcpTestServer } from '../support/mcp-test-server';
import { startReceiver } from '../support/otlp-receiver';
import { startOpenAiServer } from '../support/openai-server';
import { openRun, runInput } from '../support/sse';

const GET_CITY = {
  name: 'get_city',
  description: 'Asks the browser for the user city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

describe('traces (OTLP/HTTP)', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(() => receiver.close());

  it("exports a run's spans under the caller's traceparent: request, run (owner hashed), model call, server and frontend tools", async () => {
    const t: TestApp = await startApp({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_SERVICE_NAME: 'io-bridge-test',
    });
    const traceId = hex(16);
    const parentSpanId = hex(8);
    const input = runInput('/tool calculate {"expression":"6*7"}\n/tool get_city {"city":"Lyon"}', {
      tools: [GET_CITY],
    });
    try {
      const run = await openRun(t.runUrl, input, {
        traceparent: `00-${traceId}-${parentSpanId}-01`,
        tracestate: 'vendor=1',
        'x-resource-id': 'alice@example.com',
      });
      const start = await run.waitFor((e) => e.type === 'TOOL_CALL_START' && e.toolCallName === 'get_city');
      const end = await run.waitFor((e) => e.type === 'TOOL_CALL_END' && e.toolCallId === start.toolCallId);
      const posted = await fetch(
        `${t.baseUrl}/io-bridge/runs/${input.runId}/tool-calls/${end.toolCallId}/result`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-resource-id': 'alice@example.com' },
          body: JSON.stringify({ content: { city: 'Lyon' } }),
        },
      );
      expect(posted.status).toBe(202);
      const frames = await run.done;
      expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    } finally {
      // Closing the app flushes the batch of spans to the receiver.
      await t.close();
    }

    const spans = receiver.spans.filter((s) => s.traceId === traceId);
    const http = spans.find((s) => s.name === 'POST /io-bridge/run')!;
    expect(http).toMatchObject({ parentSpanId, kind: 2 /* SERVER */, service: 'io-bridge-test' });
    expect(http.attributes).toMatchObject({
      'http.route': '/io-bridge/run',
      'http.response.status_code': 200,
    });

    const runSpan = spans.find((s) => s.name === 'run assistant')!;
    expect(runSpan.parentSpanId).toBe(http.spanId);
    expect(runSpan.attributes).toEqual({
      'io_bridge.run.id': input.runId,
      'io_bridge.thread.id': input.threadId,
      'io_bridge.agent.id': 'assistant',
      'io_bridge.owner.hash': createHash('sha256').update('alice@example.com').digest('hex').slice(0, 16),
      'io_bridge.run.outcome': 'finished',
    });
    expect(JSON.stringify(spans)).not.toContain('alice@example.com');

    const models = spans.filter((s) => s.name === 'chat scripted');
    // Two steps: the tool calls, then the answer after their results.
    expect(models).toHaveLength(2);
    for (const m of models) expect(m.parentSpanId).toBe(runSpan.spanId);
    const tools = spans.filter((s) => s.name.startsWith('execute_tool '));
    expect(tools.map((s) => [s.name, s.attributes['io_bridge.tool.kind'], s.parentSpanId]).sort()).toEqual([
      ['execute_tool calculate', 'server', runSpan.spanId],
      ['execute_tool get_city', 'frontend', runSpan.spanId],
    ]);
    // The tool-result POST is a trace of its own (it sent no traceparent).
    expect(
      receiver.spans.some((s) => s.name === 'POST /io-bridge/runs/:runId/tool-calls/:toolCallId/result'),
    ).toBe(true);
  });

  it("names an MCP tool's server on its span, and a tool the server failed is an error span", async () => {
    const mcp = await startMcpTestServer();
    const file = join(mkdtempSync(join(tmpdir(), 'traced-agents-')), 'agents.json');
    writeFileSync(
      file,
      JSON.stringify({
        mcpServers: { desk: { url: mcp.url } },
        agents: { clerk: { instructions: 'You file things.', model: 'scripted', mcpServers: ['desk'] } },
      }),
    );
    const t = await startApp({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, AGENTS_CONFIG: file });
    const traceId = hex(16);
    const input = runInput('/tool desk_echo {"text":"filed"}\n/tool desk_fail {}', {
      forwardedProps: { agentId: 'clerk' },
    });
    try {
      const run = await openRun(t.runUrl, input, { traceparent: `00-${traceId}-${hex(8)}-01` });
      expect((await run.done).at(-1)!.event.type).toBe('RUN_FINISHED');
    } finally {
      await t.close();
      await mcp.close();
    }
    const tools = receiver.spans.filter((s) => s.traceId === traceId && s.name.startsWith('execute_tool '));
    expect(
      tools.map((s) => [s.name, s.attributes['io_bridge.mcp.server'], s.status?.code ?? 0]).sort(),
    ).toEqual([
      ['execute_tool desk_echo', 'desk', 0],
      ['execute_tool desk_fail', 'desk', 2 /* ERROR */],
    ]);
  });

  it("records a failed run's outcome and code, and passes the trace context to an OpenAI-compatible provider", async () => {
    const provider = await startOpenAiServer(() => ({ status: 400, error: 'bad request' }));
    const t = await startApp({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      MODEL: 'openai/gpt-test',
      OPENAI_BASE_URL: provider.url,
      MODEL_MAX_RETRIES: '0',
    });
    const traceId = hex(16);
    const input = runInput('hello');
    try {
      const run = await openRun(t.runUrl, input, { traceparent: `00-${traceId}-${hex(8)}-01` });
      const frames = await run.done;
      expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'MODEL_ERROR' });
    } finally {
      await t.close();
      await provider.close();
    }
    const runSpan = receiver.spans.find((s) => s.traceId === traceId && s.name === 'run assistant')!;
    expect(runSpan.attributes).toMatchObject({
      'io_bridge.run.outcome': 'error',
      'io_bridge.run.error_code': 'MODEL_ERROR',
    });
    expect(runSpan.status?.code).toBe(2 /* ERROR */);
    const model = receiver.spans.find((s) => s.traceId === traceId && s.name === 'chat gpt-test')!;
    expect(model.parentSpanId).toBe(runSpan.spanId);
    // The provider's request continues the trace, with the model-call span as its parent.
    expect(provider.headers[0].traceparent).toBe(`00-${traceId}-${model.spanId}-01`);
  });

  it('without OTEL_EXPORTER_OTLP_ENDPOINT registers no provider: spans are the no-op, nothing is sent', async () => {
    const t = await startApp();
    try {
      expect(trace.getTracer('probe').startSpan('probe').isRecording()).toBe(false);
      const run = await openRun(t.runUrl, runInput('/tool calculate {"expression":"1+1"}'), {
        traceparent: `00-${hex(16)}-${hex(8)}-01`,
      });
      expect((await run.done).at(-1)!.event.type).toBe('RUN_FINISHED');
    } finally {
      await t.close();
    }
    expect(receiver.spans).toEqual([]);
  });
});
