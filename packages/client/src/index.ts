export {
  IoBridgeClient,
  type ClientOptions,
  type FollowOptions,
  type JoinOptions,
  type RunOptions,
  type TokenSource,
} from './client';
export { IoBridgeError } from './errors';
export { RunStream } from './run-stream';
export type { RejoinOptions } from './reconnect';
export { ThreadStream } from './thread-stream';
export type * from './types';
export type { AGUIEvent, Message, Tool, TokenUsage, Interrupt, RunFinishedOutcome } from '@ag-ui/core';
export { EventType } from '@ag-ui/core';
