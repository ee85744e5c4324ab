import type { StoredMessage } from '../../threads/message-format';

/**
 * A rough token count of what a message puts in the prompt: about four characters of its JSON per
 * token, plus a few for the message's own framing. It errs high for prose, which is the safe side.
 */
export function estimateTokens(value: unknown): number {
  return Math.ceil((JSON.stringify(value ?? '') ?? '').length / 4) + 4;
}

export type Fitted = {
  messages: StoredMessage[];
  /** Messages left out, and their estimated tokens. */
  dropped: number;
  droppedTokens: number;
};

/**
 * The history that fits `budget` tokens and `maxMessages` messages: every system and developer
 * message, and of the rest the newest, in whole units — an assistant message goes with the tool
 * results that follow it, so a tool call is never separated from its result. The newest unit always
 * stays (when even it does not fit, the provider says so: `MODEL_CONTEXT_TOO_LONG`). Order is kept.
 */
export function fitToContext(history: StoredMessage[], budget: number, maxMessages = Infinity): Fitted {
  const tokens = history.map(estimateTokens);
  const total = tokens.reduce((sum, n) => sum + n, 0);
  if (total <= budget && history.length <= maxMessages)
    return { messages: history, dropped: 0, droppedTokens: 0 };
  const pinned = (m: StoredMessage) => m.role === 'system' || m.role === 'developer';
  let left = budget - history.reduce((sum, m, i) => sum + (pinned(m) ? tokens[i] : 0), 0);
  let room = maxMessages - history.filter(pinned).length;
  // Units of the rest, newest first: [first index, last index] of each.
  const units: Array<[number, number]> = [];
  let end = -1;
  for (let i = history.length - 1; i >= 0; i--) {
    if (pinned(history[i])) continue;
    if (end < 0) end = i;
    if (history[i].role === 'tool') continue;
    units.push([i, end]);
    end = -1;
  }
  if (end >= 0) units.push([history.findIndex((m) => !pinned(m)), end]);
  const keep = new Set<number>();
  for (const [k, [from, to]] of units.entries()) {
    let cost = 0;
    let count = 0;
    for (let i = from; i <= to; i++) {
      if (pinned(history[i])) continue;
      cost += tokens[i];
      count++;
    }
    if (k > 0 && (cost > left || count > room)) break;
    left -= cost;
    room -= count;
    for (let i = from; i <= to; i++) keep.add(i);
  }
  const messages = history.filter((m, i) => pinned(m) || keep.has(i));
  const droppedTokens = history.reduce((sum, m, i) => sum + (pinned(m) || keep.has(i) ? 0 : tokens[i]), 0);
  return { messages, dropped: history.length - messages.length, droppedTokens };
}
