import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';

export type ChatRequest = {
  model: string;
  messages: Array<Record<string, any>>;
  tools?: unknown[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [k: string]: unknown;
};

/** Token counts a reply reports in its usage chunk (OpenAI's `usage`, with its details). */
export type ReplyUsage = { prompt: number; completion: number; cached?: number; reasoning?: number };

type Counted = { usage?: ReplyUsage };

/**
 * What the server answers one request with:
 * - `text`: content deltas, then `finish_reason: stop`;
 * - `toolCalls`: each call's index, id and name first, then its arguments in fragments;
 * - `status`: an HTTP error with OpenAI's error body (`retryAfter` in seconds sets `retry-after`);
 * - `contextLength`: OpenAI's 400 `context_length_exceeded`;
 * - `hang`: the role chunk and this text, then nothing more (a provider stuck mid-stream);
 * - `silent`: the request is read and never answered (no status, no bytes);
 * - `drop`: the socket is destroyed, before the status line or after these deltas.
 */
export type Reply =
  | ({ text: string[] } & Counted)
  | ({ toolCalls: Array<{ id: string; name: string; arguments: string }> } & Counted)
  | { status: number; error: string; retryAfter?: number; code?: string; type?: string }
  | { contextLength: true }
  | { hang: string }
  | { silent: true }
  | { drop: 'before-headers' }
  | { drop: 'mid-stream'; text: string[] };

export type OpenAiServer = {
  url: string;
  requests: ChatRequest[];
  /** Requests answered by `options.aside`, in order. */
  aside: ChatRequest[];
  /** Each request's headers, in the order of `requests`. */
  headers: IncomingHttpHeaders[];
  /** Responses whose connection closed before the server ended them: the caller gave up. */
  closedEarly: () => number;
  /** Replies for the next requests, in order, before `answer` is asked again. */
  enqueue: (...replies: Reply[]) => void;
  close: () => Promise<void>;
};

export type OpenAiServerOptions = {
  /**
   * Requests answered apart from the script: a reply here for a request (a title an agent's memory
   * asks for in the background) is not taken from the queue, and the request goes to `aside`, not
   * `requests`.
   */
  aside?: (request: ChatRequest) => Reply | undefined;
  /** The model's context window: a request whose prompt estimate exceeds it gets `context_length_exceeded`. */
  contextWindow?: number;
  /** The `model` the chunks name (OpenAI names the dated snapshot that served the request). */
  servedModel?: (requested: string) => string;
};

/** The server's own token estimate of a prompt: a quarter of its characters, at least one per message. */
export function promptTokens(request: ChatRequest): number {
  return request.messages.reduce(
    (sum, m) => sum + Math.max(1, Math.ceil(JSON.stringify(m.content ?? m.tool_calls ?? '').length / 4)),
    0,
  );
}

const CONTEXT_LENGTH = (limit: number, asked: number) => ({
  error: {
    message: `This model's maximum context length is ${limit} tokens. However, your messages resulted in ${asked} tokens. Please reduce the length of the messages.`,
    type: 'invalid_request_error',
    param: 'messages',
    code: 'context_length_exceeded',
  },
});

/**
 * An OpenAI-compatible chat-completions server (streaming SSE), sending chunks the way OpenAI's API
 * does: a role chunk, content deltas, tool-call deltas split across chunks (index, id and name first,
 * then argument fragments), a chunk with `finish_reason`, a final usage chunk with empty `choices`
 * when the request asks `stream_options.include_usage`, then `data: [DONE]`. Every chunk carries
 * `usage: null` when usage was asked, as OpenAI's do. Each request is scripted: `enqueue`d replies
 * first, then `answer`.
 */
export async function startOpenAiServer(
  answer: (req: ChatRequest) => Reply,
  options: OpenAiServerOptions = {},
): Promise<OpenAiServer> {
  const requests: ChatRequest[] = [];
  const aside: ChatRequest[] = [];
  const headers: IncomingHttpHeaders[] = [];
  const queue: Reply[] = [];
  let closedEarly = 0;
  let served = 0;
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
      const apart = options.aside?.(request);
      if (apart) {
        aside.push(request);
        respond(request, apart, res, promptTokens(request), `chatcmpl-${++served}`);
        return;
      }
      requests.push(request);
      headers.push(req.headers);
      const asked = promptTokens(request);
      const reply: Reply =
        options.contextWindow !== undefined && asked > options.contextWindow
          ? { contextLength: true }
          : (queue.shift() ?? answer(request));
      respond(request, reply, res, asked, `chatcmpl-${++served}`);
    });
  });

  function respond(request: ChatRequest, reply: Reply, res: ServerResponse, asked: number, id: string): void {
    if ('status' in reply) {
      res.writeHead(reply.status, {
        'content-type': 'application/json',
        ...(reply.retryAfter !== undefined ? { 'retry-after': String(reply.retryAfter) } : {}),
      });
      res.end(
        JSON.stringify({
          error: {
            message: reply.error,
            type: reply.type ?? 'server_error',
            param: null,
            code: reply.code ?? null,
          },
        }),
      );
      return;
    }
    if ('contextLength' in reply) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify(CONTEXT_LENGTH(options.contextWindow ?? 8192, asked)));
      return;
    }
    if ('silent' in reply) {
      res.on('close', () => closedEarly++);
      return;
    }
    if ('drop' in reply && reply.drop === 'before-headers') {
      res.socket?.destroy();
      return;
    }
    const model = options.servedModel?.(request.model) ?? request.model;
    if (request.stream !== true && 'text' in reply && !('drop' in reply)) {
      // A call that did not ask to stream (a title) gets one chat.completion, as OpenAI answers it.
      const completionTokens = reply.text.length;
      const u = reply.usage ?? { prompt: asked, completion: completionTokens };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created: 1_764_692_300,
          model,
          system_fingerprint: 'fp_test',
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: reply.text.join(''), refusal: null },
              logprobs: null,
              finish_reason: 'stop',
            },
          ],
          usage: {
            prompt_tokens: u.prompt,
            completion_tokens: u.completion,
            total_tokens: u.prompt + u.completion,
          },
        }),
      );
      return;
    }
    const withUsage = request.stream_options?.include_usage === true;
    const line = (fields: object) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1_764_692_300, model, system_fingerprint: 'fp_test', ...fields, ...(withUsage && !('usage' in fields) ? { usage: null } : {}) })}\n\n`;
    const chunk = (delta: object, finish: string | null = null) =>
      line({ choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk({ role: 'assistant', content: '', refusal: null }));
    if ('hang' in reply) {
      res.write(chunk({ content: reply.hang }));
      res.on('close', () => closedEarly++);
      return;
    }
    if ('drop' in reply) {
      for (const t of reply.text) res.write(chunk({ content: t }));
      // Let the deltas leave before the connection is torn down, as a peer's reset would follow them.
      setImmediate(() => res.socket?.destroy());
      return;
    }
    let completion = 0;
    if ('text' in reply) {
      for (const t of reply.text) res.write(chunk({ content: t }));
      completion = reply.text.length;
      res.write(chunk({}, 'stop'));
    } else {
      reply.toolCalls.forEach((call, index) => {
        res.write(
          chunk({
            ...(index === 0 ? { role: 'assistant', content: null } : {}),
            tool_calls: [
              { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
            ],
          }),
        );
        const third = Math.ceil(call.arguments.length / 3);
        for (let at = 0; at < call.arguments.length; at += third) {
          res.write(
            chunk({ tool_calls: [{ index, function: { arguments: call.arguments.slice(at, at + third) } }] }),
          );
          completion++;
        }
      });
      res.write(chunk({}, 'tool_calls'));
    }
    if (withUsage) {
      const u = reply.usage ?? { prompt: asked, completion };
      res.write(
        line({
          choices: [],
          usage: {
            prompt_tokens: u.prompt,
            completion_tokens: u.completion,
            total_tokens: u.prompt + u.completion,
            prompt_tokens_details: { cached_tokens: u.cached ?? 0, audio_tokens: 0 },
            completion_tokens_details: {
              reasoning_tokens: u.reasoning ?? 0,
              audio_tokens: 0,
              accepted_prediction_tokens: 0,
              rejected_prediction_tokens: 0,
            },
          },
        }),
      );
    }
    res.end('data: [DONE]\n\n');
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    aside,
    headers,
    closedEarly: () => closedEarly,
    enqueue: (...replies) => void queue.push(...replies),
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
