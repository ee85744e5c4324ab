import { randomUUID } from 'node:crypto';
import { RequestContext } from '@mastra/core/request-context';
import { RUN_CALLER_KEY } from '../../agents/tools/run-tools';
import { safeErrorMessage } from '../../common/errors';
import { callerOf } from '../prepare/agent-call';
import type { StoredMessage } from '../../threads/message-format';
import type { MastraChunk } from '../events/mastra-to-agui';
import type { PreparedRun } from '../prepare/run-preparer';
import type { AnsweredInterrupt } from '../storage/interrupts.repository';

/**
 * The results of the approvals a run's `resume` answered, as the engine would report them: an
 * approved call runs now (its tool's own execute), a declined one tells the model so. Each result
 * joins `history` (what the model sees), after its call (added when the history lacks it).
 */
export async function resumedResults(
  run: PreparedRun,
  resumed: AnsweredInterrupt[],
  history: StoredMessage[],
  signal: AbortSignal,
): Promise<MastraChunk[]> {
  const chunks: MastraChunk[] = [];
  const known = new Set(history.flatMap((m) => m.toolCalls?.map((c) => c.id) ?? []));
  for (const answer of resumed) {
    const result = await resultOf(run, answer, signal);
    if (!known.has(answer.toolCallId)) {
      history.push({
        id: answer.messageId ?? `${answer.toolCallId}-call`,
        role: 'assistant',
        toolCalls: [
          {
            id: answer.toolCallId,
            type: 'function',
            function: { name: answer.toolName, arguments: JSON.stringify(answer.args ?? {}) },
          },
        ],
      });
    }
    const messageId = randomUUID();
    history.push({
      id: messageId,
      role: 'tool',
      toolCallId: answer.toolCallId,
      content: typeof result === 'string' ? result : JSON.stringify(result ?? null),
    });
    chunks.push({
      type: 'tool-result',
      payload: { toolCallId: answer.toolCallId, toolName: answer.toolName, result, messageId },
    });
  }
  return chunks;
}

async function resultOf(run: PreparedRun, answer: AnsweredInterrupt, signal: AbortSignal): Promise<unknown> {
  const tool = run.agent.approvalTools.get(answer.toolName);
  if (!answer.approved || !tool?.execute) {
    return {
      approved: false,
      message: `A person declined this call of ${answer.toolName}${answer.reason ? `: ${answer.reason}` : ''}`,
    };
  }
  try {
    // The run's caller, for a tool that tells its system who calls (forwardAuth).
    const requestContext = new RequestContext([[RUN_CALLER_KEY, callerOf(run)]]);
    return await tool.execute(answer.args, { abortSignal: signal, requestContext });
  } catch (err) {
    return { error: safeErrorMessage(err, 'Tool failed') };
  }
}
