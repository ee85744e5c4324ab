import { Observer, Subscribable, Unsubscribable } from 'rxjs';
import { AguiEvent } from '../../protocol/agui-events';
import { Chunk, type LogTail } from '../storage/run-events.repository';
import { frame, withoutIds } from '../events/frames';

/** How long a log keeps chunks it sent, for readers attaching after a read of storage. */
const RECENT_MS = 1000;

const isTerminal = (event: AguiEvent) => event.type === 'RUN_FINISHED' || event.type === 'RUN_ERROR';

/** The log as its run's events see it: an observer that also gives its unstored tail to the run's end. */
export type LogReader = Observer<AguiEvent> & { tail(): Promise<LogTail | undefined> };

/** Who stores a log's chunks (RunLogWriter): each as it is framed, and the tail its run's end takes. */
export interface LogStore {
  produced(log: RunLog): void;
  tail(log: RunLog): Promise<LogTail | undefined>;
}

/** Whoever receives a run's frames: a client's stream. */
export interface FrameSink {
  /** Frames of consecutive events; the first may repeat some the sink already has. */
  push(chunk: Chunk): void;
  /** It dropped what it was pushed (its socket too slow): its owner catches it up from storage. */
  readonly isBehind: boolean;
  /**
   * The run's log is complete: nothing follows. `unlogged`: frames without ids of the events that
   * could not be stored (the database failed), written before the end, for this connection only.
   */
  end(unlogged?: string): void;
}

export type RunLogOptions = {
  /** How long the run goes on once its last reader left, for someone to rejoin; 0: it stops at once. */
  graceMs: number;
  /** Nobody reads the run any more (and nobody rejoined within the grace): stop it. */
  abandon: () => void;
  /** Stores the log's chunks. */
  store: LogStore;
  /** A continued run's log: it goes on after this id, the last an earlier replica stored. */
  after?: number;
  /** A new run's log as its claim began it (RUN_STARTED, stored): it goes on after it, sending it first. */
  begun?: Chunk;
  /** The claim of the run that writes this log (1, or a continuation's attempt): its writes are fenced by it. */
  attempt: number;
};

/** What the client reads as the run's first content (a terminal event ends the run anyway). */
const FIRST_CONTENT: ReadonlySet<AguiEvent['type']> = new Set([
  'TEXT_MESSAGE_CONTENT',
  'TOOL_CALL_START',
  'REASONING_MESSAGE_CONTENT',
]);

/**
 * One live run's events as its readers get them, on the instance that runs it. Events of one
 * event-loop turn become one chunk of frames, numbered once (consecutive TEXT_MESSAGE_CONTENT
 * deltas of one message merged into one event, as the client sees the same text with fewer frames),
 * so the original stream and every joiner get the same bytes. A new run's log begins with the
 * RUN_STARTED its claim stored; the events up to the run's first content are framed at once, so
 * the first words go to storage as soon as the engine has them. A chunk reaches readers only once
 * it is stored: an id a client was sent names its event for good, whatever becomes of this
 * instance (a continuation or the reaper numbers its events after the stored ones). When storing
 * fails for good, the readers here get the rest without ids.
 */
export class RunLog {
  /** The last sequence number framed. */
  seq = 0;
  /** Every event up to this one is stored, and sent to the readers attached. */
  storedSeq = 0;
  /** Framed, not yet stored (so not sent), in order: every event after `storedSeq`. */
  unstored: Chunk[] = [];
  /**
   * The last chunks sent, kept a little while: a reader that just read storage is attached from
   * here, though writes went on during its read.
   */
  private recent: Chunk[] = [];
  /** When each chunk of `recent` was sent (performance.now()). */
  private sentAt: number[] = [];
  /** The last write of this log failed (the store keeps trying): a complete log ends its readers without waiting. */
  failing = false;
  /** The terminal event was framed (or the events ended): nothing follows. */
  complete = false;
  /** The last sequence number of this log's write in flight, 0 for none (one at a time per run). */
  writing = 0;
  /** Its run went to another replica (a drain): complete here without a terminal event. */
  handedOver = false;
  /** A continued run's (an earlier replica's log goes on here). */
  continued = false;
  private pending: AguiEvent[] = [];
  /** Who waits for the events up to `seq` to be stored (takeTail()). */
  private waiters: Array<{ seq: number; resolve: () => void }> = [];
  /** The run's first content was framed: from then on the events of a turn are framed together. */
  private contentFramed = false;
  private flushScheduled = false;
  /** The run ended because the database is unavailable: its end is not stored before it is sent. */
  private endedUnavailable = false;
  private readonly sinks = new Set<FrameSink>();
  private readers = 0;
  private grace: NodeJS.Timeout | undefined;
  private subscription: Unsubscribable | undefined;

