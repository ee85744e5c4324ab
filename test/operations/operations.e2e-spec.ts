/**
 * What an operator sees of the built service (`node dist/src/main.js`): which requests make traces,
 * which ids its log lines carry, its metrics, and what it prints when it cannot start.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { db, eventually } from '../support/app';
import { freePort, MAIN, startBuiltService } from '../support/built-service';
import { startReceiver } from '../support/otlp-receiver';
import { runInput, runToFrames } from '../support/sse';

/** Each test starts the built service at least once: slow on a loaded machine. */
const SLOW = 180_000;

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** The JSON lines a service printed (its stdout is a pipe, so pino writes JSON). */
const jsonLines = (output: string) =>
  output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, any>);

describe('traces and logs of the built service', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(() => receiver.close());

  it(
    "makes no span for probes, /metrics, /docs or /playground; each request's log lines name its own SERVER span",
    async () => {
      const service = await startBuiltService({
        LOG_LEVEL: 'log',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      });
      const callerTrace = hex(16);
      const callerSpan = hex(8);
      const failing = runInput('/error boom', { forwardedProps: { resourceId: 'ops-owner' } });
      const quiet = [
        '/health/live',
        '/health/ready',
        '/metrics',
        '/docs',
        '/docs/',
        '/docs-json',
        '/docs/swagger-ui.css',
        '/docs/swagger-ui-init.js',
        '/playground',
        '/playground/app.js',
      ];
      try {
        for (const path of quiet) await (await fetch(`${service.origin}${path}`)).arrayBuffer();
        const agents = await fetch(`${service.base}/agents`, {
          headers: { traceparent: `00-${callerTrace}-${callerSpan}-01` },
        });
        expect(agents.status).toBe(200);
        expect((await fetch(`${service.base}/no-such-route`)).status).toBe(404);
        const frames = (await runToFrames(`${service.base}/run`, failing)).frames;
        expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'MODEL_ERROR' });
      } finally {
        // Exited: every span is flushed and every line written.
        await service.stop();
      }

      const paths = receiver.spans.map((s) => s.attributes['url.path']);
      for (const path of quiet) expect(paths).not.toContain(path);
      const server = (name: string) => receiver.spans.find((s) => s.kind === 2 && s.name === name)!;
      const agentsSpan = server('GET /io-bridge/agents');
      const notFoundSpan = receiver.spans.find(
        (s) => s.attributes['url.path'] === '/io-bridge/no-such-route',
      )!;
      const runRequest = server('POST /io-bridge/run');
      expect(agentsSpan).toMatchObject({ traceId: callerTrace, parentSpanId: callerSpan });
      expect(notFoundSpan).toBeDefined();
      expect(runRequest).toBeDefined();

      const lines = jsonLines(service.output());
      const completion = (path: string) => lines.find((l) => l.req?.path === path && l.res)!;
      // The caller's trace, but this server's span: not the caller's.
      expect(completion('/io-bridge/agents')).toMatchObject({
        traceId: callerTrace,
        spanId: agentsSpan.spanId,
      });
      expect(completion('/io-bridge/no-such-route')).toMatchObject({
        traceId: notFoundSpan.traceId,
        spanId: notFoundSpan.spanId,
      });
      // A run the browser started without traceparent: its lines are in the trace this server made.
      expect(completion('/io-bridge/run')).toMatchObject({
        traceId: runRequest.traceId,
        spanId: runRequest.spanId,
      });
      const runSpan = receiver.spans.find(
        (s) => s.traceId === runRequest.traceId && s.attributes['io_bridge.run.id'] === failing.runId,
      )!;
      const modelFailed = lines.find((l) =>
        String(l.msg).includes(`run ${failing.runId}: the model failed`),
      )!;
      expect(modelFailed).toMatchObject({ traceId: runRequest.traceId, spanId: runSpan.spanId });
      // No line carries the caller's span id as its own.
      expect(lines.filter((l) => l.spanId === callerSpan)).toEqual([]);
    },
    SLOW,
  );

  it(
    'without tracing, names the caller trace and its span as the parent',
    async () => {
      const service = await startBuiltService({ LOG_LEVEL: 'log' });
      const callerTrace = hex(16);
      const callerSpan = hex(8);
      try {
        const agents = await fetch(`${service.base}/agents`, {
          headers: { traceparent: `00-${callerTrace}-${callerSpan}-01` },
        });
        expect(agents.status).toBe(200);
      } finally {
        await service.stop();
      }
      const line = jsonLines(service.output()).find((l) => l.req?.path === '/io-bridge/agents')!;
      expect(line).toMatchObject({ traceId: callerTrace, parentSpanId: callerSpan });
      expect(line.spanId).toBeUndefined();
    },
    SLOW,
  );
});

