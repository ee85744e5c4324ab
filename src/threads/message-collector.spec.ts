import { AguiEvent } from '../protocol/agui-events';
import { MessageCollector } from './message-collector';

type Without<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A collector that observed `events` (timestamps added). */
function collect(events: Array<Without<AguiEvent, 'timestamp'>>): MessageCollector {
  const collector = new MessageCollector();
  let t = 1_700_000_000_000;
  for (const event of events) collector.observe({ ...event, timestamp: ++t });
  return collector;
}

const start = (messageId: string) => ({
  type: 'TEXT_MESSAGE_START' as const,
  messageId,
  role: 'assistant' as const,
});
const content = (messageId: string, delta: string) => ({
  type: 'TEXT_MESSAGE_CONTENT' as const,
  messageId,
  delta,
});
const end = (messageId: string) => ({ type: 'TEXT_MESSAGE_END' as const, messageId });
const text = (messageId: string, ...deltas: string[]) => [
  start(messageId),
  ...deltas.map((d) => content(messageId, d)),
  end(messageId),
];
const callStart = (toolCallId: string, toolCallName: string, parentMessageId: string) => ({
  type: 'TOOL_CALL_START' as const,
  toolCallId,
  toolCallName,
  parentMessageId,
});
const callArgs = (toolCallId: string, delta: string) => ({
  type: 'TOOL_CALL_ARGS' as const,
  toolCallId,
  delta,
});
const callEnd = (toolCallId: string) => ({ type: 'TOOL_CALL_END' as const, toolCallId });
const result = (messageId: string, toolCallId: string, content: string) => ({
  type: 'TOOL_CALL_RESULT' as const,
  messageId,
  toolCallId,
  content,
  role: 'tool' as const,
});
const toolCall = (id: string, name: string, args: string) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: args },
});
const RUN_STARTED = { type: 'RUN_STARTED' as const, threadId: 'th', runId: 'r' };
const RUN_FINISHED = { type: 'RUN_FINISHED' as const, threadId: 'th', runId: 'r' };

