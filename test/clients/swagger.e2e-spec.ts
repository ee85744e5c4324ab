import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv from 'ajv';
import type { Browser, ConsoleMessage } from 'playwright-core';
import { ERROR_CODES, ERROR_STATUS } from '../../src/common/errors';
import { RUN_ERROR_CODES } from '../../src/protocol/agui-events';
import { runAgentInputComponents } from '../../src/openapi/run-agent-input';
import { startApp, TestApp } from '../support/app';
import { openRun, runToFrames } from '../support/sse';
import { TestIdp } from '../support/oidc';
import { launchChromium } from '../support/chromium';

/** Browser notices that are not failures: COOP is ignored on a plain-HTTP origin, as intended. */
const BENIGN = [/Cross-Origin-Opener-Policy header has been ignored/];

type Json = Record<string, any>;
const P = '/io-bridge';
const ENVELOPE = '#/components/schemas/ErrorEnvelope';

/** docs/protocol.md#routes, below the prefix: method, path, tag, success status and schema, error statuses. */
const ROUTES: Array<{
  method: string;
  path: string;
  tag: string;
  ok: string;
  okRef?: string;
  errors: string[];
}> = [
  { method: 'post', path: '/run', tag: 'runs', ok: '200', errors: ['400', '404', '409'] },
  {
    method: 'post',
    path: '/runs/{runId}/tool-calls/{toolCallId}/result',
    tag: 'runs',
    ok: '202',
    okRef: 'AcceptedView',
    errors: ['400', '404', '409'],
  },
  {
    method: 'post',
    path: '/runs/{runId}/cancel',
    tag: 'runs',
    ok: '202',
    okRef: 'AcceptedView',
    errors: ['404', '409'],
  },
  { method: 'get', path: '/runs/{runId}', tag: 'runs', ok: '200', okRef: 'RunView', errors: ['404'] },
  { method: 'get', path: '/runs/{runId}/events', tag: 'runs', ok: '200', errors: ['400', '404', '410'] },
  {
    method: 'get',
    path: '/threads/{threadId}/events',
    tag: 'threads',
    ok: '200',
    errors: ['400', '404', '429'],
  },
  { method: 'get', path: '/agents', tag: 'agents', ok: '200', okRef: 'AgentsList', errors: [] },
  { method: 'get', path: '/agents/{agentId}', tag: 'agents', ok: '200', okRef: 'AgentView', errors: ['404'] },
  {
    method: 'post',
    path: '/threads',
    tag: 'threads',
    ok: '201',
    okRef: 'ThreadView',
    errors: ['400', '409'],
  },
  { method: 'get', path: '/threads', tag: 'threads', ok: '200', okRef: 'ThreadsPage', errors: ['400'] },
  {
    method: 'get',
    path: '/threads/{threadId}',
    tag: 'threads',
    ok: '200',
    okRef: 'ThreadView',
    errors: ['404'],
  },
  {
    method: 'patch',
    path: '/threads/{threadId}',
    tag: 'threads',
    ok: '200',
    okRef: 'ThreadView',
    errors: ['400', '404'],
  },
  { method: 'delete', path: '/threads/{threadId}', tag: 'threads', ok: '204', errors: ['404'] },
  {
    method: 'get',
    path: '/threads/{threadId}/messages',
    tag: 'threads',
    ok: '200',
    okRef: 'MessagesPage',
    errors: ['400', '404'],
  },
  { method: 'get', path: '/usage', tag: 'usage', ok: '200', okRef: 'UsageView', errors: ['400'] },
  {
    method: 'get',
    path: '/admin/usage',
    tag: 'usage',
    ok: '200',
    okRef: 'AdminUsageView',
    errors: ['400', '403'],
  },
  {
    method: 'put',
    path: '/admin/quotas/{resourceId}',
    tag: 'usage',
    ok: '200',
    okRef: 'QuotaView',
    errors: ['400', '403'],
  },
];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** OpenAPI 3.0's `nullable` as JSON Schema: the schema, or null. */
function jsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(jsonSchema);
  if (!node || typeof node !== 'object') return node;
  const { nullable, ...rest } = node as Json;
  const converted = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, jsonSchema(v)]));
  return nullable === true ? { anyOf: [converted, { type: 'null' }] } : converted;
}

