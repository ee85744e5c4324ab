const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);

function parsesToObject(text: string): boolean {
  try {
    return isObject(JSON.parse(text));
  } catch {
    return false;
  }
}

/**
 * Returns `text` when it is a JSON object, a repaired copy when it is a truncated one (a model cut off
 * mid-arguments: unclosed string, trailing comma or colon, unclosed brackets), otherwise undefined.
 */
export function repairJsonObject(text: string): string | undefined {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return undefined;
  if (parsesToObject(trimmed)) return trimmed;
  const closers: string[] = [];
  let inString = false;
  let escaped = false;
  for (const ch of trimmed) {
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '{') closers.push('}');
    else if (ch === '[') closers.push(']');
    else if (ch === '}' || ch === ']') {
      if (closers.pop() !== ch) return undefined;
    }
  }
  let repaired = trimmed;
  if (inString) repaired += escaped ? '\\"' : '"';
  repaired = repaired.replace(/[,:]\s*$/, (m) => (m.startsWith(':') ? ':null' : ''));
  repaired += closers.reverse().join('');
  return parsesToObject(repaired) ? repaired : undefined;
}
