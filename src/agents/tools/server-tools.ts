import { createTool } from '@mastra/core/tools';
import { z } from 'zod';
import { evaluate } from './calculator';

/** The current time in an IANA time zone; an unknown zone is a tool error the model can read. */
export const currentTimeTool = createTool({
  id: 'current_time',
  description: 'The current date and time in an IANA time zone such as Europe/Paris or UTC.',
  inputSchema: z.object({ timeZone: z.string().min(1).max(64).default('UTC') }),
  execute: async ({ timeZone }) => {
    let formatted: string;
    try {
      formatted = new Intl.DateTimeFormat('en-GB', {
        timeZone,
        dateStyle: 'full',
        timeStyle: 'long',
      }).format(new Date());
    } catch {
      throw new Error(`Unknown time zone '${timeZone}'`);
    }
    return Promise.resolve({ timeZone, iso: new Date().toISOString(), formatted });
  },
});

/** Arithmetic through a small parser, never `eval`. */
export const calculatorTool = createTool({
  id: 'calculate',
  description:
    'Evaluates an arithmetic expression: + - * / % ^, parentheses, sqrt, abs, round, floor, ceil, min, max, pi, e.',
  inputSchema: z.object({ expression: z.string().min(1).max(1000) }),
  execute: ({ expression }) => Promise.resolve({ expression, result: evaluate(expression) }),
});
