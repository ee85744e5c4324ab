import { ApiExtraModels, ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { RUN_ERROR_CODES, type AguiEvent, type AguiEventType, type RunErrorCode } from './agui-events';
import { ANY_JSON_VALUE } from './run-agent-input.dto';

/** The AG-UI events of a run's stream (docs/protocol.md#the-stream), as OpenAPI models: documentation only. */

const TIMESTAMP = { type: 'integer', description: 'Epoch milliseconds', example: 1767225600000 } as const;
const type = (name: AguiEventType) => ({ enum: [name], description: 'The event type' });

export class RunStartedEvent {
  @ApiProperty(type('RUN_STARTED')) type: 'RUN_STARTED';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty({ description: "The request's threadId" }) threadId: string;
  @ApiProperty({ description: "The request's runId" }) runId: string;
}

export class RunFinishedEvent {
  @ApiProperty(type('RUN_FINISHED')) type: 'RUN_FINISHED';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty() threadId: string;
  @ApiProperty() runId: string;
  @ApiPropertyOptional({
    ...ANY_JSON_VALUE,
    description: 'The structured output, when forwardedProps.structuredOutput asked for one',
  })
  result?: unknown;
}

export class RunErrorEvent {
  @ApiProperty(type('RUN_ERROR')) type: 'RUN_ERROR';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty({ description: 'Safe to show a user' }) message: string;
  @ApiProperty({ enum: [...RUN_ERROR_CODES], enumName: 'RunErrorCode' }) code: RunErrorCode;
}

export class StepStartedEvent {
  @ApiProperty(type('STEP_STARTED')) type: 'STEP_STARTED';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty() stepName: string;
}

export class StepFinishedEvent {
  @ApiProperty(type('STEP_FINISHED')) type: 'STEP_FINISHED';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty() stepName: string;
}

export class TextMessageStartEvent {
  @ApiProperty(type('TEXT_MESSAGE_START')) type: 'TEXT_MESSAGE_START';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty({ description: 'The id the assistant message is stored with' }) messageId: string;
  @ApiProperty({ enum: ['assistant'] }) role: 'assistant';
}

export class TextMessageContentEvent {
  @ApiProperty(type('TEXT_MESSAGE_CONTENT')) type: 'TEXT_MESSAGE_CONTENT';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty() messageId: string;
  @ApiProperty({ minLength: 1, description: 'Never empty' }) delta: string;
}

export class TextMessageEndEvent {
  @ApiProperty(type('TEXT_MESSAGE_END')) type: 'TEXT_MESSAGE_END';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty() messageId: string;
}

export class ToolCallStartEvent {
  @ApiProperty(type('TOOL_CALL_START')) type: 'TOOL_CALL_START';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty() toolCallId: string;
  @ApiProperty() toolCallName: string;
  @ApiProperty({ description: 'The assistant message of this step' }) parentMessageId: string;
}

export class ToolCallArgsEvent {
  @ApiProperty(type('TOOL_CALL_ARGS')) type: 'TOOL_CALL_ARGS';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty() toolCallId: string;
  @ApiProperty({ description: 'The deltas of a call concatenate to valid JSON' }) delta: string;
}

export class ToolCallEndEvent {
  @ApiProperty(type('TOOL_CALL_END')) type: 'TOOL_CALL_END';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty() toolCallId: string;
}

export class ToolCallResultEvent {
  @ApiProperty(type('TOOL_CALL_RESULT')) type: 'TOOL_CALL_RESULT';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty({ description: 'The id the tool message is stored with' }) messageId: string;
  @ApiProperty() toolCallId: string;
  @ApiProperty({ description: 'The result: JSON text for a non-string result' }) content: string;
  @ApiProperty({ enum: ['tool'] }) role: 'tool';
}

export class ReasoningStartEvent {
  @ApiProperty(type('REASONING_START')) type: 'REASONING_START';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty() messageId: string;
}

export class ReasoningMessageStartEvent {
  @ApiProperty(type('REASONING_MESSAGE_START')) type: 'REASONING_MESSAGE_START';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty() messageId: string;
  @ApiProperty({ enum: ['reasoning'] }) role: 'reasoning';
}

export class ReasoningMessageContentEvent {
  @ApiProperty(type('REASONING_MESSAGE_CONTENT')) type: 'REASONING_MESSAGE_CONTENT';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty() messageId: string;
  @ApiProperty({ minLength: 1 }) delta: string;
}

export class ReasoningMessageEndEvent {
  @ApiProperty(type('REASONING_MESSAGE_END')) type: 'REASONING_MESSAGE_END';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty() messageId: string;
}

export class ReasoningEndEvent {
  @ApiProperty(type('REASONING_END')) type: 'REASONING_END';
  @ApiProperty(TIMESTAMP) timestamp: number;
  @ApiProperty() messageId: string;
}

/** One model per event type the service sends: the compiler checks none is missing. */
export const AG_UI_EVENT_MODELS = {
  RUN_STARTED: RunStartedEvent,
  RUN_FINISHED: RunFinishedEvent,
  RUN_ERROR: RunErrorEvent,
  STEP_STARTED: StepStartedEvent,
  STEP_FINISHED: StepFinishedEvent,
  TEXT_MESSAGE_START: TextMessageStartEvent,
  TEXT_MESSAGE_CONTENT: TextMessageContentEvent,
  TEXT_MESSAGE_END: TextMessageEndEvent,
  TOOL_CALL_START: ToolCallStartEvent,
  TOOL_CALL_ARGS: ToolCallArgsEvent,
  TOOL_CALL_END: ToolCallEndEvent,
  TOOL_CALL_RESULT: ToolCallResultEvent,
  REASONING_START: ReasoningStartEvent,
  REASONING_MESSAGE_START: ReasoningMessageStartEvent,
  REASONING_MESSAGE_CONTENT: ReasoningMessageContentEvent,
  REASONING_MESSAGE_END: ReasoningMessageEndEvent,
  REASONING_END: ReasoningEndEvent,
} satisfies Record<AguiEventType, new () => { type: AguiEventType }>;

const EVENT_MODELS = Object.values(AG_UI_EVENT_MODELS);

/** One SSE frame of `POST /run`: `id: <seq>` then `data: <event JSON>` and a blank line. */
@ApiExtraModels(...EVENT_MODELS)
export class AgUiEventFrame {
  @ApiProperty({
    type: 'integer',
    minimum: 1,
    description: "The `id:` line: the event's seq in the run, from 1",
  })
  id: number;

  @ApiProperty({
    description: 'The `data:` line: one AG-UI event as JSON, told apart by `type`',
    oneOf: EVENT_MODELS.map((model) => ({ $ref: getSchemaPath(model) })),
    discriminator: {
      propertyName: 'type',
      mapping: Object.fromEntries(
        Object.entries(AG_UI_EVENT_MODELS).map(([name, model]) => [name, getSchemaPath(model)]),
      ),
    },
  })
  data: AguiEvent;
}

/** The `POST /run` operation description: the stream and its event union. */
export const RUN_STREAM_DESCRIPTION = `Starts a run and streams its AG-UI events as Server-Sent Events (\`text/event-stream\`).
A body that is not a valid RunAgentInput, an unknown agent, a used runId or a busy thread is a JSON error
(see the error responses), never a stream.

**Wire format.** Each event is one frame (schema \`AgUiEventFrame\`): \`id: <seq>\` then \`data: <event JSON>\`
and a blank line; LF only, UTF-8, no \`event:\` line; \`seq\` counts the events of the run from 1.
A comment \`: ping\` every 15 s keeps an idle stream open (a run waiting on a frontend tool is idle).

**Order.** \`RUN_STARTED\` first; exactly one terminal event, \`RUN_FINISHED\` or \`RUN_ERROR\`, and nothing after it;
every text message and tool call is closed before it. A cancelled run ends with \`RUN_ERROR\` code \`CANCELLED\`;
a run another instance ended after its lease lapsed (this instance lost the database) ends with \`INTERRUPTED\`.

**Events.** Every event has \`type\` and \`timestamp\` (integer epoch milliseconds); an optional field is left out,
never \`null\`.

- \`RUN_STARTED\` {threadId, runId}: the request's ids
- \`RUN_FINISHED\` {threadId, runId, result?}
- \`RUN_ERROR\` {message, code}: code one of ${RUN_ERROR_CODES.join(', ')}
- \`STEP_STARTED\` {stepName}, \`STEP_FINISHED\` {stepName}
- \`TEXT_MESSAGE_START\` {messageId, role: 'assistant'}
- \`TEXT_MESSAGE_CONTENT\` {messageId, delta}: never an empty delta
- \`TEXT_MESSAGE_END\` {messageId}
- \`TOOL_CALL_START\` {toolCallId, toolCallName, parentMessageId}: parentMessageId names the step's assistant message
- \`TOOL_CALL_ARGS\` {toolCallId, delta}: a call's deltas concatenate to valid JSON
- \`TOOL_CALL_END\` {toolCallId}: a frontend tool's result is then awaited at \`POST /runs/{runId}/tool-calls/{toolCallId}/result\`
- \`TOOL_CALL_RESULT\` {messageId, toolCallId, content, role: 'tool'}: content is a string, JSON text for a non-string result
- \`REASONING_START\` {messageId}, \`REASONING_MESSAGE_START\` {messageId, role: 'reasoning'},
  \`REASONING_MESSAGE_CONTENT\` {messageId, delta}, \`REASONING_MESSAGE_END\` {messageId}, \`REASONING_END\` {messageId}:
  only where the model reasons`;

/** What `POST /run` answers with 200, as OpenAPI 3.0 can say it: a text stream of frames. */
export const RUN_STREAM_CONTENT = {
  'text/event-stream': {
    schema: {
      type: 'string',
      description: 'SSE frames, each an AgUiEventFrame: `id: <seq>` then `data: <AG-UI event JSON>`',
    },
    example: [
      'id: 1',
      'data: {"type":"RUN_STARTED","threadId":"thread-1","runId":"run-1","timestamp":1767225600000}',
      '',
      'id: 2',
      'data: {"type":"TEXT_MESSAGE_START","messageId":"msg-2","role":"assistant","timestamp":1767225600001}',
      '',
      'id: 3',
      'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"msg-2","delta":"Hello","timestamp":1767225600002}',
      '',
      'id: 4',
      'data: {"type":"TEXT_MESSAGE_END","messageId":"msg-2","timestamp":1767225600003}',
      '',
      'id: 5',
      'data: {"type":"RUN_FINISHED","threadId":"thread-1","runId":"run-1","timestamp":1767225600004}',
      '',
      '',
    ].join('\n'),
  },
};
