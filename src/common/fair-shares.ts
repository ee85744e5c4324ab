import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { DomainError } from './errors';

/** How many of something each key (an owner, a client address, a run) holds at once. */
export class Shares {
  private readonly held = new Map<string, number>();

  /** One share for every key, or none when a key is at its cap: the release (idempotent), or undefined. */
  take(keys: ReadonlyArray<readonly [key: string, cap: number]>): (() => void) | undefined {
    if (keys.some(([key, cap]) => (this.held.get(key) ?? 0) >= cap)) return undefined;
    for (const [key] of keys) this.held.set(key, (this.held.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const [key] of keys) {
        const left = (this.held.get(key) ?? 1) - 1;
        if (left > 0) this.held.set(key, left);
        else this.held.delete(key);
      }
    };
  }

  count(key: string): number {
    return this.held.get(key) ?? 0;
  }
}

/**
 * Fair shares of this instance (docs/limits.md): live runs per owner, open replays and joins per owner and
 * per run. With AUTH_MODE=none the client picks its owner, so its address is capped as well.
 */
@Injectable()
export class FairShares {
  private readonly runs = new Shares();
  private readonly readers = new Shares();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** A live run of `owner`, released when its end is recorded; 429 TOO_MANY_ACTIVE_RUNS past the cap. */
  takeRun(owner: string, address: string | undefined): () => void {
    const cap = this.config.fairShare.activeRunsPerOwner;
    const release = this.runs.take([[`owner:${owner}`, cap], ...this.byAddress(address, cap)]);
    if (release) return release;
    throw new DomainError(
      'TOO_MANY_ACTIVE_RUNS',
      `At most ${cap} live runs per owner (MAX_ACTIVE_RUNS_PER_OWNER): wait for one to end, or cancel one`,
    );
  }

  /** An open reader of `runId`, released when its stream closes; 429 TOO_MANY_READERS past a cap. */
  takeReader(owner: string, runId: string, address: string | undefined): () => void {
    return this.takeStream(owner, `run:${runId}`, address);
  }

  /** An open stream of a thread's runs, counted as a reader (the thread's cap is the run's). */
  takeThreadReader(owner: string, threadId: string, address: string | undefined): () => void {
    return this.takeStream(owner, `thread:${threadId}`, address);
  }

  private takeStream(owner: string, stream: string, address: string | undefined): () => void {
    const { readersPerOwner, readersPerRun } = this.config.fairShare;
    const release = this.readers.take([
      [`owner:${owner}`, readersPerOwner],
      [stream, readersPerRun],
      ...this.byAddress(address, readersPerOwner),
    ]);
    if (release) return release;
    throw new DomainError(
      'TOO_MANY_READERS',
      `Too many open streams (at most ${readersPerOwner} per owner, ${readersPerRun} per run or thread); close one and retry`,
    );
  }

  private byAddress(address: string | undefined, cap: number): Array<readonly [string, number]> {
    return this.config.auth.mode === 'none' && address ? [[`address:${address}`, cap]] : [];
  }
}
