import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS } from '../../src/app.factory';
import { startApp, TestApp } from '../support/app';
import { MAIN } from '../support/built-service';
import { launchChromium } from '../support/chromium';
import { runInput } from '../support/sse';

/** What the page's client saw, step by step; `error` is the message of a fetch that rejected. */
type ClientReport = {
  created?: { status: number; requestId: string | null; id?: string };
  run?: {
    status: number;
    contentType: string | null;
    text: string;
    types: string[];
    rateLimit: string | null;
  };
  limited?: { status: number; retryAfter: string | null; code?: string };
  renamed?: { status: number; title?: string };
  listed?: { status: number; titles: string[] };
  deleted?: { status: number };
  gone?: { status: number; code?: string };
  error?: string;
};

/**
 * A browser client's whole session, run inside the page: the io.Assist calls with the headers they send.
 * Runs in Chromium, so it may only use what a page has (fetch, streams, TextDecoder).
 */
async function clientSession(args: { api: string; owner: string; run: unknown; rerun: unknown }) {
  const report: ClientReport = {};
  const headers = {
    Authorization: 'Bearer browser-token',
    'Content-Type': 'application/json',
    'X-Resource-Id': args.owner,
    'X-Request-Id': `req-${args.owner}`,
  };
  try {
    const threadId = (args.run as { threadId: string }).threadId;
    const created = await fetch(`${args.api}/threads`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ id: threadId, title: 'First' }),
    });
    report.created = {
      status: created.status,
      requestId: created.headers.get('X-Request-Id'),
      id: ((await created.json()) as { id?: string }).id,
    };

    const run = await fetch(`${args.api}/run`, {
      method: 'POST',
      headers: { ...headers, Accept: 'text/event-stream', 'Last-Event-ID': '0' },
      body: JSON.stringify(args.run),
    });
    const reader = run.body!.getReader();
    const decoder = new TextDecoder();
    let raw = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      raw += decoder.decode(value, { stream: true });
    }
    const events = raw
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as { type: string; delta?: string });
    report.run = {
      status: run.status,
      contentType: run.headers.get('Content-Type'),
      text: events.map((e) => (e.type === 'TEXT_MESSAGE_CONTENT' ? e.delta : '')).join(''),
      types: events.map((e) => e.type),
      rateLimit: run.headers.get('X-RateLimit-Remaining'),
    };

    const limited = await fetch(`${args.api}/run`, {
      method: 'POST',
      headers,
      body: JSON.stringify(args.rerun),
    });
    report.limited = {
      status: limited.status,
      retryAfter: limited.headers.get('Retry-After'),
      code: ((await limited.json()) as { code?: string }).code,
    };

    const renamed = await fetch(`${args.api}/threads/${encodeURIComponent(threadId)}`, {
      method: 'PATCH',
      headers,
      body: JSON.stringify({ title: 'Renamed' }),
    });
    report.renamed = { status: renamed.status, title: ((await renamed.json()) as { title?: string }).title };

    const listed = await fetch(`${args.api}/threads`, { headers: { 'X-Resource-Id': args.owner } });
    report.listed = {
      status: listed.status,
      titles: ((await listed.json()) as { threads: Array<{ title: string }> }).threads.map((t) => t.title),
    };

    const deleted = await fetch(`${args.api}/threads/${encodeURIComponent(threadId)}`, {
      method: 'DELETE',
      headers: { Authorization: headers.Authorization, 'X-Resource-Id': args.owner },
    });
    report.deleted = { status: deleted.status };

    const gone = await fetch(`${args.api}/threads/${encodeURIComponent(threadId)}`, {
      headers: { 'X-Resource-Id': args.owner },
    });
    report.gone = { status: gone.status, code: ((await gone.json()) as { code?: string }).code };
  } catch (err) {
    report.error = (err as Error).message;
  }
  return report;
}

/** Serves an empty page under any host name: each name is a browser origin of its own. */
async function pageServer(): Promise<{ server: Server; origin: (host: string) => string }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>io.Assist stand-in</title>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, origin: (host) => `http://${host}:${port}` };
}