  constructor(
    readonly runId: string,
    private readonly options: RunLogOptions,
  ) {
    this.seq = this.storedSeq = options.after ?? options.begun?.last ?? 0;
    this.contentFramed = options.after !== undefined;
    if (options.begun) {
      this.recent.push(options.begun);
      this.sentAt.push(performance.now());
    }
  }

  /**
   * Starts taking the run's events (the first reader is attached before, so it gets what the log
   * began with at once); `first` go before them (a continued run's: what the earlier replica left
   * open, closed).
   */
  start(events$: Subscribable<AguiEvent>, first: AguiEvent[] = []): void {
    for (const event of first) this.enqueue(event);
    const reader: LogReader = {
      next: (event) => this.enqueue(event),
      complete: () => this.finish(),
      error: () => this.finish(),
      tail: () => this.options.store.tail(this),
    };
    this.subscription = events$.subscribe(reader);
  }

  /**
   * For the run's end: frames what is pending, waits for the log's write in flight, and takes its
   * unstored chunks as one (being written: the caller settles them); none when there are none, its
   * writes are failing, or it was handed over.
   */
  async takeTail(): Promise<Chunk | undefined> {
    this.flush();
    while (this.writing && !this.failing && !this.handedOver) {
      const seq = this.writing;
      await new Promise<void>((resolve) => this.waiters.push({ seq, resolve }));
    }
    if (this.failing || this.handedOver || this.writing || !this.unstored.length) return undefined;
    return this.take();
  }

  /** Every unstored chunk as one chunk (they are consecutive), now being written. */
  take(): Chunk {
    const chunks = this.unstored;
    const last = chunks[chunks.length - 1];
    this.writing = last.last;
    const frames = chunks.length === 1 ? chunks[0].frames : chunks.map((c) => c.frames).join('');
    return { first: chunks[0].first, last: last.last, frames, terminal: last.terminal };
  }

  private wake(): void {
    if (!this.waiters.length) return;
    const done = this.failing || this.handedOver;
    this.waiters = this.waiters.filter((w) => {
      if (!done && w.seq > this.storedSeq) return true;
      w.resolve();
      return false;
    });
  }

  /** Whether memory holds every event sent after `seq`, so a reader there can be attached live. */
  covers(seq: number): boolean {
    return seq >= (this.recent[0]?.first ?? this.storedSeq + 1) - 1;
  }

  /** Whether every event is stored and the log complete: nothing more will be sent. */
  get ended(): boolean {
    return this.complete && this.storedSeq >= this.seq;
  }

  /**
   * Sends `sink` the events sent after `after` that memory holds (the caller checked {@link covers}),
   * then every chunk as it is stored, until the log ends or the sink is detached. A sink that falls
   * behind on what memory holds is neither ended nor kept: its owner catches it up from storage, then
   * attaches it again.
   */
  attach(sink: FrameSink, after: number): void {
    for (const chunk of this.recent) if (chunk.last > after) sink.push(chunk);
    if (sink.isBehind) return;
    if (this.ended) sink.end();
    else this.sinks.add(sink);
  }

  detach(sink: FrameSink): void {
    this.sinks.delete(sink);
  }

