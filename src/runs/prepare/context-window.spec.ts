import type { StoredMessage } from '../../threads/message-format';
import { estimateTokens, fitToContext } from './context-window';

const user = (id: string, text = 'x'.repeat(400)): StoredMessage => ({ id, role: 'user', content: text });
const assistant = (id: string, text = 'y'.repeat(400)): StoredMessage => ({
  id,
  role: 'assistant',
  content: text,
});
const call = (id: string, callId: string): StoredMessage => ({
  id,
  role: 'assistant',
  toolCalls: [{ id: callId, type: 'function', function: { name: 'get_city', arguments: '{}' } }],
});
const result = (id: string, callId: string): StoredMessage => ({
  id,
  role: 'tool',
  toolCallId: callId,
  content: 'z'.repeat(400),
});
const ids = (messages: StoredMessage[]) => messages.map((m) => m.id);

describe('fitToContext', () => {
  it('keeps everything that fits, as it is', () => {
    const history = [user('u1'), assistant('a1'), user('u2')];
    expect(fitToContext(history, 10_000)).toEqual({ messages: history, dropped: 0, droppedTokens: 0 });
  });

  it('keeps the newest messages within the budget and says what it left out', () => {
    const history = Array.from({ length: 200 }, (_, i) => (i % 2 ? assistant(`m${i}`) : user(`m${i}`)));
    const sum = (ms: StoredMessage[]) => ms.reduce((n, m) => n + estimateTokens(m), 0);
    const fitted = fitToContext(history, sum(history.slice(-10)) + 10);
    expect(ids(fitted.messages)).toEqual(ids(history.slice(-10)));
    expect(fitted).toMatchObject({ dropped: 190, droppedTokens: sum(history.slice(0, 190)) });
  });

  it('always keeps system and developer messages, wherever they are', () => {
    const system: StoredMessage = { id: 's', role: 'system', content: 'Be brief.' };
    const history = [system, user('u1'), assistant('a1'), user('u2')];
    const fitted = fitToContext(history, estimateTokens(system) + estimateTokens(history[3]));
    expect(ids(fitted.messages)).toEqual(['s', 'u2']);
  });

  it('never separates a tool call from its results: the unit goes whole or not at all', () => {
    const history = [user('u1'), call('c', 'call-1'), result('r', 'call-1'), assistant('a'), user('u2')];
    const budget = estimateTokens(history[4]) + estimateTokens(history[3]) + estimateTokens(history[2]);
    const fitted = fitToContext(history, budget);
    // The call and its result cost more than is left after u2 and a: both go, never the result alone.
    expect(ids(fitted.messages)).toEqual(['a', 'u2']);
  });

  it('keeps the newest unit even when it alone is over the budget (the provider then says so)', () => {
    const history = [user('u1'), user('u2', 'x'.repeat(40_000))];
    expect(ids(fitToContext(history, 100).messages)).toEqual(['u2']);
  });

  it('keeps at most maxMessages, system and developer messages included, in whole units', () => {
    const system: StoredMessage = { id: 's', role: 'system', content: 'Be brief.' };
    const history = [
      system,
      user('u1'),
      assistant('a1'),
      user('u2'),
      call('c', 'call-1'),
      result('r', 'call-1'),
      user('u3'),
    ];
    // Room for 4: s, u3, then the call and its result (2) would make 4; u2 would be a fifth.
    expect(ids(fitToContext(history, 100_000, 4).messages)).toEqual(['s', 'c', 'r', 'u3']);
    // Room for 3: the call and its result do not both fit, so neither goes in.
    const fitted = fitToContext(history, 100_000, 3);
    expect(ids(fitted.messages)).toEqual(['s', 'u3']);
    expect(fitted.dropped).toBe(5);
  });
});
