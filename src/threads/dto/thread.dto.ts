import { Type } from 'class-transformer';
import { IsIn, IsInt, IsObject, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';

const ID = /^[\x21-\x7E]{1,200}$/;
const ID_MESSAGE = '$property must be 1-200 printable ASCII characters without spaces';

export class CreateThreadDto {
  /** The thread id; generated when absent. */
  @IsOptional()
  @IsString()
  @Matches(ID, { message: ID_MESSAGE })
  id?: string;

  @IsOptional()
  @IsString()
  @MaxLength(500)
  title?: string;

  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9_-]{1,64}$/)
  agentId?: string;

  @IsOptional()
  @IsObject()
  metadata?: Record<string, unknown>;
}

export class UpdateThreadDto {
  @IsOptional()
  @IsString()
  @MaxLength(500)
  title?: string;

  /** Replaces the metadata as a whole. */
  @IsOptional()
  @IsObject()
  metadata?: Record<string, unknown>;
}

export class ListThreadsQueryDto {
  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9_-]{1,64}$/)
  agentId?: string;

  /** 1-100, default 50. */
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  limit?: number;

  /** `nextCursor` of the previous page. */
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  cursor?: string;

  @IsOptional()
  @IsString()
  resourceId?: string;
}

export class ListMessagesQueryDto {
  /** 1-500, default 100: the latest `limit` messages, oldest first. */
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;

  /** `nextCursor` of the previous page: older messages. */
  @IsOptional()
  @IsString()
  @Matches(/^\d{1,18}$/, { message: 'before must be a cursor from nextCursor' })
  before?: string;

  @IsOptional()
  @IsIn(['ui', 'agui'])
  format?: 'ui' | 'agui';

  @IsOptional()
  @IsString()
  resourceId?: string;
}

/** A thread (CONTRACT section 1). */
export class ThreadView {
  id: string;
  resourceId: string;
  agentId?: string;
  title?: string;
  metadata: Record<string, unknown>;
  /** ISO-8601 */
  createdAt: string;
  /** ISO-8601 */
  updatedAt: string;
}

export class ThreadsPage {
  threads: ThreadView[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

export class MessagesPage {
  /** `ui` messages (`content.parts`) or AG-UI messages, by `format`. */
  messages: Record<string, unknown>[];
  /** Pass as `before` for older messages; null when there are none. */
  nextCursor: string | null;
}
