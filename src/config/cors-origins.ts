import { z } from 'zod';

/** Why a CORS_ORIGINS entry is not an origin as a browser sends it in `Origin`, or undefined when it is. */
function originProblem(entry: string): string | undefined {
  const example = 'an origin such as https://app.example.com or http://localhost:4200';
  if (entry.includes('*'))
    return `'${entry}': wildcards inside an origin are not supported; list each origin, or '*' alone`;
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return `'${entry}' is not ${example}`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `'${entry}' is not ${example}`;
  // A browser compares the exact text: a path, a trailing slash, upper case or a default port never match.
  if (url.origin !== entry) return `'${entry}' is not ${example}; did you mean ${url.origin}?`;
  return undefined;
}

/** `*` (any origin), or a comma-separated list of origins; empty means no browser origin. */
export const corsOrigins = z.string().transform((value, ctx): '*' | string[] => {
  const entries = value
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  if (entries.includes('*')) {
    if (entries.length > 1) ctx.addIssue({ code: 'custom', message: "'*' allows any origin: use it alone" });
    return '*';
  }
  for (const problem of entries.map(originProblem))
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  return entries;
});
