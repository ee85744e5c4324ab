import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DomainError } from '../common/errors';
import { RunEnd, RunsRepository } from './runs.repository';
import { StoredMessage, titleFrom } from '../threads/message-format';
import { ThreadsRepository } from '../threads/threads.repository';

export type BeginRun = {
  threadId: string;
  runId: string;
  resourceId: string;
  agentId: string;
  incoming: StoredMessage[];
  lastMessages: number;
  leaseMs: number;
  /** Store none of the incoming messages (memoryOptions.readOnly). */
  readOnly: boolean;
  /** Title a new thread from its first user message (otherwise the model is asked, after the run). */
  titleFromFirstMessage: boolean;
};

export type EndRun = {
  threadId: string;
  runId: string;
  resourceId: string;
  end: RunEnd;
  produced: StoredMessage[];
};

/**
 * A conversation on the server: the writes of a run, each in one transaction. At the start: the
 * owner's thread (created on the first run), the run with its lease, and the incoming messages not
 * stored yet. At the end: the run's status and the messages it produced.
 */
@Injectable()
export class ConversationStore {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly threads: ThreadsRepository,
    private readonly runs: RunsRepository,
  ) {}

  /** Returns what the model sees: the stored history (its last `lastMessages`) followed by the new messages. */
  async beginRun(run: BeginRun): Promise<StoredMessage[]> {
    return this.db.transaction(async (m) => {
      const created = await this.threads.insert(
        {
          id: run.threadId,
          resourceId: run.resourceId,
          agentId: run.agentId,
          title: run.titleFromFirstMessage && !run.readOnly ? titleFrom(run.incoming) : undefined,
        },
        m,
      );
      if (!created && !(await this.threads.lock(run.threadId, run.resourceId, m))) {
        throw new DomainError('NOT_FOUND', `Thread '${run.threadId}' not found`);
      }
      await this.runs.reapLapsed(run.threadId, m);
      await this.runs.create(
        {
          id: run.runId,
          threadId: run.threadId,
          resourceId: run.resourceId,
          agentId: run.agentId,
          leaseMs: run.leaseMs,
        },
        m,
      );
      const stored = created
        ? new Set<string>()
        : await this.threads.storedIds(
            run.threadId,
            run.resourceId,
            run.incoming.map((msg) => msg.id),
            m,
          );
      const history =
        created || run.lastMessages === 0
          ? []
          : await this.threads.messages(run.threadId, run.resourceId, { limit: run.lastMessages }, m);
      const fresh = run.incoming.filter((msg) => !stored.has(msg.id));
      if (!run.readOnly) {
        await this.threads.append(run.threadId, run.resourceId, run.runId, fresh, m);
        if (!created) {
          await this.threads.touch(
            run.threadId,
            run.resourceId,
            run.titleFromFirstMessage ? titleFrom(fresh) : undefined,
            m,
          );
        }
      }
      return [...history.map((row) => row.body), ...fresh];
    });
  }

  setTitleIfNone(threadId: string, resourceId: string, title: string): Promise<void> {
    return this.threads.setTitleIfNone(threadId, resourceId, title);
  }

  /** The run's final status and what it produced, together; nothing is stored into a deleted thread. */
  async endRun(run: EndRun): Promise<void> {
    await this.db.transaction(async (m) => {
      await this.runs.finish(run.runId, run.resourceId, run.end, m);
      if (run.produced.length && (await this.threads.lock(run.threadId, run.resourceId, m))) {
        await this.threads.append(run.threadId, run.resourceId, run.runId, run.produced, m);
        await this.threads.touch(run.threadId, run.resourceId, undefined, m);
      }
    });
  }
}
