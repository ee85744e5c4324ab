import { ConflictException, NotFoundException } from '@nestjs/common';
import { QueryFailedError } from 'typeorm';
import { toDomainError } from './error.filter';

const pgError = (code: string) =>
  new QueryFailedError('SELECT 1', [], Object.assign(new Error('db said no'), { code }));

describe('toDomainError', () => {
  it.each([
    ['22021', 'invalid byte sequence'],
    ['22P05', 'untranslatable character'],
    ['22P02', 'invalid text representation'],
    ['22001', 'string too long'],
  ])('a Postgres data exception %s (%s) is the request’s fault: 400, SQL not shown', (code) => {
    const e = toDomainError(pgError(code));
    expect(e.code).toBe('VALIDATION_FAILED');
    expect(e.message).not.toMatch(/SELECT|db said/);
  });

  it('any other database failure stays INTERNAL', () => {
    expect(toDomainError(pgError('42P01')).code).toBe('INTERNAL');
  });

  it('Nest exceptions keep their status', () => {
    expect(toDomainError(new NotFoundException()).code).toBe('NOT_FOUND');
    expect(toDomainError(new ConflictException('x')).status).toBe(409);
  });
});
