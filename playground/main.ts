import DOMPurify from 'dompurify';
import { marked } from 'marked';
import {
  EventType,
  IoBridgeClient,
  IoBridgeError,
  type AGUIEvent,
  type Agent,
  type Interrupt,
  type RunRequest,
  type RunStream,
  type Thread,
  type UiMessage,
} from '@io-bridge/client';
import { browserTools, runBrowserTool } from './browser-tools';
import { credentials, finishSignIn, oidcSettings, saveCredentials, startSignIn } from './auth';
import './styles.css';

/** The page: agents, the owner's threads, a chat that streams, tools, Stop, approvals and rejoin on reload. */

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const el = {
  agent: $<HTMLSelectElement>('agent'),
  threads: $<HTMLUListElement>('threads'),
  threadsPanel: $('threads-panel'),
  threadsToggle: $<HTMLButtonElement>('threads-toggle'),
  newThread: $<HTMLButtonElement>('new-thread'),
  title: $('thread-title'),
  rename: $<HTMLButtonElement>('rename'),
  renameForm: $<HTMLFormElement>('rename-form'),
  renameInput: $<HTMLInputElement>('rename-input'),
  renameCancel: $<HTMLButtonElement>('rename-cancel'),
  remove: $<HTMLButtonElement>('delete'),
  messages: $('messages'),
  approvals: $('approvals'),
  usage: $('usage'),
  status: $('status'),
  composer: $<HTMLFormElement>('composer'),
  input: $<HTMLTextAreaElement>('input'),
  send: $<HTMLButtonElement>('send'),
  stop: $<HTMLButtonElement>('stop'),
  signin: $<HTMLDetailsElement>('signin'),
  signinForm: $<HTMLFormElement>('signin-form'),
  token: $<HTMLInputElement>('token'),
  owner: $<HTMLInputElement>('owner'),
  signout: $<HTMLButtonElement>('signout'),
  oidcSignin: $<HTMLButtonElement>('oidc-signin'),
};

const API = document.querySelector<HTMLMetaElement>('meta[name="io-bridge-api"]')!.content;
/** The run this tab is following, kept across a reload so the page rejoins it. */
const ACTIVE_RUN = 'io-bridge.playground.activeRun';
const AGENT = 'io-bridge.playground.agent';

let client = makeClient();
let agents: Agent[] = [];
let threads: Thread[] = [];
let threadId: string | undefined;
let running: { runId: string; threadId: string } | undefined;
/** Approvals are shown once the server shows it has them: a tool that needs one, or an interrupt. */
let approvalsSupported = false;

function makeClient() {
  const { token, owner } = credentials();
  return new IoBridgeClient({ baseUrl: API, token, resourceId: owner || undefined });
}

