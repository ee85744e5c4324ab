import { createServer, Server } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { HttpAgent, type RunAgentInput } from '@ag-ui/client';
import { build, type Plugin } from 'esbuild';
import type { Browser } from 'playwright-core';
import { BuiltService, freePort, startBuiltService } from '../support/built-service';
import { launchChromium } from '../support/chromium';
import { uid } from '../support/sse';

/**
 * The page's `@ag-ui/client` is the one `@assistant-ui/react-ag-ui` 0.0.57 depends on and is built
 * against (0.0.58: no protocol version, so io-bridge sends the pre-1.0 shapes). With `@ag-ui/client`
 * 1.0 that assistant-ui reads any `RUN_FINISHED` carrying `outcome: {type: 'success'}` as a finished
 * turn, pending tool calls or not, so it runs the tool and never sends the result (assistant-ui issue
 * 6500, fixed in 0.0.58; docs/clients.md says so).
 */
const agUiClientOfAssistantUi: Plugin = {
  name: 'ag-ui-client-of-assistant-ui',
  setup(pluginBuild) {
    const resolveDir = dirname(require.resolve('@assistant-ui/react-ag-ui'));
    pluginBuild.onResolve({ filter: /^@ag-ui\/client$/ }, (args) =>
      args.pluginData === agUiClientOfAssistantUi
        ? undefined
        : pluginBuild.resolve(args.path, {
            kind: args.kind,
            resolveDir,
            pluginData: agUiClientOfAssistantUi,
          }),
    );
  },
};

/** What the page keeps on `window` (test/fixtures/assistant-ui/page.mjs). */
type PageWindow = {
  toolCalls: unknown[];
  runtime: {
    thread: {
      append: (message: unknown) => void;
      getState: () => {
        isRunning: boolean;
        messages: readonly { role: string; content: readonly { type: string; text?: string }[] }[];
      };
    };
  };
};

/**
 * The frontends most AG-UI users pick, unchanged, against the built service with CLIENT_PROTOCOL=ag-ui:
 * each runs a frontend tool after its run ends and sends the result in the next run (docs/clients.md).
 */
