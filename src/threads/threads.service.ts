import { randomUUID } from 'node:crypto';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { ConfigError } from '../config/config';
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
import { messagesOf, uiMessagesOf } from './mastra-rows';
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

/** A page's cursor: where it ends, a time and an id, opaque to clients. */
const encodeCursor = (at: string, id: string) => Buffer.from(JSON.stringify([at, id])).toString('base64url');

/** A time as a thread's cursor holds it (`"updatedAtZ"` as text). */
const threadTime = (at: string) => !Number.isNaN(Date.parse(at));

/** A time as a messages cursor holds it (`"createdAt"` to the microsecond), a real one. */
const messageTime = (at: string) =>
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}$/.test(at) &&
  new Date(`${at.slice(0, 23)}Z`).toISOString().slice(0, 23) === at.slice(0, 23);

/** The time and id `cursor` (from encodeCursor) names; anything else is a 400 naming `path`. */
function decodeCursor(
  cursor: string,
  path: string,
  time: (at: string) => boolean,
): { at: string; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof at === 'string' && typeof id === 'string' && time(at)) return { at, id };
  } catch {
    // falls through to the error below
  }
  throw new DomainError('VALIDATION_FAILED', 'Invalid cursor', [{ path, message: 'use a nextCursor value' }]);
}

/** Threads and their messages: the calling owner's, or by id those `idScope` lets the caller reach. */
@Injectable()
export class ThreadsService implements OnModuleInit {
  constructor(
    private readonly threads: ThreadsRepository,
    private readonly threadMessages: MessagesRepository,
    private readonly agents: AgentsService,
    private readonly notifications: PgNotifications,
  ) {}

  /**
   * The Mastra memory of each agent served must read the threads io-bridge stores (its storage on
   * io-bridge's database, in the `public` schema): checked once, at start-up, with a thread made for
   * the check and deleted after it (docs/agents.md#your-own-mastra-project).
   */
  async onModuleInit(): Promise<void> {
    for (const agent of this.agents.list()) {
      const memory = agent.memory;
      if (!memory?.getThreadById) continue;
      const probe = `io-bridge-store-check-${randomUUID()}`;
      await this.threads.insert({ id: probe, resourceId: probe });
      try {
        if (await memory.getThreadById({ threadId: probe }).catch(() => null)) continue;
      } finally {
        await this.threads.delete(probe, probe);
      }
      throw new ConfigError(
        `MASTRA_ENTRY: agent '${agent.definition.id}': its Memory's storage does not hold io-bridge's threads; give it a PostgresStore on DATABASE_URL (no schemaName)`,
      );
    }
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
    const after = query.cursor ? decodeCursor(query.cursor, 'cursor', threadTime) : undefined;
    const rows = await this.threads.list(principal.readAs ?? principal.resourceId, {
      agentId: query.agentId,
      limit: limit + 1,
      after: after && { updatedKey: after.at, id: after.id },
    });
    const page = rows.slice(0, limit);
    return {
      threads: page.map(view),
      nextCursor: rows.length > limit ? encodeCursor(page.at(-1)!.updatedKey, page.at(-1)!.id) : null,
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

  /**
   * The thread's messages, `limit` rows a page, in the thread's order: each row as the AG-UI
   * messages it stands for (`agui`; an assistant message with its tool results is one row) or in
   * the `ui` format (mastra-rows.ts).
   */
  async messages(id: string, query: ListMessagesQueryDto, principal: Principal): Promise<MessagesPage> {
    const thread = await this.scoped(id, principal, 'read');
    const limit = query.limit ?? 100;
    const rows = await this.threadMessages.list(id, thread.resourceId, {
      limit: limit + 1,
      ...(query.before ? { before: decodeCursor(query.before, 'before', messageTime) } : {}),
    });
    const { page, nextCursor } = pageOf(rows, limit);
    if (query.format === 'agui') return { messages: page.flatMap(messagesOf), nextCursor };
    return { messages: page.flatMap((row) => uiMessagesOf(id, row)), nextCursor };
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
function pageOf<T extends { at: string; id: string }>(
  rows: T[],
  limit: number,
): { page: T[]; nextCursor: string | null } {
  const page = rows.slice(rows.length > limit ? 1 : 0);
  return { page, nextCursor: rows.length > limit ? encodeCursor(page[0].at, page[0].id) : null };
}

const notFound = (id: string) => new DomainError('NOT_FOUND', `Thread '${id}' not found`);