describe('a browser client on another origin, in headless Chromium', () => {
  let pages: Awaited<ReturnType<typeof pageServer>>;
  let browser: Browser;
  const apps: TestApp[] = [];

  beforeAll(async () => {
    pages = await pageServer();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all(apps.map((a) => a.close()));
    await new Promise((resolve) => pages?.server.close(resolve));
  });

  /** The service with CORS_ORIGINS=`origins`, reached under its own host name (another site than the page). */
  async function service(origins: (pageOrigin: string) => string): Promise<string> {
    // One run per owner per minute, so that the page also meets a 429 and its Retry-After.
    const t = await startApp({
      CORS_ORIGINS: origins(pages.origin('client.test')),
      RATE_LIMIT_PER_MINUTE: '1',
    });
    apps.push(t);
    return `http://io-bridge.test:${new URL(t.baseUrl).port}/io-bridge`;
  }

  /** Opens the page at `host` and runs the client session there. */
  async function sessionFrom(host: string, api: string, owner: string): Promise<ClientReport> {
    const page = await browser.newPage();
    try {
      await page.goto(`${pages.origin(host)}/`);
      const run = runInput('Hello from the browser');
      const rerun = { ...run, runId: `${run.runId}-again`, messages: [] };
      return await page.evaluate(clientSession, { api, owner, run, rerun });
    } finally {
      await page.close();
    }
  }

  const expectFullSession = (report: ClientReport, owner: string) => {
    expect(report.error).toBeUndefined();
    expect(report.created).toEqual({ status: 201, requestId: `req-${owner}`, id: expect.any(String) });
    expect(report.run).toMatchObject({ status: 200, contentType: 'text/event-stream', rateLimit: '0' });
    expect(report.run!.types[0]).toBe('RUN_STARTED');
    expect(report.run!.types.at(-1)).toBe('RUN_FINISHED');
    expect(report.run!.text.length).toBeGreaterThan(0);
    expect(report.limited).toEqual({
      status: 429,
      retryAfter: expect.stringMatching(/^\d+$/),
      code: 'RATE_LIMITED',
    });
    expect(report.renamed).toEqual({ status: 200, title: 'Renamed' });
    expect(report.listed).toEqual({ status: 200, titles: ['Renamed'] });
    expect(report.deleted).toEqual({ status: 204 });
    expect(report.gone).toEqual({ status: 404, code: 'NOT_FOUND' });
  };

  it('with CORS_ORIGINS naming the page: streams a run, reads headers, creates, renames, lists, deletes', async () => {
    const api = await service((page) => `https://elsewhere.example,${page}`);
    expectFullSession(await sessionFrom('client.test', api, 'browser-listed'), 'browser-listed');
  }, 60_000);

  it('blocks a page on an origin CORS_ORIGINS does not name: its fetch rejects', async () => {
    const api = await service((page) => page);
    const report = await sessionFrom('unlisted.test', api, 'browser-unlisted');
    expect(report.error).toBe('Failed to fetch');
    expect(report.created).toBeUndefined();
  }, 60_000);

  it("with CORS_ORIGINS='*': the same session works from any origin", async () => {
    const api = await service(() => '*');
    expectFullSession(await sessionFrom('unlisted.test', api, 'browser-any'), 'browser-any');
  }, 60_000);
});

describe('CORS preflight and response headers', () => {
  const page = 'https://app.example.com';
  let listed: TestApp;
  let any: TestApp;
  beforeAll(async () => {
    listed = await startApp({ CORS_ORIGINS: `${page},http://localhost:4200` });
    any = await startApp({ CORS_ORIGINS: '*' });
  });
  afterAll(async () => {
    await listed.close();
    await any.close();
  });

  const preflight = (t: TestApp, origin: string, method: string) =>
    fetch(`${t.baseUrl}/io-bridge/threads/t-1`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': method,
        'access-control-request-headers':
          'authorization,content-type,x-resource-id,last-event-id,x-request-id',
      },
    });
  const corsHeaders = (res: Response) =>
    Object.fromEntries(
      [...res.headers].filter(([name]) => name.startsWith('access-control-') || name === 'vary'),
    );

  it.each(['PATCH', 'DELETE', 'POST', 'GET'])(
    'answers a listed origin’s %s preflight with the exact allowance',
    async (method) => {
      const res = await preflight(listed, page, method);
      expect(res.status).toBe(204);
      expect(corsHeaders(res)).toEqual({
        'access-control-allow-origin': page,
        'access-control-allow-methods': 'GET, HEAD, POST, PATCH, DELETE, OPTIONS',
        'access-control-allow-headers':
          'Authorization, Content-Type, Accept, X-Resource-Id, Last-Event-ID, X-Request-Id, X-Mastra-Client-Type',
        'access-control-expose-headers':
          'X-Request-Id, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset',
        'access-control-max-age': '600',
        vary: 'Origin',
      });
      expect(CORS_ALLOWED_HEADERS).toContain('Last-Event-ID');
    },
  );

  it('gives an unlisted origin no allowance', async () => {
    const res = await preflight(listed, 'https://evil.example', 'DELETE');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const get = await fetch(`${listed.baseUrl}/io-bridge/agents`, {
      headers: { origin: 'https://evil.example' },
    });
    expect(get.headers.get('access-control-allow-origin')).toBeNull();
  });

  it("with '*': any origin, never credentials", async () => {
    const res = await preflight(any, 'https://anywhere.example', 'DELETE');
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    expect(res.headers.get('access-control-allow-methods')).toContain('DELETE');
  });

  it('exposes the request id and back-off headers on actual responses, beside helmet’s headers', async () => {
    const res = await fetch(`${listed.baseUrl}/io-bridge/agents`, { headers: { origin: page } });
    expect(res.status).toBe(200);
    expect(corsHeaders(res)).toEqual({
      'access-control-allow-origin': page,
      'access-control-expose-headers': CORS_EXPOSED_HEADERS.join(', '),
      vary: 'Origin',
    });
    expect(res.headers.get('x-request-id')).toEqual(expect.any(String));
    // Helmet's same-origin CORP stays: it binds only no-cors loads; the Chromium test proves fetch reads pass.
    expect(res.headers.get('cross-origin-resource-policy')).toBe('same-origin');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('answers a plain OPTIONS (no Origin) without a text/plain 400', async () => {
    const res = await fetch(`${listed.baseUrl}/io-bridge/threads`, { method: 'OPTIONS' });
    expect(res.status).toBe(204);
  });
});

describe('a bad CORS_ORIGINS', () => {
  it.each([
    ['https://app.example.com/', 'did you mean https://app.example.com?'],
    ['app.example.com', 'is not an origin such as https://app.example.com'],
  ])('%s stops the built service at start-up with a message naming CORS_ORIGINS', (value, reason) => {
    const run = spawnSync(process.execPath, [MAIN], {
      env: { ...process.env, DATABASE_URL: process.env.E2E_DATABASE_URL, CORS_ORIGINS: value, PORT: '0' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`CORS_ORIGINS: '${value}'`);
    expect(run.stderr).toContain(reason);
  });
});
