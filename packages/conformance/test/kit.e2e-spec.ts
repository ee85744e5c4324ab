import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { BaseEvent, EventType } from '@ag-ui/core';
import { EventEncoder } from '@ag-ui/encoder';
import { BuiltService, startBuiltService } from '../../../test/support/built-service';
import { OpenAiServer, startOpenAiServer } from '../../../test/support/openai-server';
import { answerAsScripted } from '../../../test/support/prompt-script';
import { ALL_CHECKS } from '../src/checks';
import { FRONTEND_TOOL } from '../src/options';
import { ConformanceReport, failedChecks, formatReport, runConformance } from '../src/kit';

/** The io-bridge checkout this package sits in: the examples, and the service as `npm run build` left it. */
const REPO = join(__dirname, '..', '..', '..');

/** Each report as text in CONFORMANCE_REPORTS_DIR when it is set (the reports quoted in release notes). */
function keep(name: string, report: ConformanceReport): void {
  const dir = process.env.CONFORMANCE_REPORTS_DIR;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.txt`), `${formatReport(report)}\n`);
}

const checksOf = (report: ConformanceReport) =>
  [...report.levels, ...(report.extensions ?? [])].flatMap((l) => l.checks);

/** Shows the whole report when an expectation on it fails. */
const explained = (report: ConformanceReport, value: unknown) => ({ value, report: formatReport(report) });

/**
 * Every check of every level passed in `report`; when one did not, the whole report and the
 * service's output are written out first.
 */
function expectEveryCheckPassed(report: ConformanceReport, service: BuiltService): void {
  const notPassed = checksOf(report).filter((c) => c.status !== 'pass');
  if (notPassed.length)
    process.stderr.write(`${formatReport(report)}\n--- the service's output:\n${service.output()}\n`);
  expect(
    explained(
      report,
      notPassed.map((c) => c.id),
    ),
  ).toEqual(explained(report, []));
  expect(report.levels.map((l) => [l.level, l.status])).toEqual([
    [1, 'pass'],
    [2, 'pass'],
    [3, 'pass'],
    [4, 'pass'],
  ]);
  expect(report.ok).toBe(true);
  expect(report.summary).toMatch(/^PASS /);
}

type Input = { threadId: string; runId: string };

/**
 * A plain AG-UI backend of Level 1, as a backend author might write one: node:http and @ag-ui/encoder,
 * `data:` lines without ids, no io-bridge extension. `events` makes the stream of one run; a broken
 * server is this one with one rule of the protocol broken there.
 */
