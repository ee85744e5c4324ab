import { DatabaseError } from 'pg';
import { QueryFailedError } from 'typeorm';
import { isDatabaseUnavailable } from './database-errors';

/** An error as pg reports one from the server, with its SQLSTATE. */
function serverError(code: string, message = 'server error'): DatabaseError {
  const err = new DatabaseError(message, message.length, 'error');
  err.code = code;
  return err;
}

const socketError = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code });

describe('isDatabaseUnavailable', () => {
  it.each([
    ['connection refused', socketError('ECONNREFUSED')],
    ['connection reset', socketError('ECONNRESET')],
    ['TCP timeout', socketError('ETIMEDOUT')],
    ['pool wait timeout', new Error('timeout exceeded when trying to connect')],
    ['connect timeout', new Error('Connection terminated due to connection timeout')],
    ['lost connection', new Error('Connection terminated unexpectedly')],
    ['client-side query timeout', new Error('Query read timeout')],
    ['admin shutdown 57P01', serverError('57P01')],
    ['crash shutdown 57P02', serverError('57P02')],
    ['cannot connect now 57P03', serverError('57P03')],
    ['too many connections 53300', serverError('53300')],
    ['statement timeout 57014', serverError('57014', 'canceling statement due to statement timeout')],
    ['connection exception class 08', serverError('08006')],
    ['idle in transaction timeout 25P03', serverError('25P03')],
    ['TypeORM-wrapped', new QueryFailedError('SELECT 1', [], serverError('57P01'))],
    ['TypeORM-wrapped driver message', new QueryFailedError('SELECT 1', [], new Error('Query read timeout'))],
    ['one address of several refused', new AggregateError([socketError('ECONNREFUSED')], 'connect failed')],
    ['as a cause', new Error('wrapped', { cause: socketError('ECONNRESET') })],
  ])('is true for %s', (_name, err) => {
    expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it.each([
    ['a unique violation', new QueryFailedError('INSERT', [], serverError('23505'))],
    ['a syntax error', serverError('42601')],
    ['a deadlock', serverError('40P01')],
    ['a plain error', new Error('something else')],
    ['a non-error', 'Connection terminated'],
    ['nothing', undefined],
  ])('is false for %s', (_name, err) => {
    expect(isDatabaseUnavailable(err)).toBe(false);
  });
});
