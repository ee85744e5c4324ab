import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BuiltService, freePort, startBuiltService } from '../support/built-service';
import { eventually } from '../support/app';
import { McpTestServer, startMcpTestServer } from '../support/mcp-test-server';
import { TestIdp } from '../support/oidc';
import { OpenAiServer, startOpenAiServer } from '../support/openai-server';
import { Event, Frame, openRun, parseFrames, postRun, runInput, runToFrames, uid } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

/**
 * Agents defined in AGENTS_CONFIG alone, with tools of real MCP servers (docs/agents.md#agents-in-configuration):
 * `@modelcontextprotocol/server-everything` over stdio and Streamable HTTP, `server-filesystem` over
 * stdio, and an HTTP MCP server of the test's own that records the token of every call. The service
 * is the built one (`node dist/src/main.js`), as users run it.
 */
const ROOT = resolve(__dirname, '..', '..');
const NODE = process.execPath;
const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const FILESYSTEM = join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const TEST_SERVER = join(ROOT, 'test/support/mcp-test-server.ts');

const yaml = (value: unknown) => JSON.stringify(value, null, 2);

/** A child process that serves until it is killed, ready once it printed `ready`. */
async function serve(args: string[], env: Record<string, string>, ready: RegExp): Promise<ChildProcess> {
  const child = spawn(NODE, ['--disable-warning=MODULE_TYPELESS_PACKAGE_JSON', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let seen = '';
  await new Promise<void>((done, fail) => {
    const look = (chunk: Buffer) => {
      seen += chunk.toString();
      if (ready.test(seen)) done();
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.once('exit', (code) => fail(new Error(`exited ${code}: ${seen}`)));
  });
  return child;
}

const toolResult = (frames: Frame[], toolCallId?: string) =>
  frames
    .map((f) => f.event)
    .filter((e) => e.type === 'TOOL_CALL_RESULT' && (!toolCallId || e.toolCallId === toolCallId));

const lastType = (frames: Frame[]) => frames.at(-1)?.event.type as string;

describe('agents and MCP tools from AGENTS_CONFIG', () => {
  let service: BuiltService;
  let openai: OpenAiServer;
  let desk: McpTestServer;
  let idp: TestIdp;
  let everythingHttp: ChildProcess;
  let everythingSse: ChildProcess;
  let killable: ChildProcess;
  let downPort: number;
  let late: McpTestServer | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'mcp-agents-'));
  const folder = join(dir, 'shared');

  const bearer = async (sub: string) => ({ authorization: `Bearer ${await idp.sign({ sub })}` });
  const framesOf = async (res: Response) => parseFrames(await res.text()).frames;

  beforeAll(async () => {
    mkdirSync(folder);
    writeFileSync(join(folder, 'motto.txt'), 'Measure twice, cut once.\n');
    openai = await startOpenAiServer(() => ({ text: ['Done.'] }));
    desk = await startMcpTestServer();
    idp = await TestIdp.start();
    const httpPort = await freePort();
    everythingHttp = await serve(
      [EVERYTHING, 'streamableHttp'],
      { PORT: String(httpPort) },
      /listening on port/i,
    );
    const ssePort = await freePort();
    everythingSse = await serve([EVERYTHING, 'sse'], { PORT: String(ssePort) }, /running on port/i);
    const killablePort = await freePort();
    killable = await serve([TEST_SERVER], { PORT: String(killablePort) }, /listening on/);
    downPort = await freePort();
    const file = join(dir, 'agents.yaml');
    writeFileSync(
      file,
      yaml({
        mcpServers: {
          everything: { command: NODE, args: [EVERYTHING, 'stdio'], tools: ['echo', 'get-sum'] },
          everythingHttp: { url: `http://127.0.0.1:${httpPort}/mcp`, tools: ['echo'] },
          // Only the older SSE transport: reached through the fallback.
          everythingSse: { url: `http://127.0.0.1:${ssePort}/sse`, tools: ['echo'] },
          files: { command: NODE, args: [FILESYSTEM, folder], tools: ['read_text_file', 'list_directory'] },
          desk: { url: desk.url, forwardAuth: 'bearer', requireApproval: ['add'] },
          killable: { url: `http://127.0.0.1:${killablePort}/mcp`, tools: ['hang'] },
          later: { url: `http://127.0.0.1:${downPort}/mcp` },
        },
        agents: {
          reader: {
            name: 'Reader',
            description: 'Reads the shared folder',
            instructions: 'You read files for the user.',
            model: 'openai/gpt-test',
            tools: ['current_time'],
            mcpServers: ['files', 'everything', 'everythingHttp', 'everythingSse'],
          },
          desk: { instructions: 'You run desk tools.', model: 'scripted', mcpServers: ['desk', 'killable'] },
          waiting: { instructions: 'You wait for a server.', model: 'scripted', mcpServers: ['later'] },
        },
      }),
    );
    service = await startBuiltService({
      AGENTS_CONFIG: file,
      AUTH_MODE: 'jwt',
      OIDC_ISSUER: idp.issuer,
      OIDC_AUDIENCE: idp.audience,
      MODEL: 'openai/gpt-test',
      OPENAI_BASE_URL: openai.url,
      OPENAI_API_KEY: 'test-key',
      TOOL_TIMEOUT_MS: '1500',
      MAX_TOOL_RESULT_BYTES: '2000',
      RATE_LIMIT_PER_MINUTE: '100000',
      LOG_LEVEL: 'log',
    });
  }, 90_000);

  afterAll(async () => {
    await service?.stop();
    everythingHttp?.kill('SIGKILL');
    everythingSse?.kill('SIGKILL');
    killable?.kill('SIGKILL');
    await Promise.all([openai?.close(), desk?.close(), idp?.close(), late?.close()]);
  });

  /** A run posted with a fresh token of `sub`'s; its frames once it ended. */
  const post = async (sub: string, body: Record<string, unknown>, headers?: { authorization: string }) =>
    framesOf(
      await postRun(`${service.base}/run`, body, {
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          ...(headers ?? (await bearer(sub))),
        },
      }),
    );
  const agentView = async (id: string) =>
    (await fetch(`${service.base}/agents/${id}`, { headers: await bearer('admin-reader') })).json();

  it('lists a config agent with its MCP tools under their prefixes, and a server that is down as unavailable', async () => {
    const reader = await agentView('reader');
    expect(reader).toMatchObject({ id: 'reader', name: 'Reader', modelId: 'openai/gpt-test' });
    expect(reader.tools.map((t: { name: string }) => t.name).sort()).toEqual(
      [
        'current_time',
        'everythingHttp_echo',
        'everythingSse_echo',
        'everything_echo',
        'everything_get-sum',
        'files_list_directory',
        'files_read_text_file',
      ].sort(),
    );
    expect(reader.mcpServers).toEqual([
      { name: 'files', transport: 'stdio', status: 'connected' },
      { name: 'everything', transport: 'stdio', status: 'connected' },
      { name: 'everythingHttp', transport: 'http', status: 'connected' },
      { name: 'everythingSse', transport: 'sse', status: 'connected' },
    ]);
    const deskView = await agentView('desk');
    expect(deskView.tools).toContainEqual(
      expect.objectContaining({ name: 'desk_add', requiresApproval: true }),
    );
    const waiting = await agentView('waiting');
    expect(waiting.tools).toEqual([]);
    expect(waiting.mcpServers).toEqual([
      { name: 'later', transport: 'http', status: 'unavailable', error: expect.any(String) },
    ]);
    // The service is ready all the same; the server, once up, is reconnected with backoff.
    expect((await fetch(`${service.origin}/health/ready`)).status).toBe(200);
    late = await startMcpTestServer({ port: downPort });
    const connected = await eventually(async () => {
      const view = await agentView('waiting');
      return view.mcpServers[0].status === 'connected' ? view : undefined;
    }, 20_000);
    expect(connected.tools.map((t: { name: string }) => t.name)).toContain('later_echo');
  }, 30_000);

  it('a config-only agent answers with the results of MCP tools over stdio, Streamable HTTP and SSE', async () => {
    openai.enqueue(
      {
        toolCalls: [
          {
            id: 'call_read',
            name: 'files_read_text_file',
            arguments: JSON.stringify({ path: join(folder, 'motto.txt') }),
          },
          { id: 'call_echo', name: 'everything_echo', arguments: '{"message":"over stdio"}' },
          { id: 'call_http', name: 'everythingHttp_echo', arguments: '{"message":"over http"}' },
          { id: 'call_sse', name: 'everythingSse_echo', arguments: '{"message":"over sse"}' },
        ],
      },
      { text: ['The motto is: Measure twice, cut once.'] },
    );
    const input = runInput('What is the motto?', { forwardedProps: { agentId: 'reader' } });
    const frames = await post('alice', input);
    assertStreamRules(frames, input);
    expect(lastType(frames)).toBe('RUN_FINISHED');
    expect(toolResult(frames, 'call_read')[0].content).toContain('Measure twice, cut once.');
    expect(toolResult(frames, 'call_echo')[0].content).toContain('Echo: over stdio');
    expect(toolResult(frames, 'call_http')[0].content).toContain('Echo: over http');
    expect(toolResult(frames, 'call_sse')[0].content).toContain('Echo: over sse');
    const [first, second] = openai.requests.slice(-2);
    expect(first.messages[0]).toMatchObject({
      role: 'system',
      content: expect.stringContaining('You read files'),
    });
    expect((first.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)).toContain(
      'files_read_text_file',
    );
    const toolMessages = second.messages.filter((m) => m.role === 'tool');
    expect(JSON.stringify(toolMessages)).toContain('Measure twice, cut once.');
  });

  it("carries each caller's own bearer token to the MCP server, 100 runs of many users at once", async () => {
    const users = Array.from({ length: 100 }, (_, i) => `user-${i}`);
    const tokens = new Map<string, string>();
    for (const user of users) tokens.set(user, (await bearer(user)).authorization.slice('Bearer '.length));
    const runs = users.map((user) => {
      const input = runInput(`/tool desk_echo {"text":"${user}"}`, { forwardedProps: { agentId: 'desk' } });
      return postRun(`${service.base}/run`, input, {
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          authorization: `Bearer ${tokens.get(user)}`,
        },
      }).then(framesOf);
    });
    const all = await Promise.all(runs);
    for (const frames of all) expect(lastType(frames)).toBe('RUN_FINISHED');
    const calls = desk.toolCalls('echo').filter((c) => String(c.arguments?.text).startsWith('user-'));
    expect(calls).toHaveLength(100);
    for (const call of calls) expect(call.token).toBe(tokens.get(String(call.arguments!.text)));
    // The token is never logged.
    const output = service.output();
    for (const token of tokens.values()) expect(output).not.toContain(token);
  }, 60_000);

  it('aliases a tool name a provider refuses, and a tool error reaches the model while the server stays connected', async () => {
    const view = await agentView('desk');
    const alias = (view.tools as Array<{ name: string }>).find((t) =>
      t.name.startsWith('desk_reports_latest_'),
    );
    expect(alias?.name).toMatch(/^desk_reports_latest_[0-9a-f]{6}$/);
    const input = runInput(`/tool ${alias!.name} {}\n/tool desk_fail {}`, {
      forwardedProps: { agentId: 'desk' },
    });
    const frames = await post('gina', input);
    assertStreamRules(frames, input);
    const [report, failed] = toolResult(frames);
    expect(report.content).toContain('the latest report');
    expect(failed.content).toContain('the ledger is locked');
    expect(lastType(frames)).toBe('RUN_FINISHED');
    const now = await agentView('desk');
    expect(now.mcpServers).toContainEqual({ name: 'desk', transport: 'http', status: 'connected' });
    // Nor was it reconnected in between: a tool's own error says nothing of the connection.
    expect(service.output()).not.toContain("MCP server 'desk': a call failed");
    const metrics = await (await fetch(`${service.origin}/metrics`)).text();
    expect(metrics).toMatch(
      /io_bridge_mcp_tool_calls_total\{server="desk",tool="fail",outcome="error"\} 1\b/,
    );
    expect(metrics).toMatch(
      /io_bridge_mcp_tool_calls_total\{server="desk",tool="reports.latest",outcome="ok"\} 1\b/,
    );
    expect(metrics).toMatch(/io_bridge_mcp_tool_duration_seconds_count\{server="desk",tool="fail"\} 1\b/);
    expect(metrics).toMatch(/io_bridge_mcp_server_up\{server="desk"\} 1\b/);
  });

  it('asks a person before an approval-gated MCP tool: approved it runs with the caller token, declined it never does', async () => {
    const ask = async (approved: boolean) => {
      const threadId = uid('thread');
      const input = runInput('/tool desk_add {"a":2,"b":3}', {
        threadId,
        protocolVersion: '1.0',
        forwardedProps: { agentId: 'desk', memory: { thread: threadId } },
      });
      const frames = await post('carol', input);
      const finished = frames.at(-1)!.event;
      expect(finished).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'interrupt' } });
      const [interrupt] = finished.outcome.interrupts as Array<{ id: string }>;
      const before = desk.toolCalls('add').length;
      const resumed = {
        threadId,
        runId: uid('run'),
        messages: [],
        protocolVersion: '1.0',
        resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { approved } }],
        forwardedProps: { agentId: 'desk', memory: { thread: threadId } },
      };
      const caller = await bearer('carol');
      const after = await post('carol', resumed, caller);
      expect(lastType(after)).toBe('RUN_FINISHED');
      return { result: toolResult(after)[0] as Event, calls: desk.toolCalls('add').slice(before), caller };
    };
    const yes = await ask(true);
    expect(yes.result.content).toContain('5');
    expect(yes.calls).toHaveLength(1);
    expect(yes.calls[0].authorization).toBe(yes.caller.authorization);
    const no = await ask(false);
    expect(no.result.content).toContain('declined');
    expect(no.calls).toHaveLength(0);
  });

  it('a hung tool ends in TOOL_CALL_RESULT with an error after TOOL_TIMEOUT_MS, and the run goes on', async () => {
    const input = runInput('/tool desk_hang {}', { forwardedProps: { agentId: 'desk' } });
    const frames = await post('dave', input);
    assertStreamRules(frames, input);
    expect(toolResult(frames)[0].content).toContain('did not answer within 1500 ms');
    expect(lastType(frames)).toBe('RUN_FINISHED');
  });

  it('cuts an oversized result at MAX_TOOL_RESULT_BYTES and says so', async () => {
    const input = runInput('/tool desk_big {"bytes":10000}', { forwardedProps: { agentId: 'desk' } });
    const frames = await post('erin', input);
    const content = toolResult(frames)[0].content as string;
    expect(content).toContain('[cut: the result was');
    expect(Buffer.byteLength(content)).toBeLessThan(2400);
    expect(lastType(frames)).toBe('RUN_FINISHED');
  });

  it('a server killed mid-call: the call ends in an error the model reads, the run finishes, the server shows unavailable', async () => {
    const input = runInput('/tool killable_hang {}', { forwardedProps: { agentId: 'desk' } });
    const live = await openRun(`${service.base}/run`, input, await bearer('frank'));
    await live.waitFor((e: Event) => e.type === 'TOOL_CALL_END');
    // The call is at the server (it hangs there); then the server dies.
    await new Promise((r) => setTimeout(r, 200));
    killable.kill('SIGKILL');
    const frames = await live.done;
    assertStreamRules(frames, input);
    expect(toolResult(frames)[0].content).toMatch(/error|failed|terminated/i);
    expect(lastType(frames)).toBe('RUN_FINISHED');
    const view = await eventually(async () => {
      const desk = await agentView('desk');
      const killableView = desk.mcpServers.find((s: { name: string }) => s.name === 'killable');
      return killableView.status === 'unavailable' ? killableView : undefined;
    }, 10_000);
    expect(view.error).toBeDefined();
  });
});

