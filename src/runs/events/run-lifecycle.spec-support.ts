/**
 * What the RunLifecycle specs share: `checkStream`, the conformance kit's stream rules on one run's
 * output, and harnesses that play upstream events through a lifecycle. Not a spec itself.
 */
import { AbstractAgent, verifyEvents } from '@ag-ui/client';
import type { BaseEvent, Message } from '@ag-ui/core';
import { from } from 'rxjs';
import { assertStreamEvents } from '../../../test/support/stream-rules';
import { AguiEvent, UpstreamEvent } from '../../protocol/agui-events';
import { RunLifecycle } from './run-lifecycle';

export const THREAD = 'thread-1';
export const RUN = 'run-1';

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Throws, naming each rule broken, unless `events` are a well-formed run by every stream rule of the
 * conformance kit (docs/protocol.md#the-stream), the one checker the e2e specs and the kit use too.
 */
export function checkStream(
  events: readonly AguiEvent[],
  ids: { threadId: string; runId: string } = { threadId: THREAD, runId: RUN },
): void {
  assertStreamEvents(events, { input: ids });
}

/** The client bundles its own rxjs copy: its Observable type is not ours, though it behaves the same. */
type ClientObservable = ReturnType<AbstractAgent['run']>;
export const clientObservable = (events: readonly AguiEvent[]): ClientObservable =>
  from(events as unknown as BaseEvent[]) as unknown as ClientObservable;

/** The official AG-UI client's own stream verification; rejects on the first event it refuses. */
export async function clientVerifies(events: readonly AguiEvent[]): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    verifyEvents()(clientObservable(events)).subscribe({ error: reject, complete: () => resolve() });
  });
}

/** An AG-UI client agent that "receives" `events`: what its messages become is what a frontend shows. */
class ReplayAgent extends AbstractAgent {
  constructor(private readonly events: readonly AguiEvent[]) {
    super({ threadId: THREAD });
  }

  run(): ClientObservable {
    return clientObservable(this.events);
  }
}

export async function clientMessages(events: readonly AguiEvent[]): Promise<Message[]> {
  const agent = new ReplayAgent(events);
  await agent.runAgent({ runId: RUN });
  return agent.messages;
}

// ---------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------

export type Harness = { lifecycle: RunLifecycle; events: AguiEvent[]; warnings: string[] };

/** A lifecycle recording what it emits and warns; generated ids are gen-1, gen-2, … */
export function harness(newId: (() => string) | null = null): Harness {
  const events: AguiEvent[] = [];
  const warnings: string[] = [];
  let n = 0;
  const lifecycle = new RunLifecycle({
    threadId: THREAD,
    runId: RUN,
    emit: (event) => events.push(event),
    warn: (message) => warnings.push(message),
    ...(newId === null ? { newId: () => `gen-${++n}` } : { newId }),
  });
  return { lifecycle, events, warnings };
}

/** Pushes `upstream`, ends the run with `end` (finish by default), and checks the result. */
export function run(
  upstream: UpstreamEvent[],
  end: (lifecycle: RunLifecycle) => void = (l) => l.finish(),
): Harness {
  const h = harness();
  for (const event of upstream) h.lifecycle.push(event);
  end(h.lifecycle);
  checkStream(h.events);
  return h;
}

/** The events without their timestamps, for exact comparisons. */
export const bare = (events: readonly AguiEvent[]) =>
  events.map(({ timestamp: _timestamp, ...rest }) => rest);
/** The events between RUN_STARTED and the terminal event, without timestamps. */
export const inner = (events: readonly AguiEvent[]) => bare(events.slice(1, -1));

export const STARTED = { type: 'RUN_STARTED', threadId: THREAD, runId: RUN };
export const FINISHED = { type: 'RUN_FINISHED', threadId: THREAD, runId: RUN };
export const of = <T extends AguiEvent['type']>(events: readonly AguiEvent[], type: T) =>
  events.filter((e): e is Extract<AguiEvent, { type: T }> => e.type === type);

/** Like run(), without checking: for the tests that show a rule being broken. */
export function harnessRun(upstream: UpstreamEvent[]): Harness {
  const h = harness();
  for (const event of upstream) h.lifecycle.push(event);
  h.lifecycle.finish();
  return h;
}
