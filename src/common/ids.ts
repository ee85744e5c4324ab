/**
 * Ids (threads, runs, messages, tool calls) and owners: any Unicode text of 1-200 characters (code
 * points, as Postgres counts them) without control characters (category Cc), not only whitespace.
 * SSO usernames such as `josé.martín@corp.example` are ids; a control character would forge log lines.
 * NUL and unpaired surrogates are refused earlier, for every string, by SafeInputPipe.
 */
export const ID_PATTERN = /^(?=[^]*\S)\P{Cc}{1,200}$/u;
export const ID_RULE = '1-200 characters without control characters, not only whitespace';
export const ID_MESSAGE = `$property must be ${ID_RULE}`;

/** ID_PATTERN for OpenAPI, whose `pattern` has no `u` flag: the length is in minLength/maxLength. */
export const ID_SCHEMA = { pattern: '^[^\\u0000-\\u001F\\u007F-\\u009F]+$', minLength: 1, maxLength: 200 };

export const isId = (value: unknown): value is string => typeof value === 'string' && ID_PATTERN.test(value);
