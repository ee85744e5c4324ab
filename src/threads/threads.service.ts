import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { AgentsService } from '../agents/agents.service';
import { idScope, Principal } from '../auth/principal';
import { DomainError } from '../common/errors';
import { PgNotifications } from '../database/pg-notifications.service';
import {
  CreateThreadDto,
  ListMessagesQueryDto,
  ListThreadsQueryDto,
  MessagesPage,
  ThreadsPage,
  ThreadView,
  UpdateThreadDto,
} from './dto/thread.dto';
import { aguiOf, uiOf } from './mastra-format';
import { toUiMessages } from './message-format';
import { MessagesRepository } from './messages.repository';
import { ThreadRow, ThreadsRepository } from './threads.repository';

function view(row: ThreadRow): ThreadView {
  return {
    id: row.id,
    resourceId: row.resourceId,
    ...(row.agentId !== null ? { agentId: row.agentId } : {}),
    ...(row.title !== null ? { title: row.title } : {}),
    metadata: row.metadata,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

const encodeCursor = (row: ThreadRow) =>
  Buffer.from(JSON.stringify([row.updatedKey, row.id])).toString('base64url');

function decodeCursor(cursor: string): { updatedKey: string; id: string } {
  try {
    const [updatedKey, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof updatedKey === 'string' && typeof id === 'string' && !Number.isNaN(Date.parse(updatedKey))) {
      return { updatedKey, id };
    }
  } catch {
    // falls through to the error below
  }
  throw new DomainError('VALIDATION_FAILED', 'Invalid cursor', [
    { path: 'cursor', message: 'use a nextCursor value' },
  ]);
}

/** Threads and their messages: the calling owner's, or by id those `idScope` lets the caller reach. */
@Injectable()
export class ThreadsService {
  private readonly log = new Logger(ThreadsService.name);

  constructor(
    private readonly threads: ThreadsRepository,
    private readonly threadMessages: MessagesRepository,
    private readonly agents: AgentsService,
    private readonly notifications: PgNotifications,
  ) {
    // An agent whose own Memory names threads (docs/agents.md#your-own-mastra-project): its title is the thread's.
    agents.onTitle((threadId, resourceId, title) => {
      this.threads.setTitleIfNone(threadId, resourceId, title).catch((err: unknown) => {
        this.log.warn(`thread ${threadId}: its generated title was not kept: ${String(err)}`);
      });
    });
  }

  /** Creates a thread; the same id again by its owner returns it (created: false); another owner's id is a conflict. */
  async create(
    dto: CreateThreadDto,
    principal: Principal,
  ): Promise<{ thread: ThreadView; created: boolean }> {
    if (dto.agentId !== undefined) this.agents.get(dto.agentId);
    const id = dto.id ?? randomUUID();
    // Named fields only: a DTO's unset fields are own `undefined` properties in the built service.
    const created = await this.threads.insert({
      id,
      resourceId: principal.resourceId,
      agentId: dto.agentId,
      title: dto.title,
      metadata: dto.metadata,
    });
    if (created) return { thread: view(created), created: true };
    const existing = await this.threads.find(id, principal.resourceId);
    if (existing) return { thread: view(existing), created: false };
    throw new DomainError('THREAD_ID_CONFLICT', `Thread id '${id}' cannot be used`);
  }

  async list(query: ListThreadsQueryDto, principal: Principal): Promise<ThreadsPage> {
    const limit = query.limit ?? 50;
    const rows = await this.threads.list(principal.readAs ?? principal.resourceId, {
      agentId: query.agentId,
      limit: limit + 1,
      after: query.cursor ? decodeCursor(query.cursor) : undefined,
    });
    const page = rows.slice(0, limit);
    return {
      threads: page.map(view),
      nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]) : null,
    };
  }

  async get(id: string, principal: Principal): Promise<ThreadView> {
    return view(await this.scoped(id, principal, 'read'));
  }

  async update(id: string, dto: UpdateThreadDto, principal: Principal): Promise<ThreadView> {
    const row = await this.threads.update(id, idScope(principal, 'write'), dto);
    if (!row) throw notFound(id);
    return view(row);
  }

  /** Deletes the thread and its messages, after asking its active run (on any instance) to stop. */
  async delete(id: string, principal: Principal): Promise<void> {
    const { resourceId } = await this.scoped(id, principal, 'write');
    // Every instance stops the thread's run it holds, if any: the runs feature listens (threads/ knows no runs/).
    await this.notifications.notify('io_bridge_thread_cancel', JSON.stringify({ threadId: id, resourceId }));
    if (!(await this.threads.delete(id, resourceId))) throw notFound(id);
  }

  async messages(id: string, query: ListMessagesQueryDto, principal: Principal): Promise<MessagesPage> {
    const thread = await this.scoped(id, principal, 'read');
    if (thread.messagesInMastra) return this.messagesInMastra(thread, query);
    const { resourceId } = thread;
    const limit = query.limit ?? 100;
    const rows = await this.threadMessages.list(id, resourceId, {
      limit: limit + 1,
      before: query.before,
    });
    const { page, nextCursor } = pageOf(rows, limit);
    if (query.format === 'agui') return { messages: page.map((r) => r.body), nextCursor };
    const answered = new Set(page.filter((r) => r.body.role === 'tool').map((r) => r.body.toolCallId));
    const missing = page
      .flatMap((r) => (r.body.toolCalls ?? []).map((c) => c.id))
      .filter((c) => !answered.has(c));
    // Results stored on a newer page than their call still show on the call's part.
    const later = await this.threadMessages.toolResults(id, resourceId, missing);
    return { messages: toUiMessages(id, page, later), nextCursor };
  }

  /**
   * The messages of a thread in Mastra's memory (docs/protocol.md#threads-mastra-wrote): `limit` of
   * Mastra's messages a page, each read as AG-UI messages (an assistant message with tool results
   * is several) or in the `ui` format as it is.
   */
  private async messagesInMastra(thread: ThreadRow, query: ListMessagesQueryDto): Promise<MessagesPage> {
    const limit = query.limit ?? 100;
    const rows = await this.threadMessages.listInMastra(thread.id, thread.resourceId, {
      limit: limit + 1,
      before: query.before,
    });
    const { page, nextCursor } = pageOf(rows, limit);
    if (query.format === 'agui') return { messages: page.flatMap(aguiOf), nextCursor };
    return { messages: page.map((row) => uiOf(thread.id, row)), nextCursor };
  }

  /** The thread this caller reaches by its id (`idScope`): its own, or any owner's where allowed. */
  private async scoped(id: string, principal: Principal, access: 'read' | 'write'): Promise<ThreadRow> {
    const row = await this.threads.find(id, idScope(principal, access));
    if (!row) throw notFound(id);
    return row;
  }
}

/**
 * A page of messages from the `limit + 1` latest read (oldest first): the one more, when it came,
 * says there is an older page, which starts before the page's first message.
 */
function pageOf<T extends { position: string }>(
  rows: T[],
  limit: number,
): { page: T[]; nextCursor: string | null } {
  const page = rows.slice(rows.length > limit ? 1 : 0);
  return { page, nextCursor: rows.length > limit ? page[0].position : null };
}

const notFound = (id: string) => new DomainError('NOT_FOUND', `Thread '${id}' not found`);
