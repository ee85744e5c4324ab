import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { PgNotifications } from '../../database/pg-notifications.service';
import { RUN_EVENTS_CHANNEL } from '../storage/run-events.repository';
import { RunLog } from './run-log';

const WATCH_CHANNEL = 'io_bridge_run_watch';
/** How often a follower on another instance says it still follows a run; the owner forgets it after WATCH_TTL_MS. */
export const WATCH_REFRESH_MS = 5_000;
const WATCH_TTL_MS = 15_000;

/**
 * Which instances follow which runs. A stream following a run's storage announces its instance
 * (NOTIFY, again every WATCH_REFRESH_MS, forgotten after WATCH_TTL_MS without); the run's own
 * instance then announces each write of its log, and counts each following instance as a reader of
 * the log, so a run read only elsewhere is not abandoned.
 */
export class RunWatches {
  private readonly instance = randomUUID();
  /** Instances following a run here: run → instance → [expiry, release of its reader]. */
  private readonly watchers = new Map<string, Map<string, { expires: number; release?: () => void }>>();

  constructor(
    private readonly notifications: PgNotifications,
    /** The logs of runs on this instance. */
    private readonly logs: ReadonlyMap<string, RunLog>,
    private readonly log: Logger,
  ) {}

  listen(): void {
    this.notifications.on(WATCH_CHANNEL, (payload) => this.watched(payload));
  }

  /** Whether another instance follows the run (its log's writes are announced). */
  has(runId: string): boolean {
    return this.watchers.has(runId);
  }

  /** A log started here: the instances that follow its run already count as its readers. */
  opened(runId: string, log: RunLog): void {
    for (const watch of this.watchers.get(runId)?.values() ?? []) watch.release ??= log.addReader();
  }

  /** This instance started (`+`) or stopped (`-`) following a run. */
  announce(op: '+' | '-', runId: string): void {
    void this.notifications
      .notify(WATCH_CHANNEL, `${op} ${this.instance} ${runId}`)
      .catch((err: Error) => this.log.warn(`announcing a follower of run ${runId} failed: ${err.message}`));
  }

  /** Says again which runs this instance follows, and forgets the followers of others that fell silent. */
  refresh(followed: Iterable<string>): void {
    for (const runId of followed) this.announce('+', runId);
    const now = Date.now();
    for (const [runId, byInstance] of this.watchers) {
      for (const [instance, watch] of byInstance) {
        if (watch.expires > now) continue;
        byInstance.delete(instance);
        watch.release?.();
      }
      if (!byInstance.size) this.watchers.delete(runId);
    }
  }

  /** `+|- <instance> <run id>`: an instance started (or still) follows a run, or stopped. */
  private watched(payload: string): void {
    const op = payload[0];
    const rest = payload.slice(2);
    const at = rest.indexOf(' ');
    const instance = rest.slice(0, at);
    const runId = rest.slice(at + 1);
    const log = this.logs.get(runId);
    let byInstance = this.watchers.get(runId);
    if (op === '-') {
      const watch = byInstance?.get(instance);
      byInstance?.delete(instance);
      if (byInstance && !byInstance.size) this.watchers.delete(runId);
      watch?.release?.();
      return;
    }
    if (!byInstance) this.watchers.set(runId, (byInstance = new Map()));
    const watch = byInstance.get(instance);
    if (watch) watch.expires = Date.now() + WATCH_TTL_MS;
    else byInstance.set(instance, { expires: Date.now() + WATCH_TTL_MS, release: log?.addReader() });
    if (!log) return;
    // The follower reads storage now: tell it where the log is (what is unstored is being written).
    if (!log.unstored.length)
      void this.notifications
        .notify(RUN_EVENTS_CHANNEL, `0 ${log.storedSeq} f ${runId}`)
        .catch(() => undefined);
  }
}
