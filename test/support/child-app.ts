import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { eventually } from './app';

const MAIN = join(__dirname, '..', '..', 'dist', 'src', 'main.js');

export type ChildApp = { child: ChildProcess; baseUrl: string; runUrl: string; kill: () => void };

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * The built service (`dist/`, `npm test` builds it first) in a process of its own, on the e2e
 * database: for what an in-process app cannot show (a replica that dies, an event loop that stalls).
 */
export async function startChildApp(env: Record<string, string> = {}): Promise<ChildApp> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN], {
    env: {
      ...process.env,
      DATABASE_URL: process.env.E2E_DATABASE_URL,
      PORT: String(port),
      LOG_LEVEL: 'error',
      ...env,
    },
    stdio: 'ignore',
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  await eventually(
    () =>
      fetch(`${baseUrl}/io-bridge/runs/none`).then(
        (r) => (r.status === 404 ? true : undefined),
        () => undefined,
      ),
    20_000,
  );
  return { child, baseUrl, runUrl: `${baseUrl}/io-bridge/run`, kill: () => child.kill('SIGKILL') };
}