describe('the agents file changed or bad', () => {
  let openai: OpenAiServer;
  let mcp: McpTestServer;
  beforeAll(async () => {
    openai = await startOpenAiServer(() => ({ text: ['Fine.'] }));
    mcp = await startMcpTestServer();
  });
  afterAll(async () => {
    await Promise.all([openai.close(), mcp.close()]);
  });

  it('a bad file stops start-up with one line naming the file, the agent and the field', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'bad-agents-')), 'agents.yaml');
    writeFileSync(file, yaml({ agents: { helper: { instructions: 'Help.', maxSteps: 'many' } } }));
    await expect(startBuiltService({ AGENTS_CONFIG: file }, 30_000)).rejects.toThrow(
      new RegExp(`AGENTS_CONFIG ${file.replace(/[.]/g, '\\.')}: agent 'helper', field 'maxSteps'`),
    );
  }, 40_000);

  it('a file changed while a run streams: new runs get the new agents, the running run finishes on its own', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'reload-agents-')), 'agents.yaml');
    const v1 = {
      mcpServers: { svc: { url: mcp.url } },
      agents: { swap: { instructions: 'Version one.', model: 'openai/gpt-test', mcpServers: ['svc'] } },
    };
    writeFileSync(file, yaml(v1));
    const service = await startBuiltService({
      AGENTS_CONFIG: file,
      AGENTS_CONFIG_POLL_MS: '100',
      MODEL: 'openai/gpt-test',
      OPENAI_BASE_URL: openai.url,
      OPENAI_API_KEY: 'test-key',
      LOG_LEVEL: 'log',
    });
    try {
      const ask = {
        name: 'ask_user',
        description: 'Asks the user',
        parameters: { type: 'object', properties: {} },
      };
      openai.enqueue({ toolCalls: [{ id: 'call_ask', name: 'ask_user', arguments: '{}' }] });
      const input = runInput('Ask me first', { tools: [ask], forwardedProps: { agentId: 'swap' } });
      const live = await openRun(`${service.base}/run`, input);
      await live.waitFor((e: Event) => e.type === 'TOOL_CALL_END');

      writeFileSync(
        file,
        yaml({ agents: { swap: { instructions: 'Version two.', model: 'openai/gpt-test' } } }),
      );
      await eventually(async () => {
        const view = await (await fetch(`${service.base}/agents/swap`)).json();
        return view.tools.length === 0 ? view : undefined;
      }, 10_000);
      const fresh = await runToFrames(
        `${service.base}/run`,
        runInput('Hello', { forwardedProps: { agentId: 'swap' } }),
      );
      expect(lastType(fresh.frames)).toBe('RUN_FINISHED');
      const newest = openai.requests.at(-1)!;
      expect(newest.messages[0].content).toContain('Version two.');
      expect(newest.tools ?? []).toEqual([]);

      // The run that started before the change goes on with its agent: its MCP tool still works.
      openai.enqueue(
        { toolCalls: [{ id: 'call_svc', name: 'svc_echo', arguments: '{"text":"still here"}' }] },
        { text: ['All done.'] },
      );
      const posted = await fetch(`${service.base}/runs/${input.runId}/tool-calls/call_ask/result`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ content: 'yes' }),
      });
      expect(posted.status).toBeLessThan(300);
      const frames = await live.done;
      assertStreamRules(frames, input);
      expect(toolResult(frames, 'call_svc')[0].content).toContain('still here');
      expect(lastType(frames)).toBe('RUN_FINISHED');
      expect(openai.requests.at(-2)!.messages[0].content).toContain('Version one.');

      // A change that doesn't validate is refused with a log line; the agents stay.
      writeFileSync(file, yaml({ agents: { swap: { model: 'Not A Model' } } }));
      await eventually(
        () => Promise.resolve(/the change is refused/.test(service.output()) ? true : undefined),
        10_000,
      );
      expect(service.output()).toMatch(/agent 'swap', field 'model'/);
      const still = await (await fetch(`${service.base}/agents/swap`)).json();
      expect(still.id).toBe('swap');
    } finally {
      await service.stop();
    }
  }, 60_000);
});

