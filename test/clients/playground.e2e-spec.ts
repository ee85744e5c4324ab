import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Browser, BrowserContext, ConsoleMessage, Page } from 'playwright-core';
import { IoBridgeClient } from '@io-bridge/client';
import { startBuiltService, type BuiltService } from '../support/built-service';
import { launchChromium } from '../support/chromium';
import { SIGNED_IN_USER, TestIdp } from '../support/oidc';
import { startOpenAiServer, type OpenAiServer } from '../support/openai-server';

/**
 * The playground (docs/playground.md) in headless Chromium against the built service: chat with
 * streamed markdown, a server tool, the browser tool, Stop, a reload that rejoins the live run, and
 * renaming and deleting a thread. Screenshots go to test-results/playground (not committed);
 * UPDATE_PLAYGROUND_PICTURE=1 also refreshes docs/playground.png.
 */

const SHOTS = join(__dirname, '..', '..', 'test-results', 'playground');
const PICTURE = join(__dirname, '..', '..', 'docs', 'playground.png');
/** Chromium's note that it ignores helmet's COOP header on plain HTTP under a host name. */
const BENIGN = [/Cross-Origin-Opener-Policy header has been ignored/];

describe('the playground at /playground, in Chromium against the built service', () => {
  let service: BuiltService;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let api: IoBridgeClient;
  let origin: string;
  const owner = `playground-${randomUUID()}`;
  const problems: string[] = [];

  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`) });
  const message = () => page.getByRole('textbox', { name: 'Message' });
  const conversation = () => page.getByRole('log', { name: 'Conversation' });
  const assistant = () => conversation().getByRole('article', { name: 'Assistant' });
  const threadList = () => page.getByRole('navigation', { name: 'Threads' });
  const send = async (text: string) => {
    await message().fill(text);
    await message().press('Enter');
  };
  const newThread = async () => {
    await page.getByRole('button', { name: 'New thread' }).click();
    await expect(page.getByRole('heading', { level: 2 }).innerText()).resolves.toBe('New thread');
  };
  const currentThreadId = () =>
    threadList().locator('button[aria-current="true"]').getAttribute('data-thread-id', { timeout: 10_000 });

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    service = await startBuiltService();
    api = new IoBridgeClient({ baseUrl: service.base, resourceId: owner });
    // A host name, not 127.0.0.1: plain HTTP there is not a secure context, as for an operator's URL.
    origin = `http://io-bridge.test:${new URL(service.origin).port}`;
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1100, height: 720 } });
    // The owner for AUTH_MODE=none, as a person types it in the sign-in panel: this test's threads only.
    await context.addInitScript((name) => localStorage.setItem('io-bridge.playground.owner', name), owner);
    page = await context.newPage();
    page.on('console', (m: ConsoleMessage) => {
      if (m.type() === 'error' && !BENIGN.some((b) => b.test(m.text())))
        problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('dialog', (dialog) => void dialog.accept());
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('serves a small page: pre-compressed hashed assets cached for good, the page itself revalidated', async () => {
    const res = await fetch(`${service.origin}/playground`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const html = await res.text();
    expect(html).toContain('<meta name="io-bridge-api" content="/io-bridge" />');
    const assets = [...html.matchAll(/(?:src|href)="(\/playground\/app-[^"]+)"/g)].map((m) => m[1]);
    expect(assets).toHaveLength(2);
    let bytes = Buffer.byteLength(html);
    for (const asset of assets) {
      const r = await fetch(`${service.origin}${asset}`, { headers: { 'accept-encoding': 'br' } });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-encoding')).toBe('br');
      expect(r.headers.get('cache-control')).toContain('immutable');
      bytes += (await r.arrayBuffer()).byteLength;
    }
    // The page's first load, compressed as a browser receives it (docs/playground.md: at most 150 KB).
    expect(bytes).toBeLessThanOrEqual(150 * 1024);
    const unknown = await fetch(`${service.origin}/playground/nothing-here.js`);
    expect(unknown.status).toBe(404);
  });

  it('chats: picks an agent, streams the answer as markdown, lists the new thread', async () => {
    const response = await page.goto(`${origin}/playground`, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);
    const agent = page.getByRole('combobox', { name: 'Agent' });
    await agent.locator('option', { hasText: 'Calculator' }).waitFor({ state: 'attached' });
    await expect(agent.locator('option').allInnerTexts()).resolves.toEqual(['Assistant', 'Calculator']);
    await expect(agent.inputValue()).resolves.toBe('assistant');
    await send('hello **bold** world');
    await assistant().getByText('You said: hello').waitFor();
    await expect(assistant().locator('strong').innerText()).resolves.toBe('bold');
    await expect(conversation().getByRole('article', { name: 'You' }).innerText()).resolves.toBe(
      'hello **bold** world',
    );
    await threadList().getByRole('button', { name: 'hello **bold** world' }).waitFor();
    await page.getByRole('status').getByText('Done.').waitFor();
    const threadId = await currentThreadId();
    const stored = await api.threads.messages(threadId!);
    expect(stored.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    await shot('chat');
  });

  it('shows a server tool call with its arguments and result', async () => {
    await newThread();
    await send('/tool calculate {"expression":"6*7"}');
    const card = conversation().getByRole('group', { name: 'Tool call calculate' });
    await card.getByText('runs on the server').waitFor();
    await card.locator('.result').getByText('"result": 42').waitFor();
    await expect(card.locator('.args').innerText()).resolves.toContain('"expression": "6*7"');
    await assistant().getByText('Tool calculate returned').waitFor();
    await shot('server-tool');
  });

  it('asks for an approval and runs the tool once approved', async () => {
    await newThread();
    await send('/tool publish_note {"text":"hello from the playground"}');
    const approvals = page.getByRole('region', { name: 'Approvals' });
    await approvals.getByRole('button', { name: 'Approve' }).waitFor();
    await expect(approvals.getByRole('button', { name: 'Decline' }).isVisible()).resolves.toBe(true);
    await shot('approval');
    await approvals.getByRole('button', { name: 'Approve' }).click();
    const card = conversation().getByRole('group', { name: 'Tool call publish_note' });
    await card.locator('.result').getByText('"published": true').waitFor();
    await expect(approvals.isHidden()).resolves.toBe(true);
    await page.getByRole('status').getByText('Done.').waitFor();
  });

  it('runs the browser tool in the page and posts its result into the run', async () => {
    await newThread();
    await send('/tool browser_info {}');
    const card = conversation().getByRole('group', { name: 'Tool call browser_info' });
    await card.getByText('runs in this browser').waitFor();
    await assistant().getByText('Tool browser_info returned').waitFor();
    await expect(card.locator('.result').innerText()).resolves.toContain('"timeZone"');
    await expect(assistant().innerText()).resolves.toContain('"window":"1100x720"');
    await page.screenshot({ path: join(SHOTS, 'browser-tool.png') });
    if (process.env.UPDATE_PLAYGROUND_PICTURE) {
      mkdirSync(dirname(PICTURE), { recursive: true });
      await page.screenshot({ path: PICTURE });
    }
  });

  it('stops a run with Stop: the answer ends where it was and the run is cancelled', async () => {
    await newThread();
    const words = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');
    await send(`/slow 300 ${words}`);
    const stop = page.getByRole('button', { name: 'Stop' });
    await assistant().getByText('You said: w0').waitFor();
    await stop.click();
    await page.getByRole('status').getByText('Stopped.').waitFor();
    await expect(stop.isHidden()).resolves.toBe(true);
    await expect(assistant().innerText()).resolves.not.toContain('w29');
    const threadId = await currentThreadId();
    const stored = await api.threads.messages(threadId!);
    expect(stored.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    await shot('stopped');
  });

  it('rejoins the live run after a reload and shows the whole answer once', async () => {
    await newThread();
    const words = Array.from({ length: 16 }, (_, i) => `r${i}`).join(' ');
    await send(`/slow 250 ${words}`);
    await assistant().getByText('You said: r0').waitFor();
    const threadId = await currentThreadId();
    await page.reload({ waitUntil: 'load' });
    await page.getByRole('button', { name: 'Stop' }).waitFor();
    await assistant().getByText(`You said: ${words}`).waitFor({ timeout: 20_000 });
    await page.getByRole('status').getByText('Done.').waitFor();
    await expect(assistant().count()).resolves.toBe(1);
    await expect(conversation().getByRole('article', { name: 'You' }).count()).resolves.toBe(1);
    await expect(currentThreadId()).resolves.toBe(threadId);
    // The same run went on (not cancelled by the reload, not started again).
    const runs = await api.threads.messages(threadId!);
    expect(runs.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    await shot('rejoined');
  });

  it('renames and deletes a thread', async () => {
    await threadList().getByRole('button', { name: 'hello **bold** world' }).click();
    await assistant().getByText('You said: hello').waitFor();
    const threadId = await currentThreadId();
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByRole('textbox', { name: 'New title' }).fill('Renamed in the browser');
    await page.getByRole('button', { name: 'Save title' }).click();
    await threadList().getByRole('button', { name: 'Renamed in the browser' }).waitFor();
    await expect(page.getByRole('heading', { level: 2 }).innerText()).resolves.toBe('Renamed in the browser');
    expect((await api.threads.get(threadId!)).title).toBe('Renamed in the browser');
    await shot('renamed');

    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('status').getByText('Deleted.').waitFor();
    await expect(threadList().getByRole('button', { name: 'Renamed in the browser' }).count()).resolves.toBe(
      0,
    );
    await expect(api.threads.get(threadId!)).rejects.toMatchObject({ statusCode: 404 });
  });

  it('works on a narrow screen: the thread list opens from a labelled toggle', async () => {
    await page.setViewportSize({ width: 380, height: 740 });
    const toggle = page.getByRole('button', { name: 'Threads' });
    await expect(threadList().isVisible()).resolves.toBe(false);
    await toggle.click();
    await expect(toggle.getAttribute('aria-expanded')).resolves.toBe('true');
    await expect(threadList().isVisible()).resolves.toBe(true);
    await shot('narrow');
    expect(problems).toEqual([]);
  });
});

describe('the playground with AUTH_MODE=jwt', () => {
  let idp: TestIdp;
  let service: BuiltService;
  let browser: Browser;

  beforeAll(async () => {
    idp = await TestIdp.start();
    service = await startBuiltService({
      AUTH_MODE: 'jwt',
      OIDC_ISSUER: idp.issuer,
      OIDC_AUDIENCE: idp.audience,
      OIDC_CLIENT_ID: 'playground',
    });
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    await idp?.close();
  });

  it('asks for a token, then works as its owner; the token stays in the tab', async () => {
    const sub = `alice-${randomUUID()}`;
    const token = await idp.sign({ sub });
    const page = await browser.newPage();
    await page.goto(`${service.origin}/playground`, { waitUntil: 'load' });
    await page.getByRole('status').getByText('UNAUTHENTICATED').waitFor();
    const field = page.getByLabel('Bearer token');
    await expect(field.evaluate((node) => node === document.activeElement)).resolves.toBe(true);
    await field.fill(token);
    await page.getByRole('button', { name: 'Save' }).click();
    await page
      .getByRole('combobox', { name: 'Agent' })
      .locator('option', { hasText: 'Assistant' })
      .waitFor({ state: 'attached' });
    await page.getByRole('textbox', { name: 'Message' }).fill('signed in');
    await page.getByRole('textbox', { name: 'Message' }).press('Enter');
    await page.getByRole('status').getByText('Done.').waitFor();
    const alice = new IoBridgeClient({ baseUrl: service.base, token });
    expect((await alice.threads.list()).threads.map((t) => t.title)).toEqual(['signed in']);
    await expect(page.evaluate(() => JSON.stringify(localStorage))).resolves.not.toContain(token);
    await page.screenshot({ path: join(SHOTS, 'signed-in.png') });
  });

  it('signs in through the provider (authorization code with PKCE), then works as that user', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    await page.goto(`${service.origin}/playground`, { waitUntil: 'load' });
    await page.getByRole('status').getByText('UNAUTHENTICATED').waitFor();
    await page.getByRole('button', { name: 'Sign in with your provider' }).click();
    // To the provider and back; the page trades the code for a token, then loads as that user.
    await page
      .getByRole('combobox', { name: 'Agent' })
      .locator('option', { hasText: 'Assistant' })
      .waitFor({ state: 'attached', timeout: 15_000 });
    expect(page.url()).toBe(`${service.origin}/playground/`);
    expect(idp.signIns.at(-1)).toEqual({
      clientId: 'playground',
      redirectUri: `${service.origin}/playground/`,
      method: 'S256',
      pkceProved: true,
    });
    const title = `signed in with the provider ${randomUUID()}`;
    await page.getByRole('textbox', { name: 'Message' }).fill(title);
    await page.getByRole('textbox', { name: 'Message' }).press('Enter');
    await page.getByRole('status').getByText('Done.').waitFor();
    const user = new IoBridgeClient({
      baseUrl: service.base,
      token: await idp.sign({ sub: SIGNED_IN_USER }),
    });
    expect((await user.threads.list()).threads.map((t) => t.title)).toContain(title);
    await page.screenshot({ path: join(SHOTS, 'signed-in-oidc.png') });
    expect(problems).toEqual([]);
  });
});

describe('the playground with a provider that reports usage', () => {
  let provider: OpenAiServer;
  let service: BuiltService;
  let browser: Browser;

  beforeAll(async () => {
    provider = await startOpenAiServer(() => ({
      text: ['Hello', ' there'],
      usage: { prompt: 17, completion: 5 },
    }));
    service = await startBuiltService({
      MODEL: 'openai/gpt-test',
      OPENAI_BASE_URL: provider.url,
      OPENAI_API_KEY: 'test-key',
    });
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    await provider?.close();
  });

  it("shows the run's recorded usage once it ends", async () => {
    const page = await browser.newPage();
    await page.goto(`${service.origin}/playground`, { waitUntil: 'load' });
    await page.getByRole('textbox', { name: 'Message' }).fill('hi');
    await page.getByRole('textbox', { name: 'Message' }).press('Enter');
    await page.getByRole('status').getByText('Done.').waitFor();
    await page.getByText(/^Usage: 17 input and 5 output tokens \(.*gpt-test.*\)$/).waitFor();
  });
});
