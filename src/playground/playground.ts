import fastifyStatic from '@fastify/static';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply } from 'fastify';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where `npm run build` writes the bundled page (playground/build.mts), beside dist/src. */
export const PLAYGROUND_DIR = join(__dirname, '..', '..', 'playground');

/** The OIDC provider the page signs in with (authorization code with PKCE), when AUTH_MODE=jwt names a client. */
export type PlaygroundSignIn = { issuer: string; clientId: string };

const attribute = (value: string) => value.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page, with the API's route prefix and the sign-in provider written in, or undefined when the bundle was not built. */
export function playgroundPage(
  prefix: string,
  dir = PLAYGROUND_DIR,
  signIn?: PlaygroundSignIn,
): string | undefined {
  const file = join(dir, 'index.html');
  if (!existsSync(file)) return undefined;
  return readFileSync(file, 'utf8')
    .replace('%API%', attribute(prefix))
    .replace('%OIDC%', signIn ? attribute(JSON.stringify(signIn)) : '');
}

/**
 * Serves the playground (docs/playground.md) at /playground outside the API prefix: the page, and its
 * hashed assets pre-compressed and cached for good. Plain Fastify routes, so no guard or throttle
 * applies: the page holds no data, and every API call it makes is authenticated as usual.
 */
export async function servePlayground(
  app: NestFastifyApplication,
  prefix: string,
  signIn?: PlaygroundSignIn,
): Promise<boolean> {
  const page = playgroundPage(prefix, PLAYGROUND_DIR, signIn);
  if (page === undefined) return false;
  const fastify = app.getHttpAdapter().getInstance();
  const sendPage = (_request: unknown, reply: FastifyReply) =>
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(page);
  fastify.get('/playground', sendPage);
  fastify.get('/playground/', sendPage);
  await app.register(fastifyStatic, {
    root: PLAYGROUND_DIR,
    prefix: '/playground/',
    decorateReply: false,
    index: false,
    preCompressed: true,
    // Every asset but the page is named by its content hash.
    immutable: true,
    maxAge: '365d',
    allowedPath: (path) => path !== '/index.html' && !path.startsWith('/index.html.'),
  });
  return true;
}
