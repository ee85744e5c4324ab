import type { INestApplication } from '@nestjs/common';
import type { FastifyInstance } from 'fastify';
import { DocumentBuilder, OpenAPIObject, SwaggerCustomOptions, SwaggerModule } from '@nestjs/swagger';
import { buildInfo } from '../common/build-info';
import type { AppConfig } from '../config/config';
import { operationExamples } from './examples';

/** The OpenID Connect discovery document of an issuer. */
export const discoveryUrl = (issuer: string) =>
  `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;

/** Swagger UI's sign-in: OIDC authorization code with PKCE, from the issuer's discovery, when AUTH_MODE=jwt. */
const OIDC_SCHEME = 'oidc';

/** The document's security: a pasted bearer token always; in jwt mode, or a sign-in at the OIDC provider. */
function securityOf(config: AppConfig): DocumentBuilder {
  const builder = new DocumentBuilder()
    .setTitle('io-bridge')
    .setDescription(
      'io.Intelligence Agent Protocol (AG-UI) for Mastra agents. Every error is an ErrorEnvelope ' +
        '`{statusCode, code, message, details?}`. With AUTH_MODE=jwt, authorize with a bearer token or ' +
        'sign in at the OIDC provider (Authorize, then `oidc`); with AUTH_MODE=none, X-Resource-Id names the owner.',
    )
    .setVersion(buildInfo().version)
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, 'bearer');
  const issuer = config.auth.mode === 'jwt' ? config.auth.oidcIssuer : undefined;
  if (!issuer) return builder.addSecurityRequirements('bearer');
  return builder
    .addSecurity(OIDC_SCHEME, {
      type: 'openIdConnect',
      openIdConnectUrl: discoveryUrl(issuer),
      description:
        'Sign in at the OIDC provider: authorization code with PKCE. The client is OIDC_CLIENT_ID ' +
        '(a public client whose redirect URIs include this page’s /docs/oauth2-redirect.html).',
    })
    .addSecurityRequirements('bearer')
    .addSecurityRequirements(OIDC_SCHEME, ['openid']);
}

/** Sets each operation's examples (request bodies, responses, parameters), found by operationId. */
export function withExamples(doc: OpenAPIObject): OpenAPIObject {
  const all = operationExamples();
  for (const operations of Object.values(doc.paths)) {
    for (const operation of Object.values(operations)) {
      if (!operation || typeof operation !== 'object' || !('operationId' in operation)) continue;
      const examples = all[operation.operationId as string];
      if (!examples) continue;
      const body = operation.requestBody;
      if (examples.body && body && 'content' in body) {
        const media = body.content['application/json'];
        if (media) {
          delete media.example;
          media.examples = examples.body;
        }
      }
      for (const [status, named] of Object.entries(examples.responses ?? {})) {
        const response = operation.responses?.[status];
        if (!response || !('description' in response)) continue;
        for (const media of Object.values<{ example?: unknown; examples?: unknown }>(
          response.content ?? {},
        )) {
          delete media.example;
          media.examples = named;
        }
      }
      for (const parameter of operation.parameters ?? []) {
        if ('name' in parameter && examples.params && parameter.name in examples.params)
          parameter.example = examples.params[parameter.name];
      }
    }
  }
  return doc;
}

/** The OpenAPI document of the application, with its examples and security schemes. */
export function openApiDocument(app: INestApplication, config: AppConfig): OpenAPIObject {
  const doc = SwaggerModule.createDocument(app, securityOf(config).build());
  // The health routes are public (@Public() on OpsController): no token.
  for (const [path, operations] of Object.entries(doc.paths)) {
    if (!path.startsWith('/health/')) continue;
    for (const operation of Object.values(operations)) {
      if (typeof operation === 'object' && operation && 'responses' in operation) operation.security = [];
    }
  }
  return withExamples(doc);
}

/** Swagger UI's options: a fresh copy of the examples on each load, and the OIDC sign-in with PKCE. */
export function swaggerUiOptions(config: AppConfig): SwaggerCustomOptions {
  return {
    jsonDocumentUrl: 'docs-json',
    // Each load of /docs (and /docs-json) offers examples with unused ids: "Try it out" just works.
    patchDocumentOnRequest: (_req, _res, doc) => withExamples(structuredClone(doc)),
    swaggerOptions: {
      ...(config.auth.mode === 'jwt'
        ? {
            initOAuth: {
              clientId: config.auth.oidcClientId ?? '',
              scopes: ['openid'],
              usePkceWithAuthorizationCodeGrant: true,
            },
          }
        : {}),
    },
  };
}

/**
 * /docs as Swagger UI's sign-in needs it (registered after the security headers, which it amends):
 * - /docs redirects to /docs/: Swagger UI derives its OAuth redirect page from the page's folder, and
 *   /docs/oauth2-redirect.html is served where /oauth2-redirect.html is not;
 * - with AUTH_MODE=jwt, the sign-in popup keeps its opener through the provider's pages: the docs page
 *   allows popups (`same-origin-allow-popups`) and the redirect page opts out of isolation (`unsafe-none`).
 */
export function serveDocsPage(fastify: FastifyInstance, config: AppConfig): void {
  const signIn = config.auth.mode === 'jwt';
  fastify.addHook('onRequest', (request, reply, done) => {
    const at = request.url.indexOf('?');
    const path = at < 0 ? request.url : request.url.slice(0, at);
    if (path === '/docs' && (request.method === 'GET' || request.method === 'HEAD')) {
      void reply.redirect(`docs/${at < 0 ? '' : request.url.slice(at)}`, 302);
      return;
    }
    if (signIn && path.startsWith('/docs/'))
      void reply.header(
        'cross-origin-opener-policy',
        path === '/docs/oauth2-redirect.html' ? 'unsafe-none' : 'same-origin-allow-popups',
      );
    done();
  });
}
