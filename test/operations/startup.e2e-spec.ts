import { ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { eventually } from '../support/app';
import { freePort, MAIN } from '../support/built-service';
import { openRun, runInput } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

const MIGRATE = join(__dirname, '..', '..', 'dist', 'src', 'database', 'migrate.js');

/** The environment of a terminal user: no DATABASE_URL unless `env` gives one. */
function userEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env, AUTH_MODE: 'none', MODEL: 'scripted', LOG_LEVEL: 'warn' };
  delete base.DATABASE_URL;
  for (const key of Object.keys(base)) if (/^(AGENT_|OPENAI_|ANTHROPIC_)/.test(key)) delete base[key];
  return { ...base, ...env };
}

type Exit = { code: number | null; stderr: string; stdout: string };

/** Runs `script` to its end (a failing start exits on its own). */
function runToExit(script: string, env: Record<string, string>, args: string[] = []): Promise<Exit> {
  const child = spawn(process.execPath, [script, ...args], {
    env: userEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stderr, stdout })));
}

/** Exit 1, and what it printed names `variable` with nothing of a stack trace. */
function expectReadableFailure(exit: Exit, variable: string) {
  expect(exit.code).toBe(1);
  expect(exit.stderr).toContain(variable);
  expect(exit.stderr).not.toMatch(/^\s+at /m);
  expect(exit.stderr).not.toContain('undefined');
  // One line: the problem and its fix.
  expect(exit.stderr.trim().split('\n')).toHaveLength(1);
}

const ready = (origin: string, timeoutMs: number) =>
  eventually(
    () =>
      fetch(`${origin}/health/ready`).then(
        (r) => (r.ok ? true : undefined),
        () => undefined,
      ),
    timeoutMs,
  );

describe('start-up errors a person can read', () => {
  const withDb = (env: Record<string, string>) => ({ DATABASE_URL: process.env.E2E_DATABASE_URL!, ...env });

  it.each([
    ['TRUSTED_PROXIES', { AUTH_MODE: 'header', TRUSTED_PROXIES: 'banana' }],
    ['AGENTS_CONFIG', { AGENTS_CONFIG: '/no/such/agents.json' }],
    ['AGENT_ASSISTANT_MODEL', { AGENT_ASSISTANT_MODEL: 'not a model' }],
    ['AGENT_NOBODY_MODEL', { AGENT_NOBODY_MODEL: 'openai/gpt-4o-mini' }],
    ['DEFAULT_AGENT_ID', { DEFAULT_AGENT_ID: 'nobody' }],
    ['CORS_ORIGINS', { CORS_ORIGINS: 'not an origin' }],
    ['OPENAI_API_KEY', { MODEL: 'openai/gpt-4o-mini' }],
    ['ANTHROPIC_API_KEY', { MODEL: 'anthropic/claude-haiku-4-5' }],
    ['OPENAI_API_KEY', { AGENT_CALCULATOR_MODEL: 'openai/gpt-4o-mini' }],
  ])('a bad %s stops the service with one line naming it, no stack trace', async (variable, env) => {
    const port = await freePort();
    expectReadableFailure(await runToExit(MAIN, withDb({ PORT: String(port), ...env })), variable);
  });

  it('a busy port names the port and PORT', async () => {
    const server: Server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const { port } = server.address() as { port: number };
    try {
      const exit = await runToExit(MAIN, withDb({ HOST: '127.0.0.1', PORT: String(port) }));
      expectReadableFailure(exit, 'PORT');
      expect(exit.stderr).toContain(`port ${port} on 127.0.0.1 is in use`);
    } finally {
      server.close();
    }
  });
});

describe('the embedded Postgres (no DATABASE_URL)', () => {
  let dir: string;
  let pgPort: number;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'io-bridge-life-'));
    // As root, Postgres runs as the `postgres` user, who must reach the data directory.
    chmodSync(dir, 0o755);
    pgPort = await freePort();
  });
  afterAll(() => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const embedded = (port: number) => ({
    PORT: String(port),
    HOST: '127.0.0.1',
    EMBEDDED_PG_DIR: join(dir, 'pg'),
    EMBEDDED_PG_PORT: String(pgPort),
    SHUTDOWN_GRACE_MS: '1500',
  });
  /**
   * `npm run start:prod` (what `npm start` runs once it has built), or the built service itself, in a
   * process group of its own as a terminal runs a command.
   */
  const start = (port: number, viaNpm: boolean) => {
    const [command, args] = viaNpm ? ['npm', ['run', '--silent', 'start:prod']] : [process.execPath, [MAIN]];
    const child = spawn(command, args, {
      cwd: join(__dirname, '..', '..'),
      env: userEnv(embedded(port)),
      stdio: 'ignore',
      detached: true,
    });
    children.push(child);
    return child;
  };
  /** Resolves once the service no longer answers and its embedded Postgres has stopped (no postmaster.pid). */
  const gone = (origin: string) =>
    eventually(
      () =>
        fetch(`${origin}/health/live`).then(
          () => undefined,
          () => (existsSync(join(dir, 'pg', 'postmaster.pid')) ? undefined : true),
        ),
      30_000,
    );

  it('Ctrl-C with a live run: the run ends RUN_ERROR SHUTTING_DOWN, exit 0, recorded as such; a second instance and migrations say why they cannot start', async () => {
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const child = start(port, true);
    // The first start runs initdb: slow.
    await ready(origin, 90_000);

    // A second service, and the migration commands, on the same data directory while this one runs.
    const second = await runToExit(MAIN, embedded(await freePort()));
    expectReadableFailure(second, 'EMBEDDED_PG_DIR');
    expect(second.stderr).toContain('in use');
    expectReadableFailure(await runToExit(MIGRATE, embedded(await freePort())), 'EMBEDDED_PG_DIR');

    const input = runInput('/slow 1000 a b c d e f g h i j');
    const live = await openRun(`${origin}/io-bridge/run`, input);
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
    // Ctrl-C: the terminal signals the whole foreground process group, npm and the service alike.
    process.kill(-child.pid!, 'SIGINT');

    const frames = await live.done;
    assertStreamRules(frames, input);
    expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'SHUTTING_DOWN' });
    // npm exits by the signal; the service drains, closes and stops its database after it.
    await gone(origin);

    // `migration:show` sees the database the service used: every migration applied.
    const show = await runToExit(MIGRATE, embedded(await freePort()), ['show']);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/^\[X\] CreateRuns\d+$/m);
    expect(show.stdout).not.toContain('[ ]');

    // Started again on the same data: the run was recorded as ended by the shutdown, not INTERRUPTED.
    const again = start(port, false);
    const againExited = new Promise<number | null>((r) => again.once('exit', (code) => r(code)));
    await ready(origin, 30_000);
    const client = new Client(`postgres://postgres:postgres@127.0.0.1:${pgPort}/iobridge`);
    await client.connect();
    try {
      const row = await client.query('SELECT status, error_code FROM runs WHERE id = $1', [input.runId]);
      expect(row.rows[0]).toEqual({ status: 'error', error_code: 'SHUTTING_DOWN' });
    } finally {
      await client.end();
    }
    process.kill(-again.pid!, 'SIGTERM');
    expect(await againExited).toBe(0);
  }, 180_000);
});
