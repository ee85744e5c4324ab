// By path, not by the package's name: bench/ compiles this file to plain JavaScript (dist-bench), and the
// package's exports name TypeScript sources that only jest and tsc read.
import { streamViolations } from '../../packages/conformance/src/stream-rules';
import type { RunInput, StreamFacts } from '../../packages/conformance/src/stream-rules';
import { Frame } from './sse';

/**
 * Throws unless `events` keep every stream rule of the conformance kit (packages/conformance/src/stream-rules.ts),
 * naming each rule broken and what broke it, then listing the events.
 */
export function assertStreamEvents(events: readonly Record<string, any>[], facts: StreamFacts): void {
  const broken = streamViolations(events, facts);
  if (!broken.length) return;
  const listing = events
    .slice(0, 300)
    .map((e, i) => `  ${i + 1} ${JSON.stringify(e)}`)
    .join('\n');
  throw new Error(
    `stream rules broken:\n${broken.map((v) => `${v.rule}: ${v.finding}`).join('\n')}\nthe events:\n${listing}`,
  );
}

/**
 * The stream rules on a parsed stream of io-bridge's (docs/protocol.md#the-stream): its events, and its ids
 * counting from 1. `ended: false` for a stream cut short: then only the rules that hold on a part of one.
 */
export function assertStreamRules(frames: Frame[], input: RunInput, { ended = true } = {}): void {
  assertStreamEvents(
    frames.map((f) => f.event),
    { input, ids: frames.map((f) => f.id), ended },
  );
}