/** Validates a value against a schema of the document (its `$ref`s resolve in the document's components). */
function validator(doc: Json): (schema: Json, value: unknown) => unknown[] {
  const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
  const components = jsonSchema(doc.components) as Json;
  return (schema, value) => {
    const validate = ajv.compile({ components, ...(jsonSchema(schema) as Json) });
    return validate(value) ? [] : (validate.errors ?? []);
  };
}

const schemaName = (ref: string) => ref.replace('#/components/schemas/', '');

/** Every `$ref` in a value, recursively. */
function refsIn(value: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) value.forEach((v) => refsIn(v, out));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') out.add(v);
      else refsIn(v, out);
    }
  }
  return out;
}

describe('OpenAPI document at /docs-json', () => {
  let t: TestApp;
  let doc: Json;
  const op = (method: string, path: string): Json => doc.paths[path]?.[method];

  beforeAll(async () => {
    t = await startApp();
    const res = await fetch(`${t.baseUrl}/docs-json`);
    expect(res.status).toBe(200);
    doc = (await res.json()) as Json;
  });
  afterAll(() => t.close());

  it('documents every route of docs/protocol.md#routes with its method and tag, plus the health routes', () => {
    for (const r of ROUTES) {
      const operation = op(r.method, `${P}${r.path}`);
      expect({ route: `${r.method} ${r.path}`, found: Boolean(operation) }).toEqual({
        route: `${r.method} ${r.path}`,
        found: true,
      });
      expect(operation.tags).toEqual([r.tag]);
      expect(operation.summary).toEqual(expect.any(String));
    }
    const documented = Object.entries(doc.paths as Json).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method} ${path}`),
    );
    expect(documented.filter((d) => d.includes(P)).sort()).toEqual(
      ROUTES.map((r) => `${r.method} ${P}${r.path}`).sort(),
    );
    expect(op('get', '/health/live')).toBeDefined();
    expect(op('get', '/health/ready')).toBeDefined();
    expect(doc.paths['/metrics']).toBeUndefined();
  });

  it('declares the bearer scheme, required by every route under the prefix and not by health', () => {
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ bearer: [] }]);
    for (const r of ROUTES) {
      const operation = op(r.method, `${P}${r.path}`);
      expect(operation.security ?? doc.security).toContainEqual({ bearer: [] });
      expect(operation.responses['401']?.content['application/json'].schema.$ref).toBe(ENVELOPE);
    }
    expect(op('get', '/health/live').security).toEqual([]);
    expect(op('get', '/health/ready').security).toEqual([]);
  });

  it('gives each route its success schema and its error statuses with the error envelope', () => {
    const envelope = doc.components.schemas.ErrorEnvelope;
    expect(Object.keys(envelope.properties)).toEqual(['statusCode', 'code', 'message', 'details']);
    expect(envelope.required).toEqual(['statusCode', 'code', 'message']);
    const codes: string[] = doc.components.schemas[schemaName(envelope.properties.code.allOf[0].$ref)].enum;
    expect(codes).toEqual(
      expect.arrayContaining(['VALIDATION_FAILED', 'NOT_FOUND', 'THREAD_BUSY', 'THREAD_ID_CONFLICT']),
    );
    for (const r of ROUTES) {
      const operation = op(r.method, `${P}${r.path}`);
      const where = `${r.method} ${r.path}`;
      expect({ where, statuses: Object.keys(operation.responses) }).toEqual({
        where,
        statuses: expect.arrayContaining([r.ok, ...r.errors]),
      });
      const ok = operation.responses[r.ok];
      if (r.okRef) {
        expect({ where, ref: ok.content['application/json'].schema.$ref }).toEqual({
          where,
          ref: `#/components/schemas/${r.okRef}`,
        });
      }
      for (const [status, response] of Object.entries(operation.responses as Record<string, Json>)) {
        if (Number(status) < 400) continue;
        expect({ where, status, ref: response.content?.['application/json']?.schema?.$ref }).toEqual({
          where,
          status,
          ref: ENVELOPE,
        });
        // The description names the stable code(s) a client can branch on.
        const named = codes.filter((code) => (response.description as string).includes(code));
        expect({ where, status, named: named.length > 0 }).toEqual({ where, status, named: true });
      }
    }
    expect(op('post', `${P}/threads`).responses['409'].description).toContain('THREAD_ID_CONFLICT');
    expect(op('post', `${P}/run`).responses['409'].description).toEqual(
      expect.stringMatching(/RUN_ALREADY_EXISTS[\s\S]*THREAD_BUSY/),
    );
  });

  it('shows, on every error response, an example envelope of each code it names, with its own status', () => {
    const examplesOf = (method: string, path: string, status: string): Record<string, Json> =>
      op(method, `${P}${path}`).responses[status].content['application/json'].examples;
    for (const r of ROUTES) {
      const operation = op(r.method, `${P}${r.path}`);
      for (const [status, response] of Object.entries(operation.responses as Record<string, Json>)) {
        if (Number(status) < 400) continue;
        const where = `${r.method} ${r.path} ${status}`;
        const examples = examplesOf(r.method, r.path, status) ?? {};
        const codes = Object.keys(examples);
        expect({ where, some: codes.length > 0 }).toEqual({ where, some: true });
        for (const code of codes) {
          expect({ where, code, status: ERROR_STATUS[code as keyof typeof ERROR_STATUS] }).toEqual({
            where,
            code,
            status: Number(status),
          });
          expect({ where, value: examples[code].value }).toEqual({
            where,
            value: expect.objectContaining({ statusCode: Number(status), code, message: expect.any(String) }),
          });
          expect(response.description).toContain(code);
        }
      }
      expect(Object.keys(examplesOf(r.method, r.path, '401'))).toEqual(['UNAUTHENTICATED']);
    }
    expect(Object.keys(examplesOf('post', '/run', '409'))).toEqual([
      'RUN_ALREADY_EXISTS',
      'THREAD_BUSY',
      'INTERRUPT_ALREADY_RESOLVED',
    ]);
    expect(Object.keys(examplesOf('post', '/run', '410'))).toEqual(['INTERRUPT_EXPIRED']);
    expect(Object.keys(examplesOf('post', '/run', '400'))).toEqual(['VALIDATION_FAILED']);
    expect(examplesOf('post', '/run', '400').VALIDATION_FAILED.value.details).toEqual([
      { path: expect.any(String), message: expect.any(String) },
    ]);
    expect(Object.keys(examplesOf('post', '/run', '429'))).toEqual([
      'RATE_LIMITED',
      'TOO_MANY_ACTIVE_RUNS',
      'QUOTA_EXCEEDED',
    ]);
    expect(Object.keys(examplesOf('post', '/threads', '409'))).toEqual(['THREAD_ID_CONFLICT']);
    expect(Object.keys(examplesOf('post', '/runs/{runId}/cancel', '409'))).toEqual(['RUN_NOT_ACTIVE']);
    expect(Object.keys(examplesOf('get', '/threads', '403'))).toEqual(['FORBIDDEN']);
  });

  it('shows examples on every route (request bodies, success responses, path parameters), each valid against its schema', () => {
    const errorsOf = validator(doc);
    const operations = [
      ...ROUTES.map((r) => ({ method: r.method, path: `${P}${r.path}` })),
      { method: 'get', path: '/health/live' },
      { method: 'get', path: '/health/ready' },
    ];
    let checked = 0;
    for (const { method, path } of operations) {
      const operation = op(method, path);
      const media: Array<[string, Json]> = [];
      const body = operation.requestBody?.content?.['application/json'];
      if (operation.requestBody) media.push(['request', body]);
      for (const [status, response] of Object.entries(operation.responses as Record<string, Json>)) {
        if (Number(status) >= 400) continue;
        for (const [type, content] of Object.entries((response.content ?? {}) as Record<string, Json>))
          media.push([`${status} ${type}`, content]);
      }
      for (const [what, content] of media) {
        const where = `${method} ${path} ${what}`;
        const examples = Object.entries((content.examples ?? {}) as Record<string, Json>);
        expect({ where, examples: examples.length > 0 }).toEqual({ where, examples: true });
        for (const [name, example] of examples) {
          expect({ where, name, summary: typeof example.summary }).toEqual({
            where,
            name,
            summary: 'string',
          });
          expect({ where, name, errors: errorsOf(content.schema, example.value) }).toEqual({
            where,
            name,
            errors: [],
          });
          checked++;
        }
      }
      for (const parameter of (operation.parameters ?? []) as Json[]) {
        if (parameter.in !== 'path') continue;
        const where = `${method} ${path} ${parameter.name}`;
        expect({ where, example: parameter.example }).toEqual({ where, example: expect.any(String) });
        if (/^(threadId|runId)$/.test(parameter.name as string)) expect(parameter.example).toMatch(UUID);
      }
    }
    expect(checked).toBeGreaterThanOrEqual(30);
  });

  it('uses UUIDs for ids, shows /run with tools, memory and an approval, and each route its own examples', () => {
    const bodies = (method: string, path: string): Record<string, Json> =>
      op(method, `${P}${path}`).requestBody.content['application/json'].examples;
    const runs = bodies('post', '/run');
    expect(Object.keys(runs)).toEqual(['chat', 'serverTool', 'frontendTool', 'memory', 'queued', 'approval']);
    for (const [name, { value }] of Object.entries(runs)) {
      expect({ name, threadId: value.threadId, runId: value.runId }).toEqual({
        name,
        threadId: expect.stringMatching(UUID),
        runId: expect.stringMatching(UUID),
      });
      for (const message of value.messages as Json[]) expect(message.id).toMatch(UUID);
    }
    expect(runs.frontendTool.value.tools[0]).toMatchObject({
      name: 'pick_date',
      parameters: { type: 'object' },
    });
    expect(runs.frontendTool.value.context).toHaveLength(1);
    expect(runs.memory.value.forwardedProps.memory).toMatchObject({ thread: runs.memory.value.threadId });
    expect(runs.queued.value.forwardedProps.ifBusy).toBe('enqueue');
    expect(runs.approval.value.resume[0]).toMatchObject({ status: 'resolved', payload: { approved: true } });
    expect(bodies('post', '/threads').thread.value.id).toMatch(UUID);
    expect(Object.keys(bodies('post', '/runs/{runId}/tool-calls/{toolCallId}/result'))).toEqual([
      'content',
      'error',
    ]);
    const okExamples = (method: string, path: string, status: string): Record<string, Json> =>
      Object.values(op(method, `${P}${path}`).responses[status].content as Record<string, Json>)[0].examples;
    expect(Object.keys(okExamples('get', '/threads/{threadId}/messages', '200'))).toEqual(['ui', 'agui']);
    expect(Object.keys(okExamples('get', '/runs/{runId}', '200'))).toEqual([
      'finished',
      'waiting',
      'approval',
      'error',
    ]);
    expect(okExamples('get', '/threads/{threadId}', '200').example.value.id).toMatch(UUID);
    const stream = okExamples('post', '/run', '200').example.value as string;
    expect(stream).toMatch(/^id: 1\ndata: \{"type":"RUN_STARTED"/);
    expect(stream).toContain('"type":"TOOL_CALL_RESULT"');
    expect(stream.trimEnd()).toMatch(/"type":"RUN_FINISHED"[^\n]*$/);
    // No example anywhere is made up from a pattern or carries a placeholder id.
    expect(JSON.stringify(doc.paths)).not.toMatch(/thread-1|run-1|msg-2/);
  });

  it('has POST /run and POST /threads examples that work as they are, with fresh ids on every load', async () => {
    const fresh = (await (await fetch(`${t.baseUrl}/docs-json`)).json()) as Json;
    const runs: Record<string, Json> =
      fresh.paths[`${P}/run`].post.requestBody.content['application/json'].examples;
    expect(runs.chat.value.runId).not.toBe(
      op('post', `${P}/run`).requestBody.content['application/json'].examples.chat.value.runId,
    );

    for (const name of ['chat', 'serverTool', 'memory']) {
      const { res, frames } = await runToFrames(t.runUrl, runs[name].value);
      expect({ name, status: res.status, last: frames.at(-1)?.event.type }).toEqual({
        name,
        status: 200,
        last: 'RUN_FINISHED',
      });
      if (name === 'serverTool')
        expect(frames.find((f) => f.event.type === 'TOOL_CALL_RESULT')?.event.content).toContain(
          '"result":57',
        );
    }
    const remembered = await fetch(`${t.baseUrl}${P}/threads/${runs.memory.value.threadId}/messages`, {
      headers: { 'x-resource-id': runs.memory.value.forwardedProps.memory.resource },
    });
    expect(remembered.status).toBe(200);
    expect(((await remembered.json()) as Json).messages).toHaveLength(2);

    // The frontend tool: the run waits for the result, posted as the result example shows it.
    const input = runs.frontendTool.value;
    const live = await openRun(t.runUrl, input);
    const end = await live.waitFor((e) => e.type === 'TOOL_CALL_END');
    const result =
      fresh.paths[`${P}/runs/{runId}/tool-calls/{toolCallId}/result`].post.requestBody.content[
        'application/json'
      ].examples.content.value;
    const posted = await fetch(`${t.baseUrl}${P}/runs/${input.runId}/tool-calls/${end.toolCallId}/result`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(result),
    });
    expect(posted.status).toBe(202);
    expect((await live.done).at(-1)?.event.type).toBe('RUN_FINISHED');

    const thread =
      fresh.paths[`${P}/threads`].post.requestBody.content['application/json'].examples.thread.value;
    const created = await fetch(`${t.baseUrl}${P}/threads`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(thread),
    });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({
      id: thread.id,
      title: 'Trip to Lisbon',
      agentId: 'assistant',
    });
  });

  it('offers no OIDC sign-in unless AUTH_MODE=jwt', async () => {
    expect(Object.keys(doc.components.securitySchemes)).toEqual(['bearer']);
    const init = await (await fetch(`${t.baseUrl}/docs/swagger-ui-init.js`)).text();
    expect(init).not.toContain('"initOAuth"');
  });

  it('offers a POST /run example that runs as it is: fresh ids on every load, no parentRunId', async () => {
    const example = (d: Json) =>
      d.paths[`${P}/run`].post.requestBody.content['application/json'].examples.chat;
    const again = (await (await fetch(`${t.baseUrl}/docs-json`)).json()) as Json;
    const [first, second] = [example(doc).value, example(again).value];
    expect(Object.keys(first).sort()).toEqual(['context', 'messages', 'runId', 'threadId', 'tools']);
    expect(second.runId).not.toBe(first.runId);
    expect(second.messages[0].id).not.toBe(first.messages[0].id);
    expect(op('post', `${P}/run`).requestBody.description).toContain('new runId');
    // Swagger UI's own copy of the document is fresh too.
    const init = await (await fetch(`${t.baseUrl}/docs/swagger-ui-init.js`)).text();
    const inUi = /"runId":\s*"([0-9a-f-]{36})"/.exec(init)?.[1];
    expect(inUi).toEqual(expect.stringMatching(UUID));
    expect([first.runId, second.runId]).not.toContain(inUi);
    // Sent as it is, the example is a valid run.
    const { res, frames } = await runToFrames(t.runUrl, first);
    expect(res.status).toBe(200);
    expect(frames.at(-1)?.event.type).toBe('RUN_FINISHED');
  });

  it('documents POST /run: RunAgentInputDto in, a text/event-stream of the AG-UI event union out', () => {
    const run = op('post', `${P}/run`);
    expect(run.requestBody.required).toBe(true);
    expect(run.requestBody.content['application/json'].schema.$ref).toBe(
      '#/components/schemas/RunAgentInputDto',
    );
    const input = doc.components.schemas.RunAgentInputDto;
    expect(input.required).toEqual(['threadId', 'runId', 'messages']);
    expect(input.properties.messages.items.$ref).toBe('#/components/schemas/MessageDto');
    // Each schema of the run request as derived from the one RunAgentInputPipe checks, not another.
    for (const [name, schema] of Object.entries(runAgentInputComponents()))
      expect({ name, schema: doc.components.schemas[name] }).toEqual({
        name,
        schema: JSON.parse(JSON.stringify(schema)),
      });
    expect(Object.keys(run.responses['200'].content)).toEqual(['text/event-stream']);
    expect(run.responses['200'].content['text/event-stream'].schema.type).toBe('string');

    // The union: one model per event type, told apart by `type`; the description lists each with its fields.
    const frame = doc.components.schemas.AgUiEventFrame;
    const union = frame.properties.data;
    expect(union.discriminator.propertyName).toBe('type');
    const events = (union.oneOf as Json[]).map((ref) => doc.components.schemas[schemaName(ref.$ref)]);
    const types = events.map((e) => e.properties.type.enum[0]);
    expect(types).toEqual(
      expect.arrayContaining([
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
        'REASONING_MESSAGE_CONTENT',
      ]),
    );
    for (const event of events) {
      const type = event.properties.type.enum[0];
      expect(event.required).toEqual(expect.arrayContaining(['type', 'timestamp']));
      const line = (run.description as string).split('\n').find((l) => l.includes(`\`${type}\` {`));
      expect({ type, line: Boolean(line) }).toEqual({ type, line: true });
      for (const field of Object.keys(event.properties)) {
        if (field === 'type' || field === 'timestamp') continue;
        expect({ type, field, inDescription: line!.includes(field) }).toEqual({
          type,
          field,
          inDescription: true,
        });
      }
    }
    expect(doc.components.schemas.TextMessageStartEvent.properties.role.enum).toEqual(['assistant']);
    expect(doc.components.schemas.ToolCallResultEvent.required).toEqual(
      expect.arrayContaining(['messageId', 'toolCallId', 'content', 'role']),
    );
    expect(doc.components.schemas.RunFinishedEvent.required).not.toContain('result');
  });

  it('lists every error code from its one list: the envelope ErrorCode and the RUN_ERROR RunErrorCode enums', () => {
    const envelopeCode = doc.components.schemas.ErrorEnvelope.properties.code.allOf[0].$ref;
    expect(doc.components.schemas[schemaName(envelopeCode)].enum).toEqual([...ERROR_CODES]);
    const runErrorCode = doc.components.schemas.RunErrorEvent.properties.code;
    const runErrorCodes =
      runErrorCode.enum ?? doc.components.schemas[schemaName(runErrorCode.allOf[0].$ref)].enum;
    expect(runErrorCodes).toEqual([...RUN_ERROR_CODES]);
    const runDescription = op('post', `${P}/run`).description as string;
    expect(runDescription).toContain(`code one of ${RUN_ERROR_CODES.join(', ')}`);
  });

  it('describes the shapes completely (the Swagger CLI plugin does not run here) and every $ref resolves', () => {
    const props = (name: string) => Object.keys(doc.components.schemas[name].properties ?? {});
    expect(props('ThreadView')).toEqual([
      'id',
      'resourceId',
      'agentId',
      'title',
      'metadata',
      'createdAt',
      'updatedAt',
    ]);
    expect(doc.components.schemas.ThreadView.required).toEqual([
      'id',
      'resourceId',
      'metadata',
      'createdAt',
      'updatedAt',
    ]);
    expect(props('ThreadsPage')).toEqual(['threads', 'nextCursor']);
    expect(doc.components.schemas.ThreadsPage.properties.nextCursor.nullable).toBe(true);
    expect(props('RunView')).toEqual([
      'id',
      'threadId',
      'agentId',
      'status',
      'startedAt',
      'finishedAt',
      'error',
      'pendingToolCalls',
      'usage',
      'interrupts',
      'approvals',
    ]);
    expect(props('TokenUsageView')).toEqual([
      'provider',
      'model',
      'inputTokens',
      'outputTokens',
      'totalTokens',
      'reasoningTokens',
      'cachedInputTokens',
      'cacheWriteInputTokens',
    ]);
    expect(props('AgentView')).toEqual([
      'id',
      'name',
      'description',
      'modelId',
      'tools',
      'mcpServers',
      'capabilities',
    ]);
    expect(props('McpServerStatusView')).toEqual(['name', 'transport', 'status', 'error']);
    expect(props('AgentsList')).toEqual(['agents', 'defaultAgentId']);
    expect(props('CreateThreadDto')).toEqual(['id', 'title', 'agentId', 'metadata']);
    expect(props('UpdateThreadDto')).toEqual(['title', 'metadata']);
    expect(props('MessagesPage')).toEqual(['messages', 'nextCursor']);
    expect(props('ToolResultDto')).toEqual(['content', 'result', 'error']);

    const params = (method: string, path: string) =>
      Object.fromEntries((op(method, path).parameters as Json[]).map((p) => [`${p.in}:${p.name}`, p.schema]));
    expect(params('get', `${P}/threads`)).toMatchObject({
      'query:limit': { type: 'integer', minimum: 1, maximum: 100, default: 50 },
      'query:cursor': { type: 'string' },
      'query:agentId': { type: 'string' },
    });
    expect(params('get', `${P}/threads/{threadId}/messages`)).toMatchObject({
      'path:threadId': { type: 'string' },
      'query:limit': { type: 'integer', minimum: 1, maximum: 500, default: 100 },
      'query:before': { type: 'string' },
      'query:format': { enum: ['ui', 'agui'] },
    });

    // No schema reachable from the routes (or the event frame) is an empty object; every reference resolves.
    const seen = new Set<string>();
    const queue = [...refsIn(doc.paths), '#/components/schemas/AgUiEventFrame'];
    while (queue.length) {
      const ref = queue.pop()!;
      if (seen.has(ref)) continue;
      seen.add(ref);
      const schema = doc.components.schemas[schemaName(ref)];
      expect({ ref, exists: Boolean(schema) }).toEqual({ ref, exists: true });
      if (!schema.enum) {
        expect({ ref, properties: Object.keys(schema.properties ?? {}).length > 0 }).toEqual({
          ref,
          properties: true,
        });
      }
      queue.push(...refsIn(schema));
    }
    expect(seen).toContain('#/components/schemas/RunStartedEvent');
  });
});