/** The built service run to its end (a start-up that fails): exit code and what it printed. */
function runToExit(
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'log', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe('start-up errors of the built service', () => {
  const e2e = new URL(process.env.E2E_DATABASE_URL!);

  it(
    'an unreachable database: one line naming where, no stack trace, no password',
    async () => {
      const port = await freePort();
      const { code, stdout, stderr } = await runToExit({
        DATABASE_URL: `postgres://app:s3cret-pw@127.0.0.1:${port}/appdb`,
      });
      expect(code).toBe(1);
      expect(stderr.trim().split('\n')).toEqual([
        `Cannot start: the database at 127.0.0.1:${port}/appdb is unreachable (ECONNREFUSED): is Postgres running there, and is DATABASE_URL right?`,
      ]);
      expect(`${stdout}${stderr}`).not.toMatch(/^\s+at /m);
      expect(`${stdout}${stderr}`).not.toContain('s3cret-pw');
    },
    SLOW,
  );

  it(
    'a database that does not exist: one line saying how to create it',
    async () => {
      const missing = `io_bridge_missing_${hex(4)}`;
      const url = new URL(e2e);
      url.pathname = `/${missing}`;
      const { code, stdout, stderr } = await runToExit({ DATABASE_URL: url.toString() });
      expect(code).toBe(1);
      expect(stderr.trim().split('\n')).toEqual([
        `Cannot start: database "${missing}" does not exist on ${e2e.hostname}:${e2e.port || '5432'}: create it (createdb ${missing}) or fix DATABASE_URL`,
      ]);
      expect(`${stdout}${stderr}`).not.toMatch(/^\s+at /m);
    },
    SLOW,
  );
});

describe('metrics of the built service', () => {
  it(
    'io_bridge_build_info names the version, the commit built and the Node version',
    async () => {
      const service = await startBuiltService();
      try {
        const text = await (await fetch(`${service.origin}/metrics`)).text();
        const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
          version: string;
        };
        const built = JSON.parse(readFileSync(join(dirname(MAIN), '..', 'build-info.json'), 'utf8')) as {
          commit?: string;
        };
        // Built in a git checkout: the commit is known.
        expect(built.commit).toMatch(/^[0-9a-f]{40}$/);
        const line = `io_bridge_build_info{version="${pkg.version}",commit="${built.commit}",node_version="${process.version}"} 1`;
        expect(text.split('\n')).toContain(line);
      } finally {
        await service.stop();
      }
    },
    SLOW,
  );

  it(
    "io_bridge_db_pool_connections: active and idle add up to the pool's connections, no total",
    async () => {
      const service = await startBuiltService({ DATABASE_POOL_SIZE: '4' });
      try {
        // Several requests at once: the pool opens more than one connection.
        await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            fetch(`${service.base}/threads`, { headers: { 'x-resource-id': `pool-${i}` } }).then((r) =>
              r.text(),
            ),
          ),
        );
        const scrape = async () => {
          const text = await (await fetch(`${service.origin}/metrics`)).text();
          const states = [...text.matchAll(/^io_bridge_db_pool_connections\{state="(\w+)"\} (\d+)$/gm)];
          // What Postgres sees of this service's pool (the LISTEN connection has a name of its own).
          const open = await db((c) =>
            c.query<{ n: string }>(
              `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'io-bridge'`,
            ),
          );
          return {
            text,
            states,
            sum: states.reduce((n, m) => n + Number(m[2]), 0),
            open: Number(open.rows[0].n),
          };
        };
        // The pool may open or close a connection between the scrape and the query: until they agree.
        const { text, states, sum } = await eventually(async () => {
          const seen = await scrape();
          return seen.sum === seen.open ? seen : undefined;
        });
        expect(states.map((m) => m[1]).sort()).toEqual(['active', 'idle']);
        expect(sum).toBeGreaterThan(0);
        expect(sum).toBeLessThanOrEqual(4);
        expect(text).toMatch(/^io_bridge_db_pool_waiting_requests \d+$/m);
      } finally {
        await service.stop();
      }
    },
    SLOW,
  );
});

describe('start-up of the built service', () => {
  it(
    'reads .env of its working directory (the environment wins) and prints URLs that answer',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'io-bridge-dotenv-'));
      const port = await freePort();
      writeFileSync(join(dir, '.env'), `IO_BRIDGE_PREFIX=/from-dotenv\nPORT=1\nLOG_LEVEL=log\n`);
      const env: Record<string, string | undefined> = {
        ...process.env,
        NODE_ENV: 'development',
        HOST: '127.0.0.1',
        PORT: String(port),
        AUTH_MODE: 'none',
        MODEL: 'scripted',
        DATABASE_URL: process.env.E2E_DATABASE_URL,
      };
      delete env.IO_BRIDGE_PREFIX;
      delete env.LOG_LEVEL;
      const child = spawn(process.execPath, [MAIN], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString()));
      child.stderr.on('data', (c: Buffer) => (output += c.toString()));
      const exited = new Promise((resolve) => child.once('close', resolve));
      try {
        const line = await eventually(
          () => Promise.resolve(jsonLines(output).find((l) => / listening on /.test(String(l.msg)))),
          60_000,
        );
        const urls = [...String(line.msg).matchAll(/(playground|docs|API) (http:\/\/\S+?)(?=,|$)/g)].map(
          (m) => ({
            name: m[1],
            url: m[2],
          }),
        );
        expect(urls.map((u) => u.name)).toEqual(expect.arrayContaining(['docs', 'API']));
        const api = urls.find((u) => u.name === 'API')!.url;
        // PORT from the environment, IO_BRIDGE_PREFIX from .env.
        expect(api).toBe(`http://127.0.0.1:${port}/from-dotenv/agents`);
        for (const { name, url } of urls) {
          const res = await fetch(url);
          await res.arrayBuffer();
          expect({ name, status: res.status }).toEqual({ name, status: 200 });
        }
      } finally {
        child.kill('SIGTERM');
        await exited;
        rmSync(dir, { recursive: true, force: true });
      }
    },
    SLOW,
  );
});
