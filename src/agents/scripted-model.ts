import { TITLE_PROMPT } from './prompts';
import { modelToolName } from '../protocol/tool-names';
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3FilePart,
  LanguageModelV3FinishReason,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';

/**
 * The built-in scripted model (docs/agents.md#the-scripted-model-modelscripted): a real AI SDK provider-spec (v3) model whose
 * answer is a pure function of the prompt, so the service, its tests and a frontend developer's
 * setup run offline. Mastra drives it exactly like a remote model.
 */
type Part = LanguageModelV3StreamPart;
/**
 * `delayMs` 0 delivers everything at once; 'tick' puts each delta in a later event-loop iteration (a
 * timer), as a network does: what the run does at the end of an iteration (flushing the deltas that
 * arrived in it) happens between two deltas.
 */
type Script = { parts: Part[]; delayMs: number | 'tick'; firstDelayMs?: number };

const USAGE: LanguageModelV3Usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};
const finish = (unified: LanguageModelV3FinishReason['unified']): Part => ({
  type: 'finish',
  finishReason: { unified, raw: unified },
  usage: USAGE,
});

/**
 * The most text and reasoning deltas one answer has, whatever the prompt or `maxOutputTokens` ask:
 * an answer cut there ends with finishReason 'length', as a provider's does at its output limit.
 */
export const MAX_DELTAS = 100_000;
/** Parts a script without delay streams per event-loop turn before it lets other work run. */
export const PARTS_PER_TURN = 1024;

/** Splits text into word-sized deltas that concatenate back to it exactly. */
export function wordDeltas(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);
}

function textParts(id: string, deltas: string[]): Part[] {
  return [
    { type: 'text-start', id },
    ...deltas.map((delta): Part => ({ type: 'text-delta', id, delta })),
    { type: 'text-end', id },
  ];
}

function lastUser(
  prompt: LanguageModelV3Prompt,
): Extract<LanguageModelV3Prompt[number], { role: 'user' }> | undefined {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const m = prompt[i];
    if (m.role === 'user') return m;
  }
  return undefined;
}

function lastUserText(prompt: LanguageModelV3Prompt): string {
  return (lastUser(prompt)?.content ?? [])
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('\n');
}

/** A file part as the model received it: `file <media type> <url | n bytes>[ name]`. */
function describeFile(part: LanguageModelV3FilePart): string {
  const { data } = part;
  const source =
    data instanceof URL
      ? data.href
      : typeof data === 'string'
        ? `${Buffer.byteLength(data, 'base64')} bytes`
        : `${data.byteLength} bytes`;
  return `file ${part.mediaType} ${source}${part.filename ? ` ${part.filename}` : ''}`;
}

/** The last user message's files (images and documents), described, for the answer to say what it received. */
function lastUserFiles(prompt: LanguageModelV3Prompt): string[] {
  return (lastUser(prompt)?.content ?? []).flatMap((p) => (p.type === 'file' ? [describeFile(p)] : []));
}

/** The tool results the prompt ends with: the model's previous step called tools and they answered. */
function trailingToolResults(prompt: LanguageModelV3Prompt): Array<{ toolName: string; value: unknown }> {
  const out: Array<{ toolName: string; value: unknown }> = [];
  for (let i = prompt.length - 1; i >= 0 && prompt[i].role === 'tool'; i--) {
    const m = prompt[i];
    if (m.role !== 'tool') break;
    const results = m.content.flatMap((p) =>
      p.type === 'tool-result'
        ? [{ toolName: p.toolName, value: (p.output as { value?: unknown }).value }]
        : [],
    );
    out.unshift(...results);
  }
  return out;
}

/** What the model received, one line per message (newlines shown as \\n): `role: text [tool-call name(args)] [tool-result name=output]`. */
export function describePrompt(prompt: LanguageModelV3Prompt): string {
  return prompt
    .filter((m) => m.role !== 'system')
    .map((m) => {
      const oneLine = (text: string) => text.replaceAll('\n', '\\n');
      if (typeof m.content === 'string') return `${m.role}: ${oneLine(m.content)}`;
      const parts = m.content.map((p) => {
        if (p.type === 'text') return oneLine(p.text);
        if (p.type === 'tool-call') return `[tool-call ${p.toolName}(${JSON.stringify(p.input)})]`;
        if (p.type === 'tool-result') {
          return `[tool-result ${p.toolName}=${JSON.stringify((p.output as { value?: unknown }).value ?? null)}]`;
        }
        if (p.type === 'file') return `[${describeFile(p)}]`;
        return `[${p.type}]`;
      });
      return `${m.role}: ${parts.join(' ')}`;
    })
    .join('\n');
}

