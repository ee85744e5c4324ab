import { IsOptional, IsString, MaxLength } from 'class-validator';

/** A frontend tool's result: `content` (any JSON value) or `error` (a failure the model sees). */
export class ToolResultDto {
  /** The tool's output: any JSON value or a string. */
  @IsOptional()
  content?: unknown;

  /** A failure text, reported to the model as a failed tool call. */
  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  error?: string;
}
