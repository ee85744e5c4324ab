import { Injectable } from '@nestjs/common';
import type { Agent } from '@mastra/core/agent';
import { RequestContext } from '@mastra/core/request-context';
import { defer, Observable, Subscriber, switchMap, TeardownLogic } from 'rxjs';
import { MODEL_SIGNAL_KEY } from '../../agents/abortable-model';
import { largeWorkTurns, TurnShare } from '../../common/turn-share';
import { MastraChunk } from '../events/mastra-to-agui';
import type { AgentCall } from '../prepare/agent-call';

/**
 * Messages handed to the engine for about a millisecond of its work on them before the first step (its
 * message list is built in one go): a unit of {@link largeWorkTurns}.
 */
const MESSAGES_A_UNIT = 8;

/**
 * Engine calls started in one turn of the event loop, at most (docs/limits.md#engine-starts): a
 * call's start is a few milliseconds of the engine's work in one go, so when a burst of runs is
 * claimed together, the runs claimed first store and send their first words between two turns
 * instead of after every engine of the burst has started.
 */
export const ENGINE_STARTS_PER_TURN = 4;
const engineStarts = new TurnShare(ENGINE_STARTS_PER_TURN);

/**
 * Mastra's `agent.stream()` as an Observable of its `fullStream` chunks: subscribing makes the call;
 * unsubscribing, or `signal` aborting, cancels the reading and aborts the provider call through the
 * agent's model (abortable-model.ts; a signal given to `agent.stream()` would cost a listener per
 * chunk). After an abort the Observable completes: what the run was told to stop for is the caller's.
 *
 * Text deltas that arrive in the same event-loop turn come out as one `text-delta` chunk: the engine
 * hands over a chunk per token, often thousands within one turn, and everything downstream then
 * works per turn instead of per token. Any other chunk first flushes them, so the order is kept.
 * The run's first text delta comes out at once, not at the end of the turn: when many runs start
 * together one turn runs all their engines, and the first words would wait for all of them.
 * A call is made once {@link engineStarts} has room for it in a turn, or, on a long history,
 * {@link largeWorkTurns}.
 */
@Injectable()
export class MastraRunner {
  stream(agent: Agent<any, any, any>, messages: unknown, call: AgentCall = {}): Observable<MastraChunk> {
    const made = new Observable<MastraChunk>((subscriber) => makeCall(agent, messages, call, subscriber));
    // A long history waits for its share of a turn, with every other large request (docs/limits.md#request-bodies);
    // any other call for its turn among the engine starts.
    const units = Array.isArray(messages) ? Math.floor(messages.length / MESSAGES_A_UNIT) : 0;
    return defer(() => (units ? largeWorkTurns.take(units) : engineStarts.take())).pipe(
      switchMap(() => made),
    );
  }
}

/**
 * One subscription: the call made, its chunks read into `subscriber`. A function of its own, so that
 * the closures held while the run streams (the abort listener, the teardown) do not keep the
 * messages and options the engine was given.
 */
function makeCall(
  agent: Agent<any, any, any>,
  messages: unknown,
  call: AgentCall,
  subscriber: Subscriber<MastraChunk>,
): TeardownLogic {
  const outer = call.signal;
  // Stopped before it started: there is no call to make.
  if (outer?.aborted) return subscriber.complete();
  const abort = new AbortController();
  const stop = () => abort.abort(outer?.reason);
  outer?.addEventListener('abort', stop, { once: true });
  const requestContext = new RequestContext();
  for (const [key, value] of Object.entries(call.context ?? {})) requestContext.set(key, value);
  requestContext.set(MODEL_SIGNAL_KEY, abort.signal);
  const output = agent.stream(messages as any, { ...call.options, requestContext } as any);
  const reading = { whole: false };
  void read(output, abort.signal, subscriber, reading);
  return () => {
    outer?.removeEventListener('abort', stop);
    // A call read to its end has no provider request left but what the agent makes after it in the
    // background (its memory's title): that one goes on. Any other call is stopped.
    if (!reading.whole && !abort.signal.aborted) abort.abort();
  };
}

/**
 * Reads the call's `fullStream` into `subscriber` (given the call's result, not its input: it runs as
 * long as the run); `reading.whole` is set once the call's `finish` chunk or its end was read, before
 * the subscriber sees it.
 */
async function read(
  called: ReturnType<Agent<any, any, any>['stream']>,
  signal: AbortSignal,
  subscriber: Subscriber<MastraChunk>,
  reading: { whole: boolean },
): Promise<void> {
  let text = '';
  let flushScheduled = false;
  let shownText = false;
  const flush = () => {
    flushScheduled = false;
    if (!text || subscriber.closed) return;
    const delta = text;
    text = '';
    subscriber.next({ type: 'text-delta', payload: { text: delta } });
  };
  let reader: ReadableStreamDefaultReader<MastraChunk> | undefined;
  const cancel = () => void reader?.cancel().catch(() => undefined);
  try {
    const output = await called;
    reader = (output.fullStream as ReadableStream<MastraChunk>).getReader();
    if (signal.aborted) cancel();
    else signal.addEventListener('abort', cancel, { once: true });
    while (!subscriber.closed) {
      const { done, value } = await reader.read();
      if (done) {
        reading.whole = true;
        break;
      }
      if (value.type === 'text-delta') {
        const delta: unknown = value.payload?.text;
        if (typeof delta !== 'string' || !delta) continue;
        text += delta;
        if (!shownText) {
          // The run's first words go on at once: a turn can be long when many runs start together.
          shownText = true;
          flush();
        } else if (!flushScheduled) {
          flushScheduled = true;
          setImmediate(flush);
        }
        continue;
      }
      flush();
      // The agent's last chunk: no provider request of the call is left (a subscriber may stop here).
      if (value.type === 'finish') reading.whole = true;
      subscriber.next(value);
    }
    flush();
    subscriber.complete();
  } catch (err) {
    flush();
    subscriber.error(err);
  } finally {
    signal.removeEventListener('abort', cancel);
    // Stopped by the subscriber (it has what it needs): the rest of the stream is not read.
    if (subscriber.closed) cancel();
  }
}
