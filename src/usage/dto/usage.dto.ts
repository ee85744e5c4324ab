import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';

export const WINDOW = /^\d+(s|m|h|d)$/;

export class UsageQueryDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 366,
    default: 30,
    description: 'The last N days',
  })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(366)
  days?: number;
}

export class AdminUsageQueryDto extends UsageQueryDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 500,
    default: 50,
    description: 'The top N owners',
  })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;
}

export class SetQuotaDto {
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    example: 2_000_000,
    description: 'Tokens (input plus output) per window',
  })
  @IsInt()
  @Min(0)
  @Max(Number.MAX_SAFE_INTEGER)
  tokens: number;

  @ApiPropertyOptional({ example: '1d', pattern: WINDOW.source, description: 'Default: TOKEN_BUDGET_WINDOW' })
  @IsOptional()
  @IsString()
  @Matches(WINDOW, { message: 'window must be a duration such as 30m, 12h or 1d' })
  window?: string;
}

export class BudgetView {
  @ApiProperty({ example: 2_000_000 })
  tokens: number;

  @ApiProperty({ example: '1d' })
  window: string;

  @ApiProperty({ example: 15_320, description: 'Tokens of the runs that ended within the window' })
  spent: number;

  @ApiProperty({ example: 1_984_680 })
  remaining: number;

  @ApiProperty({
    enum: ['configuration', 'owner'],
    description: 'TOKEN_BUDGET_PER_OWNER, or set for this owner',
  })
  source: 'configuration' | 'owner';
}

export class UsageRowView {
  @ApiProperty({ example: '2026-12-03', description: 'UTC day the runs ended' })
  day: string;

  @ApiProperty({ example: 'assistant' })
  agentId: string;

  @ApiPropertyOptional({ example: 'openai' })
  provider?: string;

  @ApiPropertyOptional({ example: 'gpt-4o-mini' })
  model?: string;

  @ApiProperty()
  runs: number;

  @ApiProperty()
  inputTokens: number;

  @ApiProperty()
  outputTokens: number;

  @ApiProperty()
  totalTokens: number;
}

export class UsageView {
  @ApiProperty()
  resourceId: string;

  @ApiProperty({ example: 30 })
  days: number;

  @ApiProperty({ type: [UsageRowView], description: 'By day (newest first), agent and model' })
  usage: UsageRowView[];

  @ApiPropertyOptional({ type: BudgetView, description: 'Absent when the owner has no budget' })
  budget?: BudgetView;
}

export class OwnerUsageView {
  @ApiProperty()
  resourceId: string;

  @ApiProperty()
  runs: number;

  @ApiProperty()
  inputTokens: number;

  @ApiProperty()
  outputTokens: number;

  @ApiProperty()
  totalTokens: number;

  @ApiPropertyOptional({ type: BudgetView })
  budget?: BudgetView;
}

export class AdminUsageView {
  @ApiProperty({ example: 30 })
  days: number;

  @ApiProperty({ type: [OwnerUsageView], description: 'Owners by tokens spent, the most first' })
  owners: OwnerUsageView[];
}

export class QuotaView {
  @ApiProperty()
  resourceId: string;

  @ApiProperty()
  tokens: number;

  @ApiProperty({ example: '1d' })
  window: string;
}
