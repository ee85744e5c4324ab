import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorEnvelope } from './error-envelope.dto';
import { ERROR_STATUS, type ErrorCode } from './errors';

/**
 * Documents a route's (or a controller's) error responses from their codes and what each means: one
 * response per status with the ErrorEnvelope schema, a description naming each code, and an example of
 * each code, so that Swagger UI shows the envelope a client really gets for that status.
 */
export function ApiErrors(meanings: Partial<Record<ErrorCode, string>>): MethodDecorator & ClassDecorator {
  const byStatus = new Map<number, Array<[ErrorCode, string]>>();
  for (const [code, meaning] of Object.entries(meanings) as Array<[ErrorCode, string]>) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), [code, meaning]]);
  }
  return applyDecorators(
    ...[...byStatus].map(([status, entries]) =>
      ApiResponse({
        status,
        type: ErrorEnvelope,
        description: entries.map(([code, meaning]) => `${code}: ${meaning}`).join('; '),
        examples: Object.fromEntries(
          entries.map(([code, meaning]) => [
            code,
            { summary: `${code}: ${meaning}`, value: exampleEnvelope(status, code, meaning) },
          ]),
        ),
      }),
    ),
  );
}

function exampleEnvelope(status: number, code: ErrorCode, meaning: string): ErrorEnvelope {
  const message = meaning.charAt(0).toUpperCase() + meaning.slice(1);
  if (code !== 'VALIDATION_FAILED') return { statusCode: status, code, message };
  return {
    statusCode: status,
    code,
    message: 'The request is invalid',
    details: [
      { path: 'messages.0.role', message: 'role must be one of the following values: user, assistant, ...' },
    ],
  };
}
