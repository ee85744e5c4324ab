import { jsonSchemaProblem } from '../common/json-schema';

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const SOURCE_TYPES = new Set(['data', 'url', 'file']);
const MEDIA_PART_TYPES = new Set(['image', 'audio', 'video', 'document']);

/** An AG-UI 1.0 content part: text, or an image/audio/video/document with a data, url or file source. */
function contentPartProblem(part: unknown): string | undefined {
  if (!isPlainObject(part)) return 'must be an object';
  if (part.type === 'text')
    return typeof part.text === 'string' ? undefined : 'text part needs a string text';
  if (typeof part.type !== 'string' || !MEDIA_PART_TYPES.has(part.type)) {
    return `has an unknown type ${JSON.stringify(part.type)}`;
  }
  const source = part.source;
  if (
    !isPlainObject(source) ||
    !SOURCE_TYPES.has(source.type as string) ||
    typeof source.value !== 'string'
  ) {
    return 'needs a source {type: data|url|file, value}';
  }
  if (source.type === 'data' && typeof source.mimeType !== 'string') return 'data source needs a mimeType';
  if (source.type === 'url' && !URL.canParse(source.value)) return 'url source needs an absolute URL';
  if (source.mimeType !== undefined && typeof source.mimeType !== 'string')
    return 'mimeType must be a string';
  return undefined;
}

/** Why `content` does not fit a message of `role`, or undefined when it does. */
export function contentProblem(role: string | undefined, content: unknown): string | undefined {
  switch (role) {
    case 'assistant':
      return content === undefined || typeof content === 'string' ? undefined : 'content must be a string';
    case 'user':
    case 'tool': {
      if (typeof content === 'string') return undefined;
      if (!Array.isArray(content)) return 'content must be a string or an array of content parts';
      for (let i = 0; i < content.length; i++) {
        const p = contentPartProblem(content[i]);
        if (p) return `content[${i}] ${p}`;
      }
      return undefined;
    }
    case 'activity':
      return isPlainObject(content) ? undefined : 'content must be an object';
    default:
      return typeof content === 'string' ? undefined : 'content must be a string';
  }
}

/** A tool's `parameters`: a valid JSON Schema describing an object, its patterns RE2 syntax. */
export function parametersProblem(schema: unknown): string | undefined {
  const problem = jsonSchemaProblem(schema);
  if (problem) return problem;
  const type = (schema as Record<string, unknown>).type;
  return type === undefined || type === 'object'
    ? undefined
    : 'must be a JSON Schema object with type "object"';
}
