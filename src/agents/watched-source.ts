import { classifyModelError, ModelFailure } from './model-errors';

export type StreamPart = { type: string; usage?: unknown; error?: unknown };

/** Parts that are content: once one is passed on, the call is shown and no longer retried. */
export const CONTENT_PARTS = new Set([
  'text-delta',
  'reasoning-delta',
  'tool-input-start',
  'tool-input-delta',
  'tool-call',
  'finish',
]);

/** The provider call a watched stream belongs to (ProviderCall): its limits, and what it records. */
export interface WatchedCall {
  readonly idleTimeoutMs: number;
  readonly runAborted: boolean;
  /** A part passed on to the run. */
  seen(part: StreamPart): void;
  finish(outcome: 'ok' | 'cancelled'): void;
  fail(failure: ModelFailure): void;
}

/**
 * The stream a run reads from a call that has shown content: the held parts, then the rest, each
 * within the idle timeout; a failure becomes an `error` part carrying its ModelFailure. A class,
 * not closures: one is held per open run.
 *
 * The idle timeout is one watchdog per call, not a timer per part: a part costs a clock reading.
 * It counts from the read that waits (the run's own pace is not the model's silence) and, when the
 * model stays silent, stops the call and cancels the reader, which ends the pending read even when
 * the model ignores its abort.
 */
export class WatchedSource implements UnderlyingDefaultSource<StreamPart> {
  /** When the pending read began (performance.now()); 0 while none waits. */
  private waitingSince = 0;
  private watchdog: NodeJS.Timeout | undefined;
  private silence: ModelFailure | undefined;

  constructor(
    private readonly call: WatchedCall,
    private readonly reader: ReadableStreamDefaultReader<StreamPart>,
    private readonly held: StreamPart[],
    private readonly local: AbortController,
  ) {}

  async pull(controller: ReadableStreamDefaultController<StreamPart>): Promise<void> {
    const part = this.held.shift();
    if (part) return this.pass(part, controller);
    const idleMs = this.call.idleTimeoutMs;
    if (idleMs > 0) {
      this.waitingSince = performance.now();
      this.watchdog ??= setTimeout(this.watch, idleMs);
    }
    try {
      const next = await this.reader.read();
      this.waitingSince = 0;
      // Cancelled by the watchdog: the pending read ended `done`.
      if (this.silence) throw this.silence;
      if (next.done) {
        this.stopWatching();
        this.call.finish('ok');
        return controller.close();
      }
      this.pass(next.value, controller);
    } catch (err) {
      this.waitingSince = 0;
      this.stopWatching();
      if (this.call.runAborted && !this.silence) {
        this.call.finish('cancelled');
        return controller.error(err);
      }
      const failure = this.silence ?? classifyModelError(err);
      void this.reader.cancel(failure).catch(() => undefined);
      this.call.fail(failure);
      controller.enqueue({ type: 'error', error: failure });
      controller.close();
    }
  }

  /** The watchdog: a read waiting the whole idle timeout ends the call; one still in time is watched until its own deadline. */
  private readonly watch = (): void => {
    this.watchdog = undefined;
    // Nobody reads now: the next read starts the watchdog again.
    if (!this.waitingSince) return;
    const idleMs = this.call.idleTimeoutMs;
    const waited = performance.now() - this.waitingSince;
    if (waited < idleMs) {
      this.watchdog = setTimeout(this.watch, idleMs - waited);
      return;
    }
    this.silence = ModelFailure.of('MODEL_TIMEOUT', `no part within ${idleMs} ms`);
    this.local.abort(this.silence);
    void this.reader.cancel(this.silence).catch(() => undefined);
  };

  private stopWatching(): void {
    clearTimeout(this.watchdog);
    this.watchdog = undefined;
  }

  cancel(reason: unknown): Promise<void> {
    this.stopWatching();
    this.call.finish(this.call.runAborted ? 'cancelled' : 'ok');
    return this.reader.cancel(reason);
  }

  private pass(part: StreamPart, controller: ReadableStreamDefaultController<StreamPart>): void {
    if (part.type === 'error') {
      const failure = classifyModelError(part.error);
      this.call.fail(failure);
      return controller.enqueue({ ...part, error: failure });
    }
    this.call.seen(part);
    controller.enqueue(part);
  }
}
