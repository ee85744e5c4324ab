import type { Logger } from '@nestjs/common';
import { TITLE_PROMPT } from '../../agents/prompts';
import type { ConversationStore } from '../storage/conversation.store';
import type { PreparedRun } from './run-preparer';

/** memoryOptions.generateTitle: the agent's model names the thread, after the run, off the stream's path. */
export async function generateTitle(
  run: PreparedRun,
  conversations: ConversationStore,
  log: Logger,
): Promise<void> {
  const text = run.titleSource ?? '';
  if (!text) return;
  try {
    const output = await run.agent.agent.stream(
      [{ role: 'user', content: `${TITLE_PROMPT}${text.slice(0, 2000)}` }],
      {
        maxSteps: 1,
        modelSettings: { maxOutputTokens: 32 },
      },
    );
    const title = (await output.text)
      .trim()
      .replace(/^["']|["']$/g, '')
      .split('\n')[0]
      .slice(0, 80);
    if (title) await conversations.setTitleIfNone(run.threadId, run.principal.resourceId, title);
  } catch (err) {
    log.warn(`run ${run.runId}: title generation failed: ${(err as Error).message}`);
  }
}
