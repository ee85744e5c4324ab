import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import { ANY_JSON_VALUE } from '../../protocol/run-agent-input.dto';

/** A frontend tool's result: `content` (or `result`, any JSON value) or `error` (a failure the model sees). */
export class ToolResultDto {
  @ApiPropertyOptional({
    ...ANY_JSON_VALUE,
    description: "The tool's output: any JSON value or a string",
    example: { temperature: 21 },
  })
  @IsOptional()
  content?: unknown;

  @ApiPropertyOptional({
    ...ANY_JSON_VALUE,
    description:
      'The same as `content`, for clients that name it `result`; `content` wins when both are sent',
  })
  @IsOptional()
  result?: unknown;

  @ApiPropertyOptional({
    maxLength: 10_000,
    description: 'A failure text, reported to the model as a failed tool call (instead of content)',
  })
  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  error?: string;
}
