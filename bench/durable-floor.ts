/**
 * The durable floor: the plain `@ag-ui/mastra` server (realistic-bench.ts) doing, besides, only what
 * the service's guarantees need of the database (docs/durable-runs.md): the run claimed before the
 * first byte (the service's claim statement, which stores RUN_STARTED), every event stored before it
 * is sent (the service's RunLog and RunLogWriter: one group commit for all runs' events), and the
 * run's end and its answer recorded before the terminal event is stored and sent (the service's end
 * statement). No Nest, validation, auth, limits, leases or lifecycle checks.
 *
 * What the plain peer's figures lack against this one is what those guarantees cost on this
 * machine; what the service lacks against this one is its own code.
 */
import http from 'node:http';
import { MastraAgent } from '@ag-ui/mastra';
import type { Agent } from '@mastra/core/agent';
import { Logger } from '@nestjs/common';
import { concatMap, filter, map, Observable } from 'rxjs';
import type { AppConfig } from '../src/config/config';
import type { AguiEvent } from '../src/protocol/agui-events';
import type { ConversationStore } from '../src/runs/storage/conversation.store';
import type { Chunk, LogTail, RunEventsRepository } from '../src/runs/storage/run-events.repository';
import { RunLog } from '../src/runs/stream/run-log';
import { RunLogWriter } from '../src/runs/stream/run-log-writer';
import { SSE_HEADERS } from '../src/runs/stream/sse-writer';
import { toStored } from '../src/threads/message-format';
import { startRunServer } from './realistic-bench';
import type { LocalServer, PeerInput } from './realistic-bench';

/** The name the durable floor goes by in the tables. */
export const DURABLE_FLOOR = 'durable floor (plain + claim, event log, end)';

export async function startDurableFloor(
  agent: Agent,
  store: ConversationStore,
  events: RunEventsRepository,
  config: AppConfig,
): Promise<LocalServer> {
  const logs = new Map<string, RunLog>();
  const writer = new RunLogWriter(
    events,
    logs,
    () => false,
    config.runEvents.retentionMs,
    new Logger('DurableFloor'),
    () => undefined,
  );

  async function serve(input: PeerInput, res: http.ServerResponse): Promise<void> {
    const { threadId, runId } = input;
    const resourceId = input.forwardedProps?.resourceId ?? 'anonymous';
    const claimed = await store.claim({
      threadId,
      runId,
      resourceId,
      agentId: 'assistant',
      leaseMs: config.runLeaseMs,
      title: 'bench',
      incoming: input.messages.map((m) => toStored(m as never)),
      lastMessages: config.lastMessages,
      readOnly: false,
      memory: true,
      input: { request: input, principal: { resourceId, admin: false } },
    });
    res.writeHead(200, SSE_HEADERS);
    const log = new RunLog(runId, {
      graceMs: 0,
      abandon: () => undefined,
      store: writer,
      begun: claimed.log,
      attempt: 1,
    });
    logs.set(runId, log);
    log.addReader();
    log.attach(sinkOf(res), 0);
    log.start(eventsOf(agent, input, resourceId, store, () => writer.tail(log)));
  }

  return startRunServer(
    (input, _req, res) =>
      void serve(input, res).catch((err: Error) => {
        if (!res.headersSent) res.writeHead(500);
        res.end(String(err.message));
      }),
  );
}

/** The client's response, taking every chunk (never behind: the floor measures no slow reader). */
const sinkOf = (res: http.ServerResponse) => ({
  isBehind: false,
  push: (chunk: Chunk) => void res.write(chunk.frames),
  end: (unlogged?: string) => void res.end(unlogged ?? ''),
});

/**
 * The plain peer's events as the log takes them: its RUN_STARTED left out (the claim stored one), its
 * text chunks as TEXT_MESSAGE_CONTENT (what the log merges and sends at once as first content), and
 * its RUN_FINISHED once the run's end, its answer and the events its log has not stored are recorded (one statement).
 */
function eventsOf(
  agent: Agent,
  input: PeerInput,
  resourceId: string,
  store: ConversationStore,
  logTail: () => Promise<LogTail | undefined>,
): Observable<AguiEvent> {
  let text = '';
  let messageId = '';
  const agentRun = new MastraAgent({ agentId: 'assistant', agent, resourceId }).run(input);
  // @ag-ui/client's copy of rxjs, not ours: its events passed on.
  const run = new Observable<{ type: string }>((subscriber) => {
    const subscription = agentRun.subscribe({
      next: (event) => subscriber.next(event),
      error: (err: unknown) => subscriber.error(err),
      complete: () => subscriber.complete(),
    });
    return () => subscription.unsubscribe();
  });
  return run.pipe(
    filter((event) => event.type !== 'RUN_STARTED'),
    map((event) => {
      const e = event as unknown as { type: string; messageId?: string; delta?: string };
      if (e.type !== 'TEXT_MESSAGE_CHUNK') return event as unknown as AguiEvent;
      messageId ||= e.messageId ?? '';
      text += e.delta ?? '';
      return { type: 'TEXT_MESSAGE_CONTENT', messageId: e.messageId, delta: e.delta } as AguiEvent;
    }),
    concatMap(async (event) => {
      if (event.type !== 'RUN_FINISHED') return event;
      await store.endRun({
        threadId: input.threadId,
        runId: input.runId,
        attempt: 1,
        resourceId,
        end: { status: 'finished' },
        produced: text ? [toStored({ id: messageId, role: 'assistant', content: text })] : [],
        tail: await logTail(),
      });
      return event;
    }),
  );
}
