import { createServer, Server, Socket } from 'node:net';

/**
 * A TCP proxy between the app and the e2e Postgres that a test can stop, freeze and bring back:
 * - `stop()`: every connection is closed and the port refuses new ones (a database that is down);
 * - `freeze()`: connections stay open and new ones are accepted, but no byte goes through either
 *   way (a database under SIGSTOP, or behind a network that silently drops packets);
 * - `resume()`: forwarding starts again, with what was held back (SIGCONT), and the port listens;
 *   with `forgetFrozen`, the connections that were frozen stay silent for good (a NAT or firewall
 *   that dropped them), and only new ones go through.
 */
export type DbProxy = {
  url: string;
  stop: () => Promise<void>;
  freeze: () => void;
  resume: (options?: { forgetFrozen?: boolean }) => Promise<void>;
  close: () => Promise<void>;
};

type Pair = { client: Socket; upstream: Socket };

export async function dbProxy(target: URL): Promise<DbProxy> {
  const pairs = new Set<Pair>();
  let frozen = false;
  let server: Server | undefined;
  let port = 0;

  const forward = ({ client, upstream }: Pair) => {
    client.pipe(upstream);
    upstream.pipe(client);
  };
  const hold = ({ client, upstream }: Pair) => {
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.pause();
    upstream.pause();
  };
  const accept = (client: Socket) => {
    const upstream = new Socket();
    upstream.connect(Number(target.port || 5432), target.hostname);
    const pair = { client, upstream };
    pairs.add(pair);
    for (const s of [client, upstream]) s.on('error', () => s.destroy());
    client.on('close', () => {
      upstream.destroy();
      pairs.delete(pair);
    });
    upstream.on('close', () => client.destroy());
    if (frozen) hold(pair);
    else forward(pair);
  };
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer(accept);
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as { port: number }).port;
        server = s;
        resolve();
      });
    });
  const destroyAll = () =>
    pairs.forEach(({ client, upstream }) => {
      client.destroy();
      upstream.destroy();
    });
  const stopListening = () =>
    new Promise<void>((resolve) => {
      const s = server;
      server = undefined;
      if (!s) return resolve();
      s.close(() => resolve());
      destroyAll();
    });

  await listen();
  const url = new URL(target.toString());
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    stop: stopListening,
    freeze: () => {
      frozen = true;
      pairs.forEach(hold);
    },
    resume: async ({ forgetFrozen = false } = {}) => {
      frozen = false;
      if (!forgetFrozen) pairs.forEach(forward);
      if (!server) await listen();
    },
    close: async () => {
      await stopListening();
    },
  };
}