/** A v4 UUID; also on plain HTTP under a host name, where `crypto.randomUUID` does not exist. */
function uuid(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const say = (text: string) => (el.status.textContent = text);
const problem = (err: unknown) =>
  err instanceof IoBridgeError
    ? `${err.code}: ${err.message}`
    : err instanceof Error
      ? err.message
      : String(err);

// ---- rendering ----

const bubbles = new Map<string, { node: HTMLElement; text: string }>();
const tools = new Map<string, { node: HTMLElement; name: string; args: string; done: boolean }>();
let pending = new Set<string>();
let frame = 0;

/** Markdown, sanitised, redrawn at most once per frame while deltas stream in. */
function paint() {
  frame = 0;
  for (const id of pending) {
    const bubble = bubbles.get(id);
    if (bubble) bubble.node.innerHTML = DOMPurify.sanitize(marked.parse(bubble.text, { async: false }));
  }
  pending = new Set();
  el.messages.scrollTop = el.messages.scrollHeight;
}
function repaint(id: string) {
  pending.add(id);
  frame ||= requestAnimationFrame(paint);
}

function add(node: HTMLElement) {
  el.messages.append(node);
  el.messages.scrollTop = el.messages.scrollHeight;
  return node;
}

function userMessage(text: string) {
  const node = document.createElement('div');
  node.className = 'msg user';
  node.setAttribute('role', 'article');
  node.setAttribute('aria-label', 'You');
  node.textContent = text;
  add(node);
}

function assistantMessage(id: string, text = '') {
  let bubble = bubbles.get(id);
  if (!bubble) {
    const node = document.createElement('div');
    node.className = 'msg assistant';
    node.setAttribute('role', 'article');
    node.setAttribute('aria-label', 'Assistant');
    bubble = { node: add(node), text };
    bubbles.set(id, bubble);
  }
  bubble.text = text;
  repaint(id);
  return bubble;
}

function toolCall(id: string, name: string, args = '') {
  let card = tools.get(id);
  if (!card) {
    const node = document.createElement('details');
    node.className = 'tool';
    node.open = true;
    node.setAttribute('aria-label', `Tool call ${name}`);
    const where = browserTools.some((t) => t.name === name) ? 'runs in this browser' : 'runs on the server';
    node.innerHTML = `<summary></summary><div>Arguments</div><pre class="args"></pre><div>Result</div><pre class="result">…</pre>`;
    node.querySelector('summary')!.innerHTML = `<strong></strong> <span class="where"></span>`;
    node.querySelector('strong')!.textContent = name;
    node.querySelector('.where')!.textContent = where;
    card = { node: add(node), name, args: '', done: false };
    tools.set(id, card);
  }
  card.args = args;
  card.node.querySelector('.args')!.textContent = pretty(args);
  return card;
}

function toolResult(id: string, content: unknown) {
  const card = tools.get(id);
  if (!card) return;
  card.done = true;
  card.node.querySelector('.result')!.textContent = pretty(content);
}

function pretty(value: unknown): string {
  if (typeof value !== 'string') return JSON.stringify(value, null, 2);
  try {
    return JSON.stringify(JSON.parse(value), null, 2);
  } catch {
    return value;
  }
}

function clearConversation() {
  el.messages.replaceChildren();
  el.approvals.replaceChildren();
  el.approvals.hidden = true;
  el.usage.hidden = true;
  bubbles.clear();
  tools.clear();
}

function renderHistory(messages: UiMessage[]) {
  for (const m of messages) {
    const text = m.content.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
    if (m.role === 'user') userMessage(text);
    for (const p of m.content.parts) {
      if (p.type !== 'tool-invocation') continue;
      const call = p.toolInvocation;
      toolCall(call.toolCallId, call.toolName, JSON.stringify(call.args ?? {}));
      if (call.state === 'result') toolResult(call.toolCallId, call.result);
    }
    if (m.role === 'assistant' && text) assistantMessage(m.id, text);
  }
}

// ---- agents and threads ----

async function loadAgents() {
  const list = await client.agents();
  agents = list.agents;
  const chosen = localStorage.getItem(AGENT) ?? list.defaultAgentId;
  el.agent.replaceChildren(
    ...agents.map((a) => {
      const option = new Option(a.name, a.id, false, a.id === chosen);
      option.title = a.description ?? '';
      return option;
    }),
  );
  approvalsSupported ||= agents.some((a) => a.tools.some((t) => t.requiresApproval));
}

async function loadThreads() {
  threads = (await client.threads.list({ limit: 50 })).threads;
  el.threads.replaceChildren(
    ...threads.map((t) => {
      const item = document.createElement('li');
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = t.title || 'Untitled';
      button.dataset.threadId = t.id;
      if (t.id === threadId) button.setAttribute('aria-current', 'true');
      button.addEventListener('click', () => void openThread(t.id).catch((err) => say(problem(err))));
      item.append(button);
      return item;
    }),
  );
  showThreadHead();
}

function showThreadHead() {
  const thread = threads.find((t) => t.id === threadId);
  el.title.textContent = thread ? thread.title || 'Untitled' : 'New thread';
  el.rename.hidden = el.remove.hidden = !thread;
  for (const b of el.threads.querySelectorAll('button')) {
    if (b.dataset.threadId === threadId) b.setAttribute('aria-current', 'true');
    else b.removeAttribute('aria-current');
  }
}

async function openThread(id: string) {
  threadId = id;
  el.renameForm.hidden = true;
  clearConversation();
  showThreadHead();
  el.threadsPanel.classList.remove('open');
  el.threadsToggle.setAttribute('aria-expanded', 'false');
  const thread = threads.find((t) => t.id === id);
  if (thread?.agentId && agents.some((a) => a.id === thread.agentId)) el.agent.value = thread.agentId;
  renderHistory((await client.threads.messages(id, { limit: 200 })).messages);
  el.input.focus();
}

function newThread() {
  threadId = undefined;
  clearConversation();
  showThreadHead();
  say('');
  el.input.focus();
}

// ---- runs ----

function setRunning(run: typeof running) {
  running = run;
  el.stop.hidden = !run;
  el.send.disabled = Boolean(run);
  if (run) sessionStorage.setItem(ACTIVE_RUN, JSON.stringify(run));
  else sessionStorage.removeItem(ACTIVE_RUN);
}

async function send(text: string, resume?: RunRequest['resume']) {
  if (running) return;
  const agentId = el.agent.value;
  localStorage.setItem(AGENT, agentId);
  const thread = threadId ?? uuid();
  threadId = thread;
  const runId = uuid();
  const messages: RunRequest['messages'] = text ? [{ id: uuid(), role: 'user', content: text }] : [];
  if (text) userMessage(text);
  el.approvals.replaceChildren();
  el.approvals.hidden = true;
  setRunning({ runId, threadId: thread });
  const stream = client.run({
    threadId: thread,
    runId,
    messages,
    tools: browserTools,
    forwardedProps: { agentId, memory: { thread } },
    ...(resume ? { resume } : {}),
  });
  await follow(stream, true);
}

/** Shows a run's events as they come; runs the browser's tools; ends with its usage. */
async function follow(stream: RunStream, fresh: boolean) {
  const { runId } = stream;
  say('Running…');
  let listed = !fresh;
  try {
    for await (const event of stream) {
      if (!listed) {
        listed = true;
        void loadThreads().catch(() => undefined);
      }
      await show(runId, event);
    }
  } catch (err) {
    say(problem(err));
  } finally {
    setRunning(undefined);
    el.input.focus();
  }
  await showUsage(runId).catch(() => undefined);
  await loadThreads().catch(() => undefined);
}

async function show(runId: string, event: AGUIEvent) {
  switch (event.type) {
    case EventType.TEXT_MESSAGE_START:
      assistantMessage(event.messageId);
      break;
    case EventType.TEXT_MESSAGE_CONTENT: {
      const bubble = bubbles.get(event.messageId) ?? assistantMessage(event.messageId);
      bubble.text += event.delta;
      repaint(event.messageId);
      break;
    }
    case EventType.TOOL_CALL_START:
      toolCall(event.toolCallId, event.toolCallName);
      break;
    case EventType.TOOL_CALL_ARGS: {
      const card = tools.get(event.toolCallId);
      if (card) toolCall(event.toolCallId, card.name, card.args + event.delta);
      break;
    }
    case EventType.TOOL_CALL_END: {
      const card = tools.get(event.toolCallId);
      if (card && !card.done && browserTools.some((t) => t.name === card.name))
        await answer(runId, event.toolCallId, card.name, card.args);
      break;
    }
    case EventType.TOOL_CALL_RESULT:
      toolResult(event.toolCallId, event.content);
      break;
    case EventType.RUN_FINISHED:
      if (event.outcome?.type === 'interrupt') showApprovals(event.outcome.interrupts);
      else say('Done.');
      break;
    case EventType.RUN_ERROR:
      say(event.code === 'CANCELLED' ? 'Stopped.' : `Error ${event.code ?? ''}: ${event.message}`);
      break;
    default:
      break;
  }
}

/** Runs a browser tool and posts its result into the waiting run. */
async function answer(runId: string, toolCallId: string, name: string, args: string) {
  const result = await runBrowserTool(name, args);
  toolResult(toolCallId, 'content' in result ? result.content : { error: result.error });
  await client.submitToolResult(runId, toolCallId, result).catch((err: unknown) => {
    // A replay after a reload meets calls answered before it: their result follows in the stream.
    if (!(err instanceof IoBridgeError && err.code === 'TOOL_RESULT_ALREADY_SUBMITTED')) throw err;
  });
}

async function showUsage(runId: string) {
  const run = await client.getRun(runId);
  if (!run.usage?.length) return;
  const sum = (key: 'inputTokens' | 'outputTokens') =>
    run.usage!.reduce((total, u) => total + (u[key] ?? 0), 0);
  el.usage.textContent = `Usage: ${sum('inputTokens')} input and ${sum('outputTokens')} output tokens (${run.usage
    .map((u) => u.model ?? 'model')
    .join(', ')})`;
  el.usage.hidden = false;
}

function showApprovals(interrupts: Interrupt[]) {
  approvalsSupported = true;
  say('Waiting for your approval.');
  el.approvals.replaceChildren(
    ...interrupts.map((interrupt) => {
      const row = document.createElement('div');
      row.className = 'approval';
      const text = document.createElement('span');
      text.textContent = interrupt.message ?? `Approve ${interrupt.reason}?`;
      const decide = (approved: boolean) => () =>
        void send('', [{ interruptId: interrupt.id, status: 'resolved', payload: { approved } }]);
      const yes = document.createElement('button');
      yes.type = 'button';
      yes.textContent = 'Approve';
      yes.addEventListener('click', decide(true));
      const no = document.createElement('button');
      no.type = 'button';
      no.textContent = 'Decline';
      no.addEventListener('click', decide(false));
      row.append(text, yes, no);
      return row;
    }),
  );
  el.approvals.hidden = !approvalsSupported;
}

/** After a reload: the run this tab was following, rejoined from its first event while it lives. */
async function rejoin() {
  const saved = sessionStorage.getItem(ACTIVE_RUN);
  if (!saved) return;
  const active = JSON.parse(saved) as { runId: string; threadId: string };
  const run = await client.getRun(active.runId).catch(() => undefined);
  if (!run) return setRunning(undefined);
  await openThread(active.threadId);
  if (run.status !== 'running' && run.status !== 'waiting_for_tool') {
    setRunning(undefined);
    await showUsage(run.id).catch(() => undefined);
    return;
  }
  setRunning(active);
  say('Rejoined the running answer…');
  await follow(client.join(active.runId), false);
}

// ---- wiring ----

el.composer.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = el.input.value.trim();
  if (!text || running) return;
  el.input.value = '';
  void send(text).catch((err) => say(problem(err)));
});
el.input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    el.composer.requestSubmit();
  }
});
el.stop.addEventListener('click', () => {
  if (running) void client.cancel(running.runId).catch((err) => say(problem(err)));
});
el.newThread.addEventListener('click', newThread);
el.threadsToggle.addEventListener('click', () => {
  const open = el.threadsPanel.classList.toggle('open');
  el.threadsToggle.setAttribute('aria-expanded', String(open));
});
el.rename.addEventListener('click', () => {
  el.renameForm.hidden = false;
  el.renameInput.value = el.title.textContent ?? '';
  el.renameInput.select();
});
el.renameCancel.addEventListener('click', () => {
  el.renameForm.hidden = true;
  el.rename.focus();
});
el.renameForm.addEventListener('keydown', (e) => {
  if (e.key === 'Escape') el.renameCancel.click();
});
el.renameForm.addEventListener('submit', (e) => {
  e.preventDefault();
  if (!threadId) return;
  void client.threads
    .rename(threadId, el.renameInput.value.trim())
    .then(async () => {
      el.renameForm.hidden = true;
      await loadThreads();
      say('Renamed.');
      el.rename.focus();
    })
    .catch((err) => say(problem(err)));
});
el.remove.addEventListener('click', () => {
  if (!threadId || !confirm(`Delete "${el.title.textContent}" and its messages?`)) return;
  void client.threads
    .delete(threadId)
    .then(async () => {
      newThread();
      await loadThreads();
      say('Deleted.');
    })
    .catch((err) => say(problem(err)));
});
el.agent.addEventListener('change', () => localStorage.setItem(AGENT, el.agent.value));
el.signinForm.addEventListener('submit', (e) => {
  e.preventDefault();
  saveCredentials({ token: el.token.value.trim(), owner: el.owner.value.trim() });
  el.signin.open = false;
  void start();
});
el.signout.addEventListener('click', () => {
  saveCredentials({ token: '', owner: '' });
  el.token.value = el.owner.value = '';
  void start();
});

const oidc = oidcSettings();
if (oidc) {
  el.oidcSignin.hidden = false;
  el.oidcSignin.addEventListener('click', () => void startSignIn(oidc).catch((err) => say(problem(err))));
}

async function start() {
  client = makeClient();
  const { token, owner } = credentials();
  el.token.value = token ?? '';
  el.owner.value = owner ?? '';
  try {
    await Promise.all([loadAgents(), loadThreads()]);
    say('');
    // When the page became usable: what the load-time figure measures.
    performance.mark('io-bridge:ready');
  } catch (err) {
    say(problem(err));
    if (err instanceof IoBridgeError && err.statusCode === 401) {
      el.signin.open = true;
      el.token.focus();
    }
    return;
  }
  await rejoin().catch((err) => say(problem(err)));
}

// Back from the provider's sign-in page: take the token first, then start as that user.
void (oidc ? finishSignIn(oidc) : Promise.resolve(false))
  .catch((err) => say(problem(err)))
  .then(() => start());