describe('Swagger UI at /docs, in headless Chromium', () => {
  let t: TestApp;
  let browser: Browser | undefined;

  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await browser?.close();
    await t.close();
  });

  it('shows the route groups and executes GET /io-bridge/agents through "Try it out"', async () => {
    browser = await launchChromium();
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (m: ConsoleMessage) => {
      if (m.type() === 'error' && !BENIGN.some((b) => b.test(m.text())))
        problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('requestfailed', (r) => problems.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`));
    // CSP violations are reported to the page, whether or not they reach the console.
    await page.addInitScript(() =>
      document.addEventListener('securitypolicyviolation', (e) =>
        console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI}`),
      ),
    );

    const origin = `http://io-bridge.test:${new URL(t.baseUrl).port}`;
    const response = await page.goto(`${origin}/docs`, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);
    // Swagger UI runs under the service's CSP (helmet), which must not upgrade its same-origin requests.
    const csp = (await response!.allHeaders())['content-security-policy'];
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('upgrade-insecure-requests');
    for (const tag of ['runs', 'threads', 'agents']) {
      await page.locator(`h3.opblock-tag[data-tag="${tag}"]`).waitFor({ timeout: 15_000 });
    }
    await expect(page.locator('.opblock').count()).resolves.toBeGreaterThanOrEqual(ROUTES.length);
    await expect(page.locator('.info .title').innerText()).resolves.toContain('io-bridge');

    const agents = page.locator('#operations-agents-AgentsController_list');
    await agents.locator('.opblock-summary').click();
    await agents.getByRole('button', { name: 'Try it out' }).click();
    await agents.getByRole('button', { name: 'Execute' }).click();
    const live = agents.locator('.live-responses-table tr.response');
    await live.waitFor({ timeout: 15_000 });
    await expect(live.locator('.response-col_status').innerText()).resolves.toContain('200');
    const body = await live.locator('.response-col_description .highlight-code').first().innerText();
    expect(body).toContain('"assistant"');
    expect(body).toContain('defaultAgentId');
    await expect(agents.locator('.request-url').innerText()).resolves.toContain(`${origin}/io-bridge/agents`);

    // "Try it out" on POST /run starts from the documented example: fresh ids, no generated parentRunId.
    const run = page.locator('#operations-runs-RunsController_run');
    await run.locator('.opblock-summary').click();
    await run.getByRole('button', { name: 'Try it out' }).click();
    const offered = JSON.parse(await run.locator('textarea.body-param__text').inputValue()) as Json;
    expect(Object.keys(offered).sort()).toEqual(['context', 'messages', 'runId', 'threadId', 'tools']);
    expect(offered.runId).toMatch(UUID);

    if (process.env.SWAGGER_SCREENSHOT) {
      await page.screenshot({
        path: join(mkdtempSync(join(tmpdir(), 'swagger-')), 'docs.png'),
        fullPage: true,
      });
    }
    expect(problems).toEqual([]);
  }, 90_000);
});

