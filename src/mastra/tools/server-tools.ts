import { createTool } from '@mastra/core/tools';
import { randomUUID } from 'node:crypto';
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

/**
 * A harmless demonstration of approvals (docs/clients.md): it publishes nothing anywhere, it
 * only answers as if it had. Mastra's own `requireApproval` flag marks it; the run stops at the call
 * and asks (an AG-UI interrupt) before it executes.
 */
export const publishNoteTool = createTool({
  id: 'publish_note',
  description: 'Publishes a short note for everyone to read. A person must approve each note first.',
  inputSchema: z.object({ text: z.string().min(1).max(2000) }),
  requireApproval: true,
  execute: ({ text }) => Promise.resolve({ published: true, noteId: randomUUID(), text }),
});

/** The server tools an agent of the agents file may name (`tools`), by id. */
export const builtInServerTools = [currentTimeTool, calculatorTool, publishNoteTool];
