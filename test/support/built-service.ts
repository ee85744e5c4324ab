import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename, dirname, join } from 'node:path';

/** The repository: above test/support, or above dist-bench/test/support when the bench's build runs this file. */
const ROOT = ((up) => (basename(up) === 'dist-bench' ? dirname(up) : up))(join(__dirname, '..', '..'));

/** The program users run: what `nest build` wrote, started as `node dist/src/main.js`. */
export const MAIN = join(ROOT, 'dist', 'src', 'main.js');

export type BuiltService = {
  /** `http://127.0.0.1:<port>`: health, metrics and docs live here. */
  origin: string;
  /** The API: origin plus the route prefix. */
  base: string;
  /** What the process wrote to stdout and stderr so far (the latest 256 KiB). */
  output: () => string;
  /** SIGTERM, then SIGKILL after 10 s: the service drains as in a rollout. */
  stop: () => Promise<void>;
  /** SIGKILL: the replica dies with nothing written after. */
  kill: () => void;
  /** SIGSTOP: the replica freezes as a long GC pause or a starved CPU would (its timers, sockets, everything). */
  pause: () => void;
  /** SIGCONT: a paused replica goes on where it was. */
  resume: () => void;
  /** The process id (the bench reads the replica's CPU time from /proc). */
  pid: number;
};

/** A port nobody listens on now: the kernel's pick for port 0, released at once. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/**
 * Starts the built service on a free port (the e2e database unless `env` names another) and resolves
 * once `/health/ready` answers 200. `main` is another build's entry point (the bench compares builds,
 * the host app's test starts examples/host-nest-app), `ready` where and how readiness is asked;
 * `onOutput` gets all it writes (`output()` keeps only the latest 256 KiB).
 */
export async function startBuiltService(
  env: Record<string, string> = {},
  readyTimeoutMs = 60_000,
  main = MAIN,
  onOutput?: (chunk: Buffer) => void,
  ready: { path: string; headers?: Record<string, string> } = { path: '/health/ready' },
): Promise<BuiltService> {
  if (!existsSync(main))
    throw new Error(`${main} is missing: run \`npm run build\` (npm test does it first)`);
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const prefix = '/io-bridge';
  const child = spawn(process.execPath, [main], {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      IO_BRIDGE_PREFIX: prefix,
      AUTH_MODE: 'none',
      MODEL: 'scripted',
      LOG_LEVEL: 'warn',
      ...(process.env.E2E_DATABASE_URL ? { DATABASE_URL: process.env.E2E_DATABASE_URL } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-256 * 1024);
    onOutput?.(chunk);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const stop = async () => {
    if (exited(child)) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await gone;
    clearTimeout(timer);
  };

  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (exited(child))
      throw new Error(
        `the service exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${output}`,
      );
    const isReady = await fetch(`${origin}${ready.path}`, { headers: ready.headers }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (isReady) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the service was not ready within ${readyTimeoutMs} ms:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    origin,
    base: `${origin}${prefix}`,
    output: () => output,
    stop,
    kill: () => child.kill('SIGKILL'),
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    pid: child.pid!,
  };
}
