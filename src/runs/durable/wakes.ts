import { Injectable } from '@nestjs/common';

/**
 * A parked run was woken by a result posted to this replica: the reaper here claims it at once, so
 * it goes on where its result arrived (RunsService asks; RunContinuations listens).
 */
@Injectable()
export class Wakes {
  private listener: (() => void) | undefined;

  listen(listener: () => void): void {
    this.listener = listener;
  }

  request(): void {
    this.listener?.();
  }
}