let toolCallCounter = 0;

/** The call settings the model received, as `/settings` reports them. */
type CallSettings = Pick<LanguageModelV3CallOptions, 'maxOutputTokens' | 'temperature' | 'topP' | 'topK'>;

/**
 * The script with at most `limit` text and reasoning deltas (a delta counts as a token): past it,
 * what is open is closed and the answer finishes with 'length'.
 */
function limited(script: Script, limit: number): Script {
  const open = new Map<string, Part>();
  let deltas = 0;
  for (let i = 0; i < script.parts.length; i++) {
    const p = script.parts[i];
    if (p.type === 'text-delta' || p.type === 'reasoning-delta') {
      if (deltas === limit) {
        return { ...script, parts: [...script.parts.slice(0, i), ...open.values(), finish('length')] };
      }
      deltas++;
    } else if (p.type === 'text-start') open.set(`t:${p.id}`, { type: 'text-end', id: p.id });
    else if (p.type === 'reasoning-start') open.set(`r:${p.id}`, { type: 'reasoning-end', id: p.id });
    else if (p.type === 'text-end') open.delete(`t:${p.id}`);
    else if (p.type === 'reasoning-end') open.delete(`r:${p.id}`);
  }
  return script;
}

/**
 * `toolNames`: the tools the call offers. A `/tool` line naming a tool by a name the model was given
 * an alias for (`portal.get_positions`, offered as `portal_get_positions_…`) calls the alias, as a
 * real model that only sees the alias would.
 */
export function planScript(
  prompt: LanguageModelV3Prompt,
  callSettings: CallSettings = {},
  toolNames?: ReadonlySet<string>,
): Script {
  const { maxOutputTokens } = callSettings;
  const limit =
    maxOutputTokens !== undefined && maxOutputTokens > 0 ? Math.min(maxOutputTokens, MAX_DELTAS) : MAX_DELTAS;
  return limited(unlimitedScript(prompt, callSettings, toolNames), limit);
}

function unlimitedScript(
  prompt: LanguageModelV3Prompt,
  callSettings: CallSettings,
  toolNames?: ReadonlySet<string>,
): Script {
  const results = trailingToolResults(prompt);
  if (results.length) {
    const text = results
      .map((r) => `Tool ${r.toolName} returned ${JSON.stringify(r.value ?? null)}`)
      .join('\n');
    return { parts: [...textParts('t', wordDeltas(text)), finish('stop')], delayMs: 'tick' };
  }
  const text = lastUserText(prompt).trim();
  if (text.startsWith(TITLE_PROMPT)) {
    const words = text.slice(TITLE_PROMPT.length).split(/\s+/).filter(Boolean).slice(0, 6);
    return { parts: [...textParts('t', wordDeltas(words.join(' '))), finish('stop')], delayMs: 0 };
  }
  const toolLines = text.split('\n').filter((l) => l.trim().startsWith('/tool '));
  if (toolLines.length) {
    const parts: Part[] = [];
    for (const line of toolLines) {
      const [, named = '', args = '{}'] = /^\/tool\s+(\S+)\s*(.*)$/s.exec(line.trim()) ?? [];
      const alias = modelToolName(named);
      const name = toolNames && !toolNames.has(named) && toolNames.has(alias) ? alias : named;
      const id = `call_${Date.now().toString(36)}_${(toolCallCounter++).toString(36)}`;
      const input = args.trim() || '{}';
      const half = Math.ceil(input.length / 2);
      parts.push(
        { type: 'tool-input-start', id, toolName: name },
        { type: 'tool-input-delta', id, delta: input.slice(0, half) },
        { type: 'tool-input-delta', id, delta: input.slice(half) },
        { type: 'tool-input-end', id },
        { type: 'tool-call', toolCallId: id, toolName: name, input },
      );
    }
    return { parts: [...parts, finish('tool-calls')], delayMs: 0 };
  }
  const [command, ...rest] = text.split(/\s+/);
  const arg = text.slice(command.length).trim();
  switch (command) {
    case '/error':
      return {
        parts: [
          ...textParts('t', ['Working ', 'on ', 'it']).slice(0, -1),
          { type: 'error', error: new Error(arg || 'Scripted model failure') },
        ],
        delayMs: 0,
      };
    case '/slow': {
      const ms = Number(rest[0]);
      const slowText = arg.slice((rest[0] ?? '').length).trim();
      return {
        parts: [...textParts('t', wordDeltas(`You said: ${slowText}`)), finish('stop')],
        delayMs: Number.isFinite(ms) && ms > 0 ? Math.min(ms, 60_000) : 100,
      };
    }
    case '/reason':
      return {
        parts: [
          { type: 'reasoning-start', id: 'r' },
          ...wordDeltas(`Thinking about: ${arg}`).map((delta): Part => ({
            type: 'reasoning-delta',
            id: 'r',
            delta,
          })),
          { type: 'reasoning-end', id: 'r' },
          ...textParts('t', wordDeltas(arg || 'Done thinking.')),
          finish('stop'),
        ],
        delayMs: 0,
      };
    case '/json':
      return { parts: [...textParts('t', [arg]), finish('stop')], delayMs: 0 };
    case '/settings':
      return { parts: [...textParts('t', [JSON.stringify(callSettings)]), finish('stop')], delayMs: 0 };
    case '/context':
      return {
        parts: [
          ...textParts('t', [
            prompt
              .filter((m) => m.role === 'system')
              .map((m) => m.content)
              .join('\n---\n'),
          ]),
          finish('stop'),
        ],
        delayMs: 0,
      };
    case '/history':
      return { parts: [...textParts('t', [describePrompt(prompt)]), finish('stop')], delayMs: 0 };
    case '/bench': {
      // One past the ceiling at most: the limit then cuts it with 'length', and no larger array is built.
      const n = Math.max(1, Math.min(Math.floor(Number(rest[0])) || 1, MAX_DELTAS + 1));
      const parts = [...textParts('t', new Array<string>(n).fill('x ')), finish('stop')];
      // `/bench <n> <first-ms> <gap-ms>`: paced like a remote model (time to first token, then between tokens).
      const [first, gap] = [Number(rest[1]), Number(rest[2])].map((ms) =>
        Number.isFinite(ms) && ms >= 0 ? Math.min(ms, 60_000) : undefined,
      );
      if (first === undefined) return { parts, delayMs: 0 };
      return { parts, delayMs: gap ?? 0, firstDelayMs: first };
    }
    default: {
      const files = lastUserFiles(prompt);
      const said = files.length ? `You said: ${text} [with ${files.join('; ')}]` : `You said: ${text}`;
      return { parts: [...textParts('t', wordDeltas(said)), finish('stop')], delayMs: 'tick' };
    }
  }
}