describe('stock AG-UI frontends against the built service (CLIENT_PROTOCOL=ag-ui)', () => {
  let service: BuiltService | undefined;
  let page: Server | undefined;
  let pageOrigin = '';
  beforeAll(async () => {
    const port = await freePort();
    pageOrigin = `http://127.0.0.1:${port}`;
    service = await startBuiltService({
      DATABASE_URL: process.env.E2E_DATABASE_URL!,
      CLIENT_PROTOCOL: 'ag-ui',
      CORS_ORIGINS: pageOrigin,
    });
    const bundle = await build({
      entryPoints: [join(__dirname, '..', 'fixtures', 'assistant-ui', 'page.mjs')],
      bundle: true,
      write: false,
      format: 'iife',
      platform: 'browser',
      define: { 'process.env.NODE_ENV': '"production"' },
      plugins: [agUiClientOfAssistantUi],
      logLevel: 'error',
    });
    const script = bundle.outputFiles[0].contents;
    const html = `<!doctype html><html><body><div id="root"></div><script>window.bridgeUrl = ${JSON.stringify(service.base)};</script><script src="/page.js"></script></body></html>`;
    page = createServer((req, res) => {
      if (req.url === '/page.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
      else res.writeHead(200, { 'content-type': 'text/html' }).end(html);
    });
    await new Promise<void>((resolve) => page!.listen(port, '127.0.0.1', resolve));
  }, 180_000);
  let browser: Browser | undefined;
  afterAll(async () => {
    await browser?.close();
    if (page) await new Promise((resolve) => page!.close(resolve));
    await service?.stop();
  });

  const test = (title: string, fn: () => Promise<void>, timeout = 60_000) =>
    it(
      title,
      async () => {
        try {
          await fn();
        } catch (err) {
          process.stderr.write(`\n--- "${title}" failed; the service's output:\n${service?.output()}\n---\n`);
          throw err;
        }
      },
      timeout,
    );

  const BROWSER_TOOL = {
    name: 'browser_alert',
    description: 'Shows a message to the user',
    parameters: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  };

  test('@ag-ui/client 1.0 (HttpAgent): RUN_FINISHED names the pending call; the tool message in the next run completes it', async () => {
    const threadId = uid('thread');
    const agent = new HttpAgent({ url: `${service!.base}/run`, threadId });
    agent.addMessage({ id: uid('msg'), role: 'user', content: '/tool browser_alert {"message":"hi"}' });
    let finished: { outcome?: string; pendingToolCallIds?: string[] } = {};
    const subscriber = {
      onRunFinishedEvent: (params: { outcome?: string; pendingToolCallIds?: string[] }) => {
        finished = params;
      },
    };
    await agent.runAgent(
      { tools: [BROWSER_TOOL], forwardedProps: { memory: { thread: threadId } } },
      subscriber,
    );
    const call = agent.messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []))[0];
    expect(call.function).toEqual({ name: 'browser_alert', arguments: '{"message":"hi"}' });
    expect(finished.outcome).toBe('success');
    expect(finished.pendingToolCallIds).toEqual([call.id]);

    agent.addMessage({ id: uid('tool'), role: 'tool', toolCallId: call.id, content: 'shown' });
    await agent.runAgent(
      { tools: [BROWSER_TOOL], forwardedProps: { memory: { thread: threadId } } },
      subscriber,
    );
    const last = agent.messages.at(-1)!;
    expect(last).toMatchObject({ role: 'assistant', content: 'Tool browser_alert returned "shown"' });
    expect(finished.pendingToolCallIds ?? []).toEqual([]);
    // Stored once each: the client sent the whole history again.
    const stored = await (await fetch(`${service!.base}/threads/${threadId}/messages?format=agui`)).json();
    expect(stored.messages.map((m: { role: string }) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
  });

  test('CopilotKit (runtime 1.75 with @copilotkit/core, its bundled @ag-ui/client 0.0.59): the frontend tool runs and the agent answers', async () => {
    process.env.COPILOTKIT_TELEMETRY_DISABLED = 'true';
    const { CopilotRuntime } = await import('@copilotkit/runtime/v2');
    const { createCopilotNodeListener } = await import('@copilotkit/runtime/v2/node');
    const { CopilotKitCore } = await import('@copilotkit/core');
    // The runtime's own @ag-ui/client (0.0.59): strict about events, declares no protocol version.
    const runtimeRequire = createRequire(require.resolve('@copilotkit/runtime'));
    const { HttpAgent: RuntimeHttpAgent } = runtimeRequire('@ag-ui/client') as {
      HttpAgent: new (config: { url: string }) => never;
    };
    const runtime = new CopilotRuntime({
      agents: { default: new RuntimeHttpAgent({ url: `${service!.base}/run` }) },
    });
    const listener = createCopilotNodeListener({ runtime, basePath: '/api/copilotkit' });
    const server = createServer((req, res) => void listener(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const g = globalThis as { window?: unknown };
    const hadWindow = 'window' in g;
    // CopilotKitCore connects to its runtime only where it finds a window (a browser).
    g.window ??= {
      location: { origin: 'http://localhost', href: 'http://localhost/' },
      addEventListener() {},
      removeEventListener() {},
    };
    try {
      const calls: unknown[] = [];
      const core = new CopilotKitCore({
        runtimeUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}/api/copilotkit`,
        tools: [
          {
            name: 'browser_alert',
            description: 'Shows a message to the user',
            handler: (args: unknown) => {
              calls.push(args);
              return Promise.resolve('shown');
            },
          },
        ],
      });
      let agent = core.getAgent('default');
      for (let i = 0; i < 100 && !agent; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        agent = core.getAgent('default');
      }
      expect(agent).toBeDefined();
      agent!.addMessage({ id: uid('msg'), role: 'user', content: '/tool browser_alert {"message":"hi"}' });
      await core.runAgent({ agent: agent! });
      expect(calls).toEqual([{ message: 'hi' }]);
      expect(agent!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(agent!.messages.at(-1)!.content).toBe('Tool browser_alert returned "shown"');
    } finally {
      if (!hadWindow) delete g.window;
      await new Promise((resolve) => server.close(resolve));
    }
  });

  describe.each([
    ['stored (the app made the thread with POST /threads)', true],
    ['stateless (a bare HttpAgent, as in its README)', false],
  ])('assistant-ui (@assistant-ui/react-ag-ui in Chromium), %s', (_title, stored) => {
    test('the browser runs the frontend tool, sends its result in the next run, and shows the answer', async () => {
      const threadId = uid('thread');
      if (stored) {
        const created = await fetch(`${service!.base}/threads`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id: threadId }),
        });
        expect(created.status).toBe(201);
      }
      browser ??= await launchChromium();
      const tab = await browser.newPage();
      try {
        const runs: RunAgentInput[] = [];
        tab.on('request', (request) => {
          if (request.method() === 'POST' && request.url() === `${service!.base}/run`)
            runs.push(request.postDataJSON() as RunAgentInput);
        });
        await tab.goto(stored ? `${pageOrigin}/?thread=${threadId}` : pageOrigin);
        await tab.waitForFunction(() => (window as unknown as PageWindow).runtime !== undefined);
        await tab.evaluate(() =>
          (window as unknown as PageWindow).runtime.thread.append({
            role: 'user',
            content: [{ type: 'text', text: '/tool browser_alert {"message":"hi"}' }],
          }),
        );
        // Settled: nothing running, and an assistant message with text (the turn after the tool's).
        const answer = await tab
          .waitForFunction(
            () => {
              const state = (window as unknown as PageWindow).runtime.thread.getState();
              const text = state.messages
                .filter((m) => m.role === 'assistant')
                .flatMap((m) => m.content.filter((part) => part.type === 'text').map((part) => part.text));
              return !state.isRunning && text.length > 0 && text.join('');
            },
            undefined,
            { timeout: 30_000 },
          )
          .then(
            (handle) => handle.jsonValue(),
            async (err: Error) => {
              const state = await tab.evaluate(() =>
                JSON.stringify((window as unknown as PageWindow).runtime.thread.getState().messages),
              );
              throw new Error(
                `${err.message}\nthe page's messages: ${state}\nits runs: ${JSON.stringify(runs)}`,
              );
            },
          );
        expect(answer).toBe('Tool browser_alert returned {"shown":"hi"}');
        expect(await tab.evaluate(() => (window as unknown as PageWindow).toolCalls)).toEqual([
          { message: 'hi' },
        ]);

        // Two runs: the first ended at the call, the second carried the tool's result as a tool message.
        expect(runs).toHaveLength(2);
        expect(runs[0].protocolVersion).toBeUndefined();
        expect(runs.map((run) => run.threadId)).toEqual([runs[0].threadId, runs[0].threadId]);
        if (stored) expect(runs[0].threadId).toBe(threadId);
        const [user, call, result] = runs[1].messages;
        expect(user).toEqual(runs[0].messages[0]);
        expect(call).toMatchObject({
          role: 'assistant',
          toolCalls: [{ function: { name: 'browser_alert', arguments: '{"message":"hi"}' } }],
        });
        const toolCallId = (call as { toolCalls: { id: string }[] }).toolCalls[0].id;
        expect(result).toMatchObject({ role: 'tool', toolCallId, content: '{"shown":"hi"}' });

        const messages = await fetch(`${service!.base}/threads/${runs[0].threadId}/messages?format=agui`);
        if (stored) {
          // Stored once each, though the page sent the whole history again.
          const body = (await messages.json()) as { messages: { role: string; toolCallId?: string }[] };
          expect(body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
          expect(body.messages[2].toolCallId).toBe(toolCallId);
        } else {
          expect(messages.status).toBe(404);
        }
      } finally {
        await tab.close();
      }
    });
  });
});
