import type { Tool, ToolResult } from '@io-bridge/client';

/**
 * Tools that run in this page (frontend tools): declared in every run's `tools`, answered by posting
 * their result to the waiting run. The scripted model calls one for `/tool browser_info {}`.
 */
export const browserTools: Tool[] = [
  {
    name: 'browser_info',
    description: "The user's browser: language, time zone, local time and window size.",
    parameters: { type: 'object', properties: {}, additionalProperties: false },
  },
];

export function runBrowserTool(name: string, _args: string): Promise<ToolResult> {
  if (name !== 'browser_info') return Promise.resolve({ error: `Unknown browser tool ${name}` });
  return Promise.resolve({
    content: {
      language: navigator.language,
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      localTime: new Date().toString(),
      window: `${window.innerWidth}x${window.innerHeight}`,
    },
  });
}