function toStream(script: Script, signal: AbortSignal | undefined): ReadableStream<Part> {
  const parts: Part[] = [{ type: 'stream-start', warnings: [] }, ...script.parts];
  let i = 0;
  let shown = false;
  if (script.delayMs === 0 && script.firstDelayMs === undefined) {
    return new ReadableStream<Part>({
      // A batch per turn, then a yield: a long answer (/bench) never holds the event loop for long.
      async pull(controller) {
        if (i > 0) await new Promise((resolve) => setImmediate(resolve));
        if (signal?.aborted) return controller.error(signal.reason);
        for (const end = Math.min(i + PARTS_PER_TURN, parts.length); i < end;) controller.enqueue(parts[i++]);
        if (i >= parts.length) controller.close();
      },
    });
  }
  return new ReadableStream<Part>({
    async pull(controller) {
      if (i > 0 && parts[i]?.type === 'text-delta') {
        const ms = !shown && script.firstDelayMs !== undefined ? script.firstDelayMs : script.delayMs;
        shown = true;
        if (ms === 'tick') await new Promise((resolve) => setTimeout(resolve, 0));
        else await abortableDelay(ms, signal);
      }
      if (signal?.aborted) return controller.error(signal.reason);
      if (i >= parts.length) return controller.close();
      controller.enqueue(parts[i++]);
    },
  });
}

function abortableDelay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

export class ScriptedModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3';
  readonly provider = 'io-bridge';
  readonly modelId = 'scripted';
  /** Every URL as it is: the engine would otherwise download a file part's URL before calling the model. */
  readonly supportedUrls = { '*/*': [/^https?:\/\//] };

  doGenerate(): Promise<never> {
    return Promise.reject(new Error('The scripted model only streams'));
  }

  doStream(options: LanguageModelV3CallOptions) {
    const { maxOutputTokens, temperature, topP, topK } = options;
    const tools = new Set((options.tools ?? []).map((t) => t.name));
    const script = planScript(options.prompt, { maxOutputTokens, temperature, topP, topK }, tools);
    return Promise.resolve({ stream: toStream(script, options.abortSignal) });
  }
}
