/**
 * AG-UI versions and client kinds. What AG-UI 1.0 added to the wire (`RUN_FINISHED.outcome` and its
 * `pendingToolCallIds`, the `cancelled` and `interrupt` outcomes, `usage`) goes only to a request that
 * declares it: clients built on `@ag-ui/client` 0.0.x (CopilotKit 1.75, assistant-ui) validate events
 * with a strict schema that rejects those fields, and declare no version.
 */

/** Whether a run request's `protocolVersion` declares AG-UI 1.x ("1", "1.0", "1.2.3"). */
export function declaresAgUi1(protocolVersion?: string): boolean {
  return typeof protocolVersion === 'string' && /^1(\.\d+)*$/.test(protocolVersion.trim());
}

/**
 * How a client runs frontend tools. `io-intelligence` (the io.Intelligence Agent Protocol): inside the run, the result posted
 * to `/runs/:runId/tool-calls/:toolCallId/result`. `ag-ui`: after the run ends, the result sent as a
 * `role:'tool'` message in the next run.
 */
export const CLIENT_PROTOCOLS = ['io-intelligence', 'ag-ui'] as const;
export type ClientProtocol = (typeof CLIENT_PROTOCOLS)[number];

export function isClientProtocol(value: unknown): value is ClientProtocol {
  return (CLIENT_PROTOCOLS as readonly unknown[]).includes(value);
}