describe('MessageCollector', () => {
  it('produces nothing before any event, and nothing for run and step events alone', () => {
    expect(new MessageCollector().produced()).toEqual([]);
    expect(new MessageCollector().produced()).toEqual([]);
    const collector = collect([
      RUN_STARTED,
      { type: 'STEP_STARTED', stepName: 's1' },
      { type: 'STEP_FINISHED', stepName: 's1' },
      RUN_FINISHED,
    ]);
    expect(collector.produced()).toEqual([]);
  });

  describe('text messages', () => {
    it('an assistant message with its id and the deltas concatenated', () => {
      const collector = collect([RUN_STARTED, ...text('m1', 'Hel', 'lo, ', 'world', '!'), RUN_FINISHED]);
      expect(collector.produced()).toEqual([{ id: 'm1', role: 'assistant', content: 'Hello, world!' }]);
    });

    it('keeps whitespace and newlines of the deltas exactly', () => {
      const collector = collect(text('m1', '  a\n', '\tb  ', '\n'));
      expect(collector.produced()).toEqual([{ id: 'm1', role: 'assistant', content: '  a\n\tb  \n' }]);
    });

    it('several text messages, in the order they started', () => {
      const collector = collect([...text('m2', 'second id, first'), ...text('m1', 'then this')]);
      expect(collector.produced()).toEqual([
        { id: 'm2', role: 'assistant', content: 'second id, first' },
        { id: 'm1', role: 'assistant', content: 'then this' },
      ]);
    });

    it('a text message started but never given content is not produced', () => {
      const collector = collect([start('m1'), end('m1'), ...text('m2', 'x')]);
      expect(collector.produced()).toEqual([{ id: 'm2', role: 'assistant', content: 'x' }]);
      expect(collector.produced(collector.openTextIds())).toEqual([
        { id: 'm2', role: 'assistant', content: 'x' },
      ]);
    });

    it('an open text message with no content is not produced, even when interrupted', () => {
      const collector = collect([start('m1')]);
      expect(collector.produced(collector.openTextIds())).toEqual([]);
    });
  });

  describe('tool calls', () => {
    it('a call is attached to the assistant message its parentMessageId names, arguments concatenated', () => {
      const collector = collect([
        ...text('m1', 'Let me look.'),
        callStart('c1', 'search', 'm1'),
        callArgs('c1', '{"q":'),
        callArgs('c1', '"cats"'),
        callArgs('c1', ',"n":3}'),
        callEnd('c1'),
      ]);
      expect(collector.produced()).toEqual([
        {
          id: 'm1',
          role: 'assistant',
          content: 'Let me look.',
          toolCalls: [toolCall('c1', 'search', '{"q":"cats","n":3}')],
        },
      ]);
    });

    it('a call whose parent has no text yet creates the assistant message, with no content', () => {
      const collector = collect([callStart('c1', 'search', 'p1'), callArgs('c1', '{}'), callEnd('c1')]);
      const produced = collector.produced();
      expect(produced).toEqual([
        { id: 'p1', role: 'assistant', toolCalls: [toolCall('c1', 'search', '{}')] },
      ]);
      expect(produced[0]).not.toHaveProperty('content');
    });

    it('text arriving later for the same id joins the message that holds the calls', () => {
      const collector = collect([
        callStart('c1', 'search', 'p1'),
        callArgs('c1', '{"a":1}'),
        callEnd('c1'),
        ...text('p1', 'after the call'),
      ]);
      expect(collector.produced()).toEqual([
        {
          id: 'p1',
          role: 'assistant',
          content: 'after the call',
          toolCalls: [toolCall('c1', 'search', '{"a":1}')],
        },
      ]);
    });

    it('empty arguments become {}', () => {
      const collector = collect([
        callStart('c1', 'now', 'p1'),
        callEnd('c1'),
        callStart('c2', 'later', 'p1'),
        callArgs('c2', ''),
        callEnd('c2'),
      ]);
      expect(collector.produced()[0].toolCalls).toEqual([
        toolCall('c1', 'now', '{}'),
        toolCall('c2', 'later', '{}'),
      ]);
    });

    it('several calls of one message keep their order; arguments go to the right call even interleaved', () => {
      const collector = collect([
        callStart('c1', 'add', 'p1'),
        callStart('c2', 'mul', 'p1'),
        callArgs('c2', '{"b":'),
        callArgs('c1', '{"a":'),
        callArgs('c1', '1}'),
        callArgs('c2', '2}'),
        callEnd('c1'),
        callEnd('c2'),
      ]);
      expect(collector.produced()).toEqual([
        {
          id: 'p1',
          role: 'assistant',
          toolCalls: [toolCall('c1', 'add', '{"a":1}'), toolCall('c2', 'mul', '{"b":2}')],
        },
      ]);
    });

    it('calls with different parents land on different messages', () => {
      const collector = collect([
        callStart('c1', 'a', 'p1'),
        callArgs('c1', '{"x":1}'),
        callStart('c2', 'b', 'p2'),
        callArgs('c2', '{"y":2}'),
      ]);
      expect(collector.produced()).toEqual([
        { id: 'p1', role: 'assistant', toolCalls: [toolCall('c1', 'a', '{"x":1}')] },
        { id: 'p2', role: 'assistant', toolCalls: [toolCall('c2', 'b', '{"y":2}')] },
      ]);
    });

    it('arguments for an unknown call are ignored', () => {
      const collector = collect([
        callStart('c1', 'a', 'p1'),
        callArgs('nope', '{"x":1}'),
        callArgs('c1', '{}'),
      ]);
      expect(collector.produced()).toEqual([
        { id: 'p1', role: 'assistant', toolCalls: [toolCall('c1', 'a', '{}')] },
      ]);
    });

    it('TOOL_CALL_RESULT becomes a tool message with its id, toolCallId and content', () => {
      const collector = collect([
        callStart('c1', 'weather', 'p1'),
        callArgs('c1', '{"city":"Oslo"}'),
        callEnd('c1'),
        result('t1', 'c1', '{"temp":3}'),
      ]);
      expect(collector.produced()).toEqual([
        { id: 'p1', role: 'assistant', toolCalls: [toolCall('c1', 'weather', '{"city":"Oslo"}')] },
        { id: 't1', role: 'tool', toolCallId: 'c1', content: '{"temp":3}' },
      ]);
    });

    it('keeps tool result content exactly, plain text and empty text included', () => {
      const collector = collect([
        callStart('c1', 'a', 'p1'),
        callStart('c2', 'b', 'p1'),
        result('t1', 'c1', 'plain text'),
        result('t2', 'c2', ''),
      ]);
      const tools = collector.produced().filter((m) => m.role === 'tool');
      expect(tools).toEqual([
        { id: 't1', role: 'tool', toolCallId: 'c1', content: 'plain text' },
        { id: 't2', role: 'tool', toolCallId: 'c2', content: '' },
      ]);
    });
  });

  describe('reasoning', () => {
    it('a reasoning message with its id and deltas', () => {
      const collector = collect([
        { type: 'REASONING_START', messageId: 'r1' },
        { type: 'REASONING_MESSAGE_START', messageId: 'r1', role: 'reasoning' },
        { type: 'REASONING_MESSAGE_CONTENT', messageId: 'r1', delta: 'Think' },
        { type: 'REASONING_MESSAGE_CONTENT', messageId: 'r1', delta: 'ing...' },
        { type: 'REASONING_MESSAGE_END', messageId: 'r1' },
        { type: 'REASONING_END', messageId: 'r1' },
        ...text('m1', 'Answer'),
      ]);
      expect(collector.produced()).toEqual([
        { id: 'r1', role: 'reasoning', content: 'Thinking...' },
        { id: 'm1', role: 'assistant', content: 'Answer' },
      ]);
    });

    it('reasoning content for an unknown message is ignored', () => {
      const collector = collect([{ type: 'REASONING_MESSAGE_CONTENT', messageId: 'r9', delta: 'lost' }]);
      expect(collector.produced()).toEqual([]);
    });

    it('reasoning is never marked interrupted', () => {
      const collector = collect([
        { type: 'REASONING_MESSAGE_START', messageId: 'r1', role: 'reasoning' },
        { type: 'REASONING_MESSAGE_CONTENT', messageId: 'r1', delta: 'half' },
      ]);
      expect(collector.produced(collector.openTextIds())).toEqual([
        { id: 'r1', role: 'reasoning', content: 'half' },
      ]);
    });
  });

  it('a two-step run: assistant(toolCalls) → tool → assistant(text), in that order', () => {
    const collector = collect([
      RUN_STARTED,
      { type: 'STEP_STARTED', stepName: 'step-1' },
      callStart('c1', 'add', 'p1'),
      callArgs('c1', '{"a":1,"b":1}'),
      callEnd('c1'),
      result('t1', 'c1', '{"sum":2}'),
      { type: 'STEP_FINISHED', stepName: 'step-1' },
      { type: 'STEP_STARTED', stepName: 'step-2' },
      ...text('m2', 'The sum ', 'is 2.'),
      { type: 'STEP_FINISHED', stepName: 'step-2' },
      RUN_FINISHED,
    ]);
    expect(collector.produced()).toEqual([
      { id: 'p1', role: 'assistant', toolCalls: [toolCall('c1', 'add', '{"a":1,"b":1}')] },
      { id: 't1', role: 'tool', toolCallId: 'c1', content: '{"sum":2}' },
      { id: 'm2', role: 'assistant', content: 'The sum is 2.' },
    ]);
  });

  describe('produced(interrupted)', () => {
    it('produced(true) marks a text message still open with metadata.interrupted, keeping the text so far', () => {
      const collector = collect([start('m1'), content('m1', 'Half '), content('m1', 'a sen')]);
      expect(collector.produced(collector.openTextIds())).toEqual([
        { id: 'm1', role: 'assistant', content: 'Half a sen', metadata: { interrupted: true } },
      ]);
    });

    it('produced(true) does not mark text messages already closed', () => {
      const collector = collect([
        ...text('m1', 'complete'),
        callStart('c1', 'x', 'm1'),
        callArgs('c1', '{}'),
        callEnd('c1'),
        result('t1', 'c1', '1'),
        start('m2'),
        content('m2', 'cut he'),
      ]);
      expect(collector.produced(collector.openTextIds())).toEqual([
        { id: 'm1', role: 'assistant', content: 'complete', toolCalls: [toolCall('c1', 'x', '{}')] },
        { id: 't1', role: 'tool', toolCallId: 'c1', content: '1' },
        { id: 'm2', role: 'assistant', content: 'cut he', metadata: { interrupted: true } },
      ]);
    });

    it('produced() marks nothing, even with a text message open', () => {
      const collector = collect([start('m1'), content('m1', 'open')]);
      const [message] = collector.produced();
      expect(message).toEqual({ id: 'm1', role: 'assistant', content: 'open' });
      expect(message).not.toHaveProperty('metadata');
    });

    it('a text message closed after an interrupted produced() is no longer marked', () => {
      const collector = collect([start('m1'), content('m1', 'abc')]);
      expect(collector.produced(collector.openTextIds())[0].metadata).toEqual({ interrupted: true });
      collector.observe({ type: 'TEXT_MESSAGE_END', messageId: 'm1', timestamp: 1 });
      expect(collector.produced(collector.openTextIds())).toEqual([
        { id: 'm1', role: 'assistant', content: 'abc' },
      ]);
    });

    it('an open text message that also holds tool calls keeps them when marked', () => {
      const collector = collect([
        start('m1'),
        content('m1', 'x'),
        callStart('c1', 'a', 'm1'),
        callArgs('c1', '{"k":1}'),
      ]);
      expect(collector.produced(collector.openTextIds())).toEqual([
        {
          id: 'm1',
          role: 'assistant',
          content: 'x',
          toolCalls: [toolCall('c1', 'a', '{"k":1}')],
          metadata: { interrupted: true },
        },
      ]);
    });
  });

  describe('produced() returns copies', () => {
    it('mutating a produced message, its tool calls or their function does not change a later produced()', () => {
      const collector = collect([
        ...text('m1', 'hello'),
        callStart('c1', 'search', 'm1'),
        callArgs('c1', '{"q":1}'),
        callEnd('c1'),
        result('t1', 'c1', 'ok'),
      ]);
      const first = collector.produced();
      const expected = structuredClone(first);

      first[0].content = 'changed';
      first[0].toolCalls![0].id = 'changed';
      first[0].toolCalls![0].function.arguments = 'changed';
      first[0].toolCalls![0].function.name = 'changed';
      first[0].toolCalls!.push(toolCall('c9', 'extra', '{}'));
      first[1].content = 'changed';
      first.push({ id: 'x', role: 'user', content: 'x' });

      expect(collector.produced()).toEqual(expected);
    });

    it('the {} given to empty arguments is not written back into the collector', () => {
      const collector = collect([callStart('c1', 'a', 'p1')]);
      expect(collector.produced()[0].toolCalls![0].function.arguments).toBe('{}');
      collector.observe({ type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"late":true}', timestamp: 1 });
      expect(collector.produced()[0].toolCalls![0].function.arguments).toBe('{"late":true}');
    });

    it('mutating the metadata of an interrupted copy does not leak into the next one', () => {
      const collector = collect([start('m1'), content('m1', 'x')]);
      const first = collector.produced(collector.openTextIds());
      first[0].metadata!.interrupted = false;
      first[0].metadata!.other = 1;
      expect(collector.produced(collector.openTextIds())[0].metadata).toEqual({ interrupted: true });
      expect(collector.produced()[0]).not.toHaveProperty('metadata');
    });

    it('two calls give equal but distinct objects', () => {
      const collector = collect([...text('m1', 'a'), callStart('c1', 'x', 'm1')]);
      const a = collector.produced();
      const b = collector.produced();
      expect(a).toEqual(b);
      expect(a[0]).not.toBe(b[0]);
      expect(a[0].toolCalls).not.toBe(b[0].toolCalls);
      expect(a[0].toolCalls![0]).not.toBe(b[0].toolCalls![0]);
      expect(a[0].toolCalls![0].function).not.toBe(b[0].toolCalls![0].function);
    });
  });

  it('more events after produced() are still collected', () => {
    const collector = collect(text('m1', 'a'));
    expect(collector.produced()).toHaveLength(1);
    collector.observe({ type: 'TEXT_MESSAGE_START', messageId: 'm2', role: 'assistant', timestamp: 1 });
    collector.observe({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm2', delta: 'b', timestamp: 2 });
    expect(collector.produced().map((m) => [m.id, m.content])).toEqual([
      ['m1', 'a'],
      ['m2', 'b'],
    ]);
  });
});
