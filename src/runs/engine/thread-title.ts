import type { Logger } from '@nestjs/common';
import { RequestContext } from '@mastra/core/request-context';
import { TITLE_PROMPT } from '../../agents/prompts';
import type { ModelCallObserver } from '../../agents/model-calls';
import { RUN_CONTEXT_KEY, RunToolContext } from '../../agents/tools/run-tools';
import { addUsage, TokenUsage, tokensOf } from '../../protocol/usage';
import type { RunsRepository } from '../storage/runs.repository';
import type { ThreadsRepository } from '../../threads/threads.repository';
import type { PreparedRun } from '../prepare/run-preparer';

/** How long the title may take; past it the call is abandoned (the thread keeps no title). */
const TITLE_TIMEOUT_MS = 60_000;

/**
 * memoryOptions.generateTitle: the agent's model names the thread, after the run, off the stream's
 * path. The call's tokens count like the run's own: in the model metrics, and added to the run's
 * record (`usage`, and the tokens its owner's budget counts). `usage` is the run's own, as recorded.
 */
export async function generateTitle(
  run: PreparedRun,
  store: { runs: RunsRepository; threads: ThreadsRepository },
  log: Logger,
  usage: readonly TokenUsage[] | undefined,
): Promise<void> {
  const text = run.titleSource ?? '';
  if (!text) return;
  const title: TokenUsage[] = [];
  // The model's wrapper makes the call as a run's (metrics, timeouts) when the context holds one.
  const requestContext = new RequestContext();
  const context: RunToolContext & ModelCallObserver = {
    signal: AbortSignal.timeout(TITLE_TIMEOUT_MS),
    modelRetries: undefined,
    recordUsage: (u) => addUsage(title, u),
    // A server tool the model might call here reports to nobody; no frontend answers a title call.
    reportResult: () => undefined,
    waitForFrontendResult: () => Promise.reject(new Error('No frontend answers a title call')),
  };
  requestContext.set(RUN_CONTEXT_KEY, context);
  try {
    const output = await run.agent.agent.stream(
      [{ role: 'user', content: `${TITLE_PROMPT}${text.slice(0, 2000)}` }],
      { maxSteps: 1, modelSettings: { maxOutputTokens: 32, maxRetries: 0 }, requestContext },
    );
    const name = (await output.text)
      .trim()
      .replace(/^["']|["']$/g, '')
      .split('\n')[0]
      .slice(0, 80);
    if (name) await store.threads.setTitleIfNone(run.threadId, run.principal.resourceId, name);
  } catch (err) {
    log.warn(`run ${run.runId}: title generation failed: ${(err as Error).message}`);
  }
  if (!title.length) return;
  const total = (usage ?? []).map((u) => ({ ...u }));
  for (const u of title) addUsage(total, u);
  try {
    await store.runs.addUsage(run.runId, run.principal.resourceId, total, tokensOf(title));
  } catch (err) {
    log.warn(`run ${run.runId}: recording the title's usage failed: ${(err as Error).message}`);
  }
}