describe('Swagger sign-in with AUTH_MODE=jwt: OIDC authorization code with PKCE', () => {
  let idp: TestIdp;
  let t: TestApp;
  let browser: Browser | undefined;

  beforeAll(async () => {
    idp = await TestIdp.start();
    t = await startApp({
      AUTH_MODE: 'jwt',
      OIDC_ISSUER: idp.issuer,
      OIDC_AUDIENCE: idp.audience,
      OIDC_CLIENT_ID: 'swagger-ui',
    });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await idp?.close();
  });

  it('declares the provider as an openIdConnect scheme beside bearer, and Swagger UI uses PKCE with the client', async () => {
    const doc = (await (await fetch(`${t.baseUrl}/docs-json`)).json()) as Json;
    expect(doc.components.securitySchemes.oidc).toEqual({
      type: 'openIdConnect',
      openIdConnectUrl: `${idp.issuer}/.well-known/openid-configuration`,
      description: expect.stringContaining('PKCE'),
    });
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    // Either one: a pasted token, or a sign-in.
    expect(doc.security).toEqual([{ bearer: [] }, { oidc: ['openid'] }]);
    expect(doc.paths['/health/live'].get.security).toEqual([]);

    const init = await (await fetch(`${t.baseUrl}/docs/swagger-ui-init.js`)).text();
    const options = /"initOAuth":\s*(\{[^}]*\})/.exec(init)?.[1];
    expect(JSON.parse(options ?? 'null')).toEqual({
      clientId: 'swagger-ui',
      scopes: ['openid'],
      usePkceWithAuthorizationCodeGrant: true,
    });
    // The page may call the provider (discovery, token) from the browser; nothing else is opened up.
    const csp = (await fetch(`${t.baseUrl}/docs/`)).headers.get('content-security-policy');
    expect(csp).toContain(`connect-src 'self' ${idp.origin}`);
    // The sign-in popup keeps its opener through the provider's pages.
    expect((await fetch(`${t.baseUrl}/docs/`)).headers.get('cross-origin-opener-policy')).toBe(
      'same-origin-allow-popups',
    );
    const redirect = await fetch(`${t.baseUrl}/docs/oauth2-redirect.html`);
    expect(redirect.status).toBe(200);
    expect(redirect.headers.get('cross-origin-opener-policy')).toBe('unsafe-none');
  });

  it('in Chromium: Authorize signs in at the provider (code + PKCE), then "Try it out" calls the API with its token', async () => {
    browser = await launchChromium();
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('console', (m: ConsoleMessage) => {
      if (m.type() === 'error' && !BENIGN.some((b) => b.test(m.text())))
        problems.push(`console: ${m.text()}`);
    });

    const response = await page.goto(`${t.baseUrl}/docs`, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);
    expect(page.url()).toBe(`${t.baseUrl}/docs/`);
    await page.getByRole('button', { name: 'Authorize' }).first().click();
    const dialog = page.locator('.dialog-ux .modal-ux');
    await dialog.waitFor({ timeout: 15_000 });
    const oidc = dialog.locator('.auth-container').filter({ hasText: 'oidc' });
    await oidc.locator('code', { hasText: 'authorization_code with PKCE' }).waitFor({ timeout: 15_000 });
    await expect(oidc.locator('#client_id_authorization_code').inputValue()).resolves.toBe('swagger-ui');
    await oidc.locator('input[type=checkbox][data-value=openid]').check();
    if (process.env.SWAGGER_SCREENSHOT)
      await page.screenshot({ path: join(mkdtempSync(join(tmpdir(), 'swagger-')), 'authorize.png') });

    // The provider's page opens in a popup and sends it back to Swagger UI's redirect page with a code.
    const popup = page.waitForEvent('popup');
    await oidc.getByRole('button', { name: 'Apply given OAuth2 credentials' }).click();
    // The popup may be done (and closed) before its close event is awaited: check first, then wait.
    const signIn = await popup;
    if (!signIn.isClosed()) await signIn.waitForEvent('close', { timeout: 15_000 });
    await oidc.locator('button', { hasText: 'Logout' }).waitFor({ timeout: 15_000 });
    expect(idp.signIns).toEqual([
      {
        clientId: 'swagger-ui',
        redirectUri: `${t.baseUrl}/docs/oauth2-redirect.html`,
        method: 'S256',
        pkceProved: true,
      },
    ]);
    await dialog.locator('button.close-modal').click();

    const agents = page.locator('#operations-agents-AgentsController_list');
    await agents.locator('.opblock-summary').click();
    await agents.getByRole('button', { name: 'Try it out' }).click();
    await agents.getByRole('button', { name: 'Execute' }).click();
    const live = agents.locator('.live-responses-table tr.response');
    await live.waitFor({ timeout: 15_000 });
    await expect(live.locator('.response-col_status').innerText()).resolves.toContain('200');
    await expect(agents.locator('.curl-command').innerText()).resolves.toMatch(/Authorization: Bearer ey/);
    expect(problems).toEqual([]);
  }, 90_000);
});
