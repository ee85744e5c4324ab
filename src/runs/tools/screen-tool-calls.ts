import { MonoTypeOperatorFunction, Observable, Observer, Subscriber } from 'rxjs';
import type { MastraChunk } from '../events/mastra-to-agui';

/** What the stage asks of the run about each chunk (RunToolCalls). */
export interface ChunkScreen {
  /** Drop the chunk (false), pass it (true), or pass it once the returned registration is done. */
  screen(chunk: MastraChunk): boolean | Promise<void>;
  /** The chunk with the tool's name as the client knows it. */
  clientNamed(chunk: MastraChunk): MastraChunk;
}

/**
 * The run's part in the chunk stream: Mastra's copy of a result a tool reported itself is dropped;
 * a frontend tool call is registered before it goes on (so before its TOOL_CALL_END), the chunks
 * behind it waiting, in order. (concatMap would do the same at the cost of an inner subscription
 * per chunk and closures held per run.)
 */
export function screenToolCalls(screen: ChunkScreen): MonoTypeOperatorFunction<MastraChunk> {
  return (chunks) =>
    new Observable<MastraChunk>((subscriber) => chunks.subscribe(new ScreenedChunks(screen, subscriber)));
}

/**
 * One subscription of screenToolCalls(): chunks go on in order, those behind a frontend call's
 * registration once it is done. An object, not closures: it is held as long as the run streams.
 */
class ScreenedChunks implements Observer<MastraChunk> {
  /** Chunks behind a registration, in order (made when one waits). */
  private behind: MastraChunk[] | undefined;
  private registering = false;
  private upstreamDone = false;

  constructor(
    private readonly run: ChunkScreen,
    private readonly subscriber: Subscriber<MastraChunk>,
  ) {}

  next(chunk: MastraChunk): void {
    if (!this.registering && !this.behind?.length) this.pass(chunk);
    else (this.behind ??= []).push(chunk);
  }

  error(err: unknown): void {
    this.subscriber.error(err);
  }

  complete(): void {
    this.upstreamDone = true;
    this.drain();
  }

  private pass(chunk: MastraChunk): void {
    const screened = this.run.screen(chunk);
    if (screened === true) return this.subscriber.next(this.run.clientNamed(chunk));
    if (screened === false) return;
    this.registering = true;
    screened.then(
      () => {
        this.registering = false;
        if (this.subscriber.closed) return;
        this.subscriber.next(this.run.clientNamed(chunk));
        this.drain();
      },
      (err: unknown) => this.subscriber.error(err),
    );
  }

  private drain(): void {
    while (!this.registering && this.behind?.length && !this.subscriber.closed)
      this.pass(this.behind.shift()!);
    if (!this.registering && this.upstreamDone) this.subscriber.complete();
  }
}