  /** Someone reads the run (a stream here, or a follower on another instance); the release says it stopped. */
  addReader(): () => void {
    this.readers++;
    clearTimeout(this.grace);
    this.grace = undefined;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.readers === 0 && !this.complete) this.idle();
    };
  }

  /** Everything up to `seq` is stored: its chunks go to the readers and leave memory. */
  stored(seq: number): void {
    this.failing = false;
    this.storedSeq = Math.max(this.storedSeq, seq);
    while (this.unstored.length && this.unstored[0].last <= this.storedSeq) {
      const chunk = this.unstored.shift()!;
      for (const sink of this.sinks) sink.push(chunk);
      this.recent.push(chunk);
      this.sentAt.push(performance.now());
    }
    let old = 0;
    while (old < this.sentAt.length && performance.now() - this.sentAt[old] > RECENT_MS) old++;
    this.recent.splice(0, old);
    this.sentAt.splice(0, old);
    if (this.ended) this.endSinks();
    this.wake();
  }

  /** A write of this log failed: a complete log ends its readers now, the rest sent without ids. */
  storeFailed(): void {
    this.failing = true;
    this.wake();
    if (this.complete) this.endSinks(withoutIds(this.unstored.map((c) => c.frames).join('')));
  }

  /** The claim of the run this log's writes belong to. */
  get attempt(): number {
    return this.options.attempt;
  }

  /**
   * Another replica holds the run now (a write of this log was refused: its lease lapsed while this
   * instance was alive). Nothing unstored was sent, so it is dropped; the run stops here without an
   * end, and the log is complete here. Its readers are the caller's to move (they follow storage,
   * where the other replica goes on).
   */
  supersede(): FrameSink[] {
    this.handedOver = true;
    this.complete = true;
    this.unstored = [];
    this.pending = [];
    clearTimeout(this.grace);
    const subscription = this.subscription;
    this.subscription = undefined;
    const sinks = [...this.sinks];
    this.sinks.clear();
    this.wake();
    subscription?.unsubscribe();
    return sinks;
  }

  /**
   * The run was handed over (its events stopped): what is framed is stored, then the log is
   * complete here without a terminal event; its readers are the caller's to move (they follow storage).
   */
  handOver(): FrameSink[] {
    this.handedOver = true;
    this.subscription = undefined;
    this.flush();
    this.complete = true;
    clearTimeout(this.grace);
    const sinks = [...this.sinks];
    this.sinks.clear();
    this.wake();
    this.options.store.produced(this);
    return sinks;
  }

  /** Stops taking events (the instance is closing and the run's end could not be kept). */
  close(): void {
    clearTimeout(this.grace);
    this.subscription?.unsubscribe();
  }

  private idle(): void {
    if (this.options.graceMs <= 0) return this.options.abandon();
    this.grace = setTimeout(() => {
      this.grace = undefined;
      if (this.readers === 0 && !this.complete) this.options.abandon();
    }, this.options.graceMs);
    this.grace.unref();
  }

  private enqueue(event: AguiEvent): void {
    if (this.complete) return;
    const last = this.pending[this.pending.length - 1];
    if (
      event.type === 'TEXT_MESSAGE_CONTENT' &&
      last?.type === 'TEXT_MESSAGE_CONTENT' &&
      last.messageId === event.messageId
    ) {
      // The pending event is this log's own copy (see below): extend it in place.
      last.delta += event.delta;
    } else {
      this.pending.push(event.type === 'TEXT_MESSAGE_CONTENT' ? { ...event } : event);
    }
    // Until the run's first content, its frames go out at once: when many runs start together a
    // turn runs all their engines, and the first words would otherwise wait for the end of it.
    if (!this.contentFramed) {
      this.contentFramed = FIRST_CONTENT.has(event.type);
      return this.flush();
    }
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        this.flush();
      });
    }
  }

  private flush(): void {
    if (!this.pending.length) return;
    const first = this.seq + 1;
    let frames = '';
    for (const event of this.pending) frames += frame(++this.seq, event);
    const last = this.pending[this.pending.length - 1];
    const chunk: Chunk = { first, last: this.seq, frames, terminal: isTerminal(last) };
    this.endedUnavailable = last.type === 'RUN_ERROR' && last.code === 'SERVICE_UNAVAILABLE';
    this.pending = [];
    this.unstored.push(chunk);
    if (chunk.terminal) this.finish();
    else this.options.store.produced(this);
  }

  private finish(): void {
    if (this.complete) return;
    this.flush();
    if (this.complete) return;
    this.complete = true;
    clearTimeout(this.grace);
    // Storing is failing (or the run ended because the database is unavailable): no waiting for it.
    if (this.failing || this.endedUnavailable) this.storeFailed();
    this.options.store.produced(this);
  }

  private endSinks(unlogged?: string): void {
    for (const sink of this.sinks) sink.end(unlogged || undefined);
    this.sinks.clear();
  }
}