describe('examples/agents-config, as it is', () => {
  it('serves the librarian: a folder through server-filesystem (npx), the CRM with the caller token', async () => {
    const openai = await startOpenAiServer(() => ({ text: ['Fine.'] }));
    const crm = await startMcpTestServer({ requireToken: (token) => token !== undefined });
    const idp = await TestIdp.start();
    const folder = mkdtempSync(join(tmpdir(), 'shared-'));
    writeFileSync(join(folder, 'policy.md'), 'Refunds within 30 days.\n');
    const service = await startBuiltService({
      AGENTS_CONFIG: join(ROOT, 'examples/agents-config/agents.yaml'),
      SHARED_FOLDER: folder,
      CRM_MCP_URL: crm.url,
      CRM_SERVICE_TOKEN: 'service-token',
      AUTH_MODE: 'jwt',
      OIDC_ISSUER: idp.issuer,
      OIDC_AUDIENCE: idp.audience,
      MODEL: 'openai/gpt-test',
      OPENAI_BASE_URL: openai.url,
      OPENAI_API_KEY: 'test-key',
    });
    try {
      const authorization = `Bearer ${await idp.sign({ sub: 'hana' })}`;
      const view = await (
        await fetch(`${service.base}/agents/librarian`, { headers: { authorization } })
      ).json();
      const names = (view.tools as Array<{ name: string }>).map((t) => t.name);
      expect(names).toEqual(
        expect.arrayContaining([
          'current_time',
          'files_read_text_file',
          'files_list_directory',
          'crm_whoami',
        ]),
      );
      // Only what the allow-list names: the filesystem server's writes are never offered.
      expect(names).not.toContain('files_write_file');
      openai.enqueue(
        {
          toolCalls: [
            {
              id: 'call_file',
              name: 'files_read_text_file',
              arguments: JSON.stringify({ path: join(folder, 'policy.md') }),
            },
            { id: 'call_crm', name: 'crm_whoami', arguments: '{}' },
          ],
        },
        { text: ['Refunds within 30 days (policy.md).'] },
      );
      const input = runInput('What is the refund policy?', { forwardedProps: { agentId: 'librarian' } });
      const res = await postRun(`${service.base}/run`, input, {
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization },
      });
      const frames = parseFrames(await res.text()).frames;
      assertStreamRules(frames, input);
      expect(toolResult(frames, 'call_file')[0].content).toContain('Refunds within 30 days.');
      expect(toolResult(frames, 'call_crm')[0].content).toContain(authorization.slice('Bearer '.length));
      expect(crm.toolCalls('whoami').map((c) => c.authorization)).toEqual([authorization]);
      // The service's own credential connected and listed the tools; the call went as the caller.
      const listed = crm.requests.filter((r) => r.methods.includes('tools/list'));
      expect(listed.length).toBeGreaterThan(0);
      for (const request of listed) expect(request.authorization).toBe('Bearer service-token');
      expect(openai.requests[0].messages[0].content).toContain('You answer questions from the files');
      // The caller's token goes to the CRM, never into the prompt (only the tool's own answer has it).
      expect(JSON.stringify(openai.requests[0])).not.toContain(authorization.slice('Bearer '.length));
    } finally {
      await service.stop();
      await Promise.all([openai.close(), crm.close(), idp.close()]);
    }
  }, 60_000);
});
