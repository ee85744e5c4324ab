/**
 * AG-UI 1.0 run outcomes, interrupts and resume entries, as this service puts them on the wire and
 * reads them (the shapes of `@ag-ui/core` 1.0). They reach a client only when its request declares
 * AG-UI 1.x (versions.ts).
 */

/** Something the run needs from a person before it goes on: here, the approval of a tool call. */
export type Interrupt = {
  id: string;
  reason: 'tool_approval';
  toolCallId: string;
  message: string;
  expiresAt: string;
  responseSchema: Record<string, unknown>;
};

export type RunFinishedOutcome =
  | { type: 'success'; pendingToolCallIds?: string[] }
  | { type: 'interrupt'; interrupts: Interrupt[] }
  | { type: 'cancelled' };

/** `RunAgentInput.resume[]`: an answer to an interrupt of an earlier run. */
export type ResumeEntry = {
  interruptId: string;
  status: 'resolved' | 'cancelled';
  payload?: unknown;
};

/** The answer an approval interrupt expects in `resume[].payload`. */
export const APPROVAL_RESPONSE_SCHEMA = {
  type: 'object',
  properties: {
    approved: { type: 'boolean', description: 'true runs the tool call, false declines it' },
    reason: { type: 'string', description: 'Why it was declined, for the model' },
  },
  required: ['approved'],
} as const;

/** Whether a resume entry approves its tool call: resolved with `{approved: true}`; anything else declines it. */
export function approves(entry: ResumeEntry): boolean {
  const payload = entry.payload as { approved?: unknown } | undefined;
  return entry.status === 'resolved' && payload?.approved === true;
}
