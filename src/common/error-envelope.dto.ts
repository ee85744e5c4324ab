import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ERROR_CODES, type ErrorCode, type ErrorEnvelope as ErrorEnvelopeShape } from './errors';

export class ErrorDetailView {
  @ApiPropertyOptional({ description: 'The offending field, as a dotted path', example: 'messages.0.role' })
  path?: string;

  @ApiProperty({ example: 'role must be one of the following values: user, assistant, ...' })
  message: string;
}

/** The body of every error response, on every route (docs/protocol.md#routes). */
export class ErrorEnvelope implements ErrorEnvelopeShape {
  @ApiProperty({ type: 'integer', description: 'The HTTP status again', example: 404 })
  statusCode: number;

  @ApiProperty({
    enum: [...ERROR_CODES],
    enumName: 'ErrorCode',
    description: 'A stable code to branch on',
    example: 'NOT_FOUND',
  })
  code: ErrorCode;

  @ApiProperty({ description: 'Safe to show a user: no stack traces, no SQL', example: 'Not found' })
  message: string;

  @ApiPropertyOptional({ type: [ErrorDetailView], description: 'Per-field problems of a VALIDATION_FAILED' })
  details?: ErrorDetailView[];
}