async function plainAgUiServer(
  events: (input: Input) => BaseEvent[] = answer,
): Promise<{ base: string; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/run') return void res.writeHead(404).end();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let input: Input;
      try {
        input = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return void res.writeHead(400, { 'content-type': 'text/plain' }).end('bad JSON');
      }
      const encoder = new EventEncoder({ accept: req.headers.accept });
      res.writeHead(200, { 'content-type': encoder.getContentType() });
      for (const event of events(input)) res.write(encoder.encode(event));
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * A proxy to `target` (a route prefix) that passes everything through but rewrites each event of a
 * POST /run stream with `rewrite`.
 */
async function rewritingProxy(
  target: string,
  rewrite: (event: Record<string, unknown>) => void,
): Promise<{ base: string; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter(
            (entry): entry is [string, string] => typeof entry[1] === 'string' && entry[0] !== 'host',
          ),
        );
        const answer = await fetch(`${new URL(target).origin}${req.url}`, {
          method: req.method,
          headers,
          ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
        });
        const sse = /^text\/event-stream/.test(answer.headers.get('content-type') ?? '');
        const out = Object.fromEntries(
          [...answer.headers].filter(([k]) => !['content-length', 'content-encoding'].includes(k)),
        );
        res.writeHead(answer.status, out);
        if (!answer.body) return void res.end();
        let pending = '';
        for await (const chunk of answer.body as unknown as AsyncIterable<Uint8Array>) {
          if (!sse) {
            res.write(chunk);
            continue;
          }
          pending += Buffer.from(chunk).toString('utf8');
          const lines = pending.split('\n');
          pending = lines.pop()!;
          for (const line of lines) {
            if (!line.startsWith('data: ')) {
              res.write(`${line}\n`);
              continue;
            }
            const event = JSON.parse(line.slice(6)) as Record<string, unknown>;
            rewrite(event);
            res.write(`data: ${JSON.stringify(event)}\n`);
          }
        }
        res.end(pending);
      })().catch((err: Error) => res.destroy(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}${new URL(target).pathname}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const text = (messageId: string, words: string[]): BaseEvent[] => [
  { type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' },
  ...words.map((delta) => ({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta })),
  { type: EventType.TEXT_MESSAGE_END, messageId },
];
const runStarted = ({ threadId, runId }: Input) =>
  ({ type: EventType.RUN_STARTED, threadId, runId }) as BaseEvent;
const runFinished = ({ threadId, runId }: Input) =>
  ({ type: EventType.RUN_FINISHED, threadId, runId }) as BaseEvent;

/** A well-formed Level 1 answer. */
function answer(input: Input): BaseEvent[] {
  return [
    runStarted(input),
    ...text(randomUUID(), ['Hello ', 'from a plain ', 'AG-UI server']),
    runFinished(input),
  ];
}

/** One broken server per stream rule of the protocol: the rule's check, and the stream that breaks it. */
const BROKEN: [string, string, (input: Input) => BaseEvent[]][] = [
  [
    'an event after the terminal one',
    'L1.one-terminal-last',
    (input) => [...answer(input), ...text(randomUUID(), ['a late word'])],
  ],
  [
    'a text message left open',
    'L1.text-messages-closed',
    (input) => [
      runStarted(input),
      ...text(randomUUID(), ['never ', 'ended']).slice(0, -1),
      runFinished(input),
    ],
  ],
  [
    'an empty delta',
    'L1.non-empty-delta',
    (input) => [runStarted(input), ...text(randomUUID(), ['Hello', '', ' there']), runFinished(input)],
  ],
  [
    'tool arguments that are not JSON',
    'L1.tool-args-json',
    (input) => {
      const messageId = randomUUID();
      const toolCallId = randomUUID();
      return [
        runStarted(input),
        { type: EventType.TOOL_CALL_START, toolCallId, toolCallName: 'lookup', parentMessageId: messageId },
        { type: EventType.TOOL_CALL_ARGS, toolCallId, delta: '{"query": "Par' },
        { type: EventType.TOOL_CALL_ARGS, toolCallId, delta: 'is"' },
        { type: EventType.TOOL_CALL_END, toolCallId },
        {
          type: EventType.TOOL_CALL_RESULT,
          messageId: randomUUID(),
          toolCallId,
          content: 'France',
          role: 'tool',
        },
        ...text(randomUUID(), ['Paris is ', 'in France']),
        runFinished(input),
      ] as BaseEvent[];
    },
  ],
  ['no RUN_STARTED first', 'L1.run-started-first', (input) => answer(input).slice(1)],
  [
    'pendingToolCallIds naming a call the run answered',
    'L1.pending-tool-calls',
    (input) => {
      const toolCallId = randomUUID();
      return [
        runStarted(input),
        {
          type: EventType.TOOL_CALL_START,
          toolCallId,
          toolCallName: 'lookup',
          parentMessageId: randomUUID(),
        },
        { type: EventType.TOOL_CALL_ARGS, toolCallId, delta: '{"query":"Paris"}' },
        { type: EventType.TOOL_CALL_END, toolCallId },
        {
          type: EventType.TOOL_CALL_RESULT,
          messageId: randomUUID(),
          toolCallId,
          content: 'France',
          role: 'tool',
        },
        ...text(randomUUID(), ['Paris is ', 'in France']),
        { ...runFinished(input), outcome: { type: 'success', pendingToolCallIds: [toolCallId] } },
      ] as BaseEvent[];
    },
  ],
  [
    'two interrupts under one id',
    'L1.interrupts',
    (input) => [
      ...answer(input).slice(0, -1),
      {
        ...runFinished(input),
        outcome: {
          type: 'interrupt',
          interrupts: [
            { id: 'approve-1', reason: 'tool_approval' },
            { id: 'approve-1', reason: 'tool_approval' },
          ],
        },
      },
    ],
  ],
  [
    'usage that does not add up',
    'L1.usage-accounting',
    (input) => [
      ...answer(input).slice(0, -1),
      { ...runFinished(input), usage: [{ inputTokens: 10, outputTokens: 5, totalTokens: 20 }] },
    ],
  ],
];

describe('the conformance kit', () => {
  it("names every check, with its source, in the tables of the kit's README", () => {
    const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8');
    const rows = new Map(
      [...readme.matchAll(/^\|\s*`([^`]+)`\s*\|\s*(\d)\s*\|(.*)\|\s*$/gm)].map(([, id, level, rest]) => [
        id,
        { level, rest },
      ]),
    );
    for (const check of ALL_CHECKS) {
      expect({ id: check.id, row: rows.has(check.id) }).toEqual({ id: check.id, row: true });
      expect(rows.get(check.id)!.level).toBe(String(check.level));
      if (check.source.kind === 'protocol')
        expect(rows.get(check.id)!.rest).toContain(
          check.source.clause.replace(/\|/g, '\\|'), // a table cell escapes |
        );
    }
    expect([...rows.keys()].sort()).toEqual(ALL_CHECKS.map((c) => c.id).sort());
  });

  describe('against io-bridge (node dist/src/main.js)', () => {
    let service: BuiltService | undefined;
    const reports: Partial<Record<'protocol' | 'io-bridge', ConformanceReport>> = {};
    beforeAll(async () => {
      service = await startBuiltService({ DATABASE_URL: process.env.E2E_DATABASE_URL! });
      for (const profile of ['protocol', 'io-bridge'] as const) {
        reports[profile] = await runConformance({ base: service.base }, { profile });
        keep(`io-bridge-${profile}`, reports[profile]);
      }
    }, 240_000);
    afterAll(async () => {
      await service?.stop();
    });

    it.each(['protocol', 'io-bridge'] as const)(
      'passes every check of every level in the %s profile',
      (profile) => expectEveryCheckPassed(reports[profile]!, service!),
    );

    it('fails the stock-client loop and the interrupt checks, and no other, when RUN_FINISHED loses its outcome', async () => {
      // io-bridge behind a proxy that drops RUN_FINISHED.outcome: a 1.x client learns of neither its pending
      // frontend calls nor the approval it must give.
      const proxy = await rewritingProxy(service!.base, (event) => {
        if (event.type === 'RUN_FINISHED') delete event.outcome;
      });
      try {
        const report = await runConformance({ base: proxy.base }, { levels: [2], profile: 'io-bridge' });
        keep('io-bridge-without-outcome', report);
        expect(explained(report, failedChecks(report))).toEqual(
          explained(report, ['X2.ag-ui-loop', 'X2.interrupt-resume']),
        );
        expect(checksOf(report).find((c) => c.id === 'X2.ag-ui-loop')!.seen).toMatch(
          /does not name .* in outcome\.pendingToolCallIds/,
        );
      } finally {
        await proxy.close();
      }
    });

    it('checks io-bridge extensions only in the io-bridge profile, each of them sourced to io-bridge', () => {
      expect(reports.protocol!.extensions).toBeUndefined();
      expect(checksOf(reports.protocol!).every((c) => !c.extension)).toBe(true);
      const extensions = reports['io-bridge']!.extensions!.flatMap((l) => l.checks);
      expect(extensions.length).toBeGreaterThan(20);
      expect(extensions.every((c) => c.source.kind === 'io-bridge')).toBe(true);
      expect(
        checksOf(reports['io-bridge']!)
          .filter((c) => !c.extension)
          .map((c) => c.id),
      ).toEqual(checksOf(reports.protocol!).map((c) => c.id));
    });
  });

  /**
   * A team's own Mastra agents, their model on the OpenAI-compatible test server answering the kit's
   * `/tool` prompts as the scripted model would: served through MASTRA_ENTRY (examples/mastra-project)
   * and by a host Nest app with a guard of its own (examples/host-nest-app). Each passes both profiles.
   */
  describe.each<{
    name: string;
    main?: string;
    env: Record<string, string>;
    headers: Record<string, string>;
    ready?: { path: string; headers: Record<string, string> };
    serverTool: string;
    approval: string;
  }>([
    {
      name: 'MASTRA_ENTRY (examples/mastra-project)',
      main: undefined,
      env: {
        MASTRA_ENTRY: join(REPO, 'examples', 'mastra-project', 'src', 'mastra', 'index.ts'),
      },
      headers: { 'x-resource-id': 'kit-owner' },
      ready: undefined,
      serverTool: '/tool orderStatus {"orderId":"A-1001"}',
      approval: '/tool cancelOrder {"orderId":"A-1002"}',
    },
    {
      name: 'a host Nest app (examples/host-nest-app)',
      main: join(REPO, 'dist', 'examples', 'host-nest-app', 'src', 'main.js'),
      env: {},
      headers: { 'x-employee-key': 'key-ada' },
      ready: { path: '/io-bridge/health/ready', headers: { 'x-employee-key': 'key-ada' } },
      serverTool: '/tool freeRoom {"floor":3}',
      approval: '/tool bookRoom {"room":"3.12"}',
    },
  ])('against a team’s own Mastra agents: $name', (target) => {
    let model: OpenAiServer | undefined;
    let service: BuiltService | undefined;
    const reports: Partial<Record<'protocol' | 'io-bridge', ConformanceReport>> = {};
    beforeAll(async () => {
      model = await startOpenAiServer(answerAsScripted);
      service = await startBuiltService(
        { ...target.env, OPENAI_BASE_URL: model.url },
        120_000,
        target.main,
        undefined,
        target.ready,
      );
      const prompts = {
        serverTool: target.serverTool,
        mixed: `${target.serverTool}\n/tool ${FRONTEND_TOOL.name} {"query":"Lyon"}`,
        approval: target.approval,
      };
      for (const profile of ['protocol', 'io-bridge'] as const) {
        reports[profile] = await runConformance(
          { base: service.base, headers: target.headers },
          { profile, prompts },
        );
      }
    }, 300_000);
    afterAll(async () => {
      await service?.stop();
      await model?.close();
    });

    it.each(['protocol', 'io-bridge'] as const)(
      'passes every check of every level in the %s profile',
      (profile) => expectEveryCheckPassed(reports[profile]!, service!),
    );
  });

  describe('against io-bridge on a model that reports tokens (an OpenAI-compatible server)', () => {
    let model: OpenAiServer | undefined;
    let service: BuiltService | undefined;
    beforeAll(async () => {
      model = await startOpenAiServer(() => ({
        text: ['Hello', ' from a model'],
        usage: { prompt: 17, completion: 5, cached: 3, reasoning: 2 },
      }));
      service = await startBuiltService({
        DATABASE_URL: process.env.E2E_DATABASE_URL!,
        MODEL: 'openai/gpt-test',
        OPENAI_BASE_URL: model.url,
        OPENAI_API_KEY: 'test-key',
      });
    }, 120_000);
    afterAll(async () => {
      await service?.stop();
      await model?.close();
    });
    const USAGE_CHECKS = ['L1.answer-text', 'L1.usage-accounting', 'X1.versioned-fields', 'X1.usage'];
    const usageChecks = ALL_CHECKS.filter((c) => USAGE_CHECKS.includes(c.id));

    it('judges the usage the model reported, and passes', async () => {
      const report = await runConformance(
        { base: service!.base },
        { levels: [1], profile: 'io-bridge' },
        usageChecks,
      );
      keep('io-bridge-usage', report);
      expect(explained(report, failedChecks(report))).toEqual(explained(report, []));
      expect(
        checksOf(report)
          .map((c) => c.id)
          .sort(),
      ).toEqual([...USAGE_CHECKS].sort());
      expect(checksOf(report).find((c) => c.id === 'X1.usage')!.seen).toMatch(/"inputTokens":17/);
    });

    it('fails X1.usage, and no other, when RUN_FINISHED loses its usage', async () => {
      const proxy = await rewritingProxy(service!.base, (event) => {
        if (event.type === 'RUN_FINISHED') delete event.usage;
      });
      try {
        const report = await runConformance(
          { base: proxy.base },
          { levels: [1], profile: 'io-bridge' },
          usageChecks,
        );
        expect(explained(report, failedChecks(report))).toEqual(explained(report, ['X1.usage']));
      } finally {
        await proxy.close();
      }
    });
  });

  describe('against a minimal plain AG-UI server (Level 1, no ids)', () => {
    let server: Awaited<ReturnType<typeof plainAgUiServer>> | undefined;
    beforeAll(async () => {
      server = await plainAgUiServer();
    });
    afterAll(async () => {
      await server?.close();
    });

    it('passes Level 1 of the protocol profile', async () => {
      const report = await runConformance({ base: server!.base }, { levels: [1] });
      keep('plain-ag-ui-protocol', report);
      expect(
        explained(
          report,
          checksOf(report)
            .filter((c) => c.status !== 'pass')
            .map((c) => c.id),
        ),
      ).toEqual(explained(report, []));
      expect(report.levels).toEqual([expect.objectContaining({ level: 1, status: 'pass' })]);
      expect(report.ok).toBe(true);
    });

    it('in the io-bridge profile, still passes protocol Level 1 and names each missing extension', async () => {
      const report = await runConformance({ base: server!.base }, { levels: [1], profile: 'io-bridge' });
      keep('plain-ag-ui-io-bridge', report);
      expect(report.levels).toEqual([expect.objectContaining({ level: 1, status: 'pass' })]);
      const missing = [
        'X1.stream-headers',
        'X1.event-ids',
        'X1.rejoin',
        'X1.usage',
        'X1.run-record',
        'X1.bad-body',
        'X1.run-exists',
        'X1.timestamps',
      ];
      expect(explained(report, failedChecks(report))).toEqual(explained(report, missing));
      expect(report.extensions).toEqual([expect.objectContaining({ level: 1, status: 'fail' })]);
      expect(report.ok).toBe(false);
      const text = formatReport(report);
      for (const id of missing) expect(text).toMatch(new RegExp(`FAIL ${id.replace('.', '\\.')} `));
      expect(report.summary).toMatch(
        /^FAIL .*Level 1 pass; protocol 19\/19 checks pass; io-bridge extensions 9\/17/,
      );
    });
  });

  describe.each(BROKEN)('against a server that sends %s', (_, rule, events) => {
    let server: Awaited<ReturnType<typeof plainAgUiServer>> | undefined;
    beforeAll(async () => {
      server = await plainAgUiServer(events);
    });
    afterAll(async () => {
      await server?.close();
    });

    it(`fails ${rule} and no other check`, async () => {
      const report = await runConformance({ base: server!.base }, { levels: [1] });
      keep(`broken-${rule}`, report);
      expect(explained(report, failedChecks(report))).toEqual(explained(report, [rule]));
      expect(report.levels).toEqual([expect.objectContaining({ level: 1, status: 'fail' })]);
      expect(report.ok).toBe(false);
      const check = checksOf(report).find((c) => c.id === rule)!;
      expect(['protocol', 'ag-ui']).toContain(check.source.kind);
      expect(check.seen).not.toBe('');
    });
  });

  describe('as a command (npm run conformance -- --base URL)', () => {
    const cli = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [join(__dirname, '..', 'src', 'cli.mts'), ...args]);
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });
    const servers: Awaited<ReturnType<typeof plainAgUiServer>>[] = [];
    afterAll(async () => {
      await Promise.all(servers.map((s) => s.close()));
    });

    it('prints the JSON report with --report json and exits 0 when the chosen levels pass', async () => {
      const server = await plainAgUiServer();
      servers.push(server);
      const run = await cli(['--base', server.base, '--levels', '1', '--report', 'json']);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      const report = JSON.parse(run.stdout) as ConformanceReport;
      expect(report).toMatchObject({ profile: 'protocol', ok: true, levels: [{ level: 1, status: 'pass' }] });
      expect(report.summary).toMatch(/^PASS /);
    }, 60_000);

    it('exits 1 when a required check fails, its text report ending with the summary line', async () => {
      const server = await plainAgUiServer(BROKEN.find(([, rule]) => rule === 'L1.non-empty-delta')![2]);
      servers.push(server);
      const run = await cli(['--base', server.base, '--levels', '1']);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/^ {2}FAIL L1\.non-empty-delta /m);
      expect(run.stdout.trim().split('\n').at(-1)).toMatch(/^FAIL .*Level 1 fail/);
    }, 60_000);

    it('exits 1 in the io-bridge profile when an extension is missing, and 2 on a bad option', async () => {
      const server = await plainAgUiServer();
      servers.push(server);
      const run = await cli(['--base', server.base, '--levels', '1', '--profile', 'io-bridge']);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/^ {2}FAIL X1\.event-ids /m);
      const bad = await cli(['--base', server.base, '--profile', 'strict']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--profile 'strict'/);
    }, 60_000);
  });
});
