import { createServer, IncomingHttpHeaders, IncomingMessage, Server } from 'node:http';

export type ChatRequest = {
  model: string;
  messages: Array<Record<string, any>>;
  tools?: unknown[];
  [k: string]: unknown;
};

/** What the fake server answers: text deltas, tool calls, an HTTP error, or text that never ends. */
export type Reply =
  | { text: string[] }
  | { hang: string }
  | { toolCalls: Array<{ id: string; name: string; arguments: string }> }
  | { status: number; error: string };

/**
 * A small OpenAI-compatible chat-completions server (streaming SSE, as OpenAI, Ollama and vLLM
 * speak it), so the real provider path through Mastra is exercised over HTTP.
 */
export async function startOpenAiServer(answer: (req: ChatRequest) => Reply): Promise<{
  url: string;
  requests: ChatRequest[];
  /** Each request's headers, in the order of `requests`. */
  headers: IncomingHttpHeaders[];
  closedEarly: () => number;
  close: () => Promise<void>;
}> {
  const requests: ChatRequest[] = [];
  const headers: IncomingHttpHeaders[] = [];
  /** Responses whose connection closed before the server ended them: the caller gave up. */
  let closedEarly = 0;
  const read = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => resolve(body));
    });
  const server: Server = createServer((req, res) => {
    void read(req).then((body) => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404).end();
        return;
      }
      const request = JSON.parse(body) as ChatRequest;
      requests.push(request);
      headers.push(req.headers);
      const reply = answer(request);
      if ('status' in reply) {
        res.writeHead(reply.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: reply.error, type: 'server_error' } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta: object, finish: string | null = null) =>
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: request.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      if ('hang' in reply) {
        res.write(chunk({ role: 'assistant', content: reply.hang }));
        res.on('close', () => closedEarly++);
        return;
      }
      if ('text' in reply) {
        reply.text.forEach((t, i) =>
          res.write(chunk(i === 0 ? { role: 'assistant', content: t } : { content: t })),
        );
        res.write(chunk({}, 'stop'));
      } else {
        reply.toolCalls.forEach((call, index) => {
          res.write(
            chunk({
              role: 'assistant',
              tool_calls: [
                { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
              ],
            }),
          );
          const half = Math.ceil(call.arguments.length / 2);
          for (const part of [call.arguments.slice(0, half), call.arguments.slice(half)]) {
            res.write(chunk({ tool_calls: [{ index, function: { arguments: part } }] }));
          }
        });
        res.write(chunk({}, 'tool_calls'));
      }
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    headers,
    closedEarly: () => closedEarly,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
