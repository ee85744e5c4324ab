import { AppConfig, ConfigError, loadConfig } from './config';

/** The error loadConfig throws for `env`, or a failure when it throws none. */
function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

/** The variable names a ConfigError message lists, one `  NAME: reason` line each. */
const namedVariables = (error: Error): string[] =>
  [...error.message.matchAll(/^(?: {2}|Invalid configuration: )([A-Z_]+): /gm)].map((m) => m[1]).sort();

const DEFAULTS: AppConfig = {
  env: 'development',
  host: '127.0.0.1',
  port: 3000,
  prefix: '/io-bridge',
  logLevel: 'log',
  database: {
    url: undefined,
    poolSize: 10,
    embeddedDir: '.data/postgres',
    embeddedPort: 54329,
    migrationsRun: true,
    timeouts: { connectMs: 5000, statementMs: 10_000, queryMs: 12_000, idleInTransactionMs: 15_000 },
  },
  model: {
    id: 'scripted',
    openaiBaseUrl: undefined,
    openaiApiKey: undefined,
    retries: 2,
    backoffMs: 500,
    firstTokenTimeoutMs: 120_000,
    idleTimeoutMs: 60_000,
    contextTokens: 128_000,
  },
  heartbeatMs: 15_000,
  limits: {
    maxBodyBytes: 4 * 1024 * 1024,
    maxMessages: 1000,
    maxTools: 128,
    maxContext: 128,
    maxContentParts: 64,
    maxForwardedPropsKeys: 1000,
    maxJsonValues: 20_000,
    maxJsonDepth: 64,
    maxStringLength: 1_000_000,
    maxSteps: 10,
  },
  fairShare: { activeRunsPerOwner: 20, readersPerOwner: 20, readersPerRun: 10 },
  frontendToolTimeoutMs: 300_000,
  tools: { timeoutMs: 60_000, maxResultBytes: 131_072 },
  clientProtocol: 'io-intelligence',
  approvalTtlMs: 86_400_000,
  runLeaseMs: 20_000,
  runMaxAttempts: 3,
  runParkAfterMs: 0,
  runQueueWaitMs: 60_000,
  lastMessages: 40,
  modelMaxMessages: 100,
  runEvents: { retentionMs: 900_000, maxQueuedBytes: 1024 * 1024, writeTimeoutMs: 30_000 },
  disconnectGrace: { defaultMs: 0, maxMs: 600_000 },
  storeAllRuns: false,
  ceilings: {
    maxTokens: 16_384,
    maxSteps: 10,
    maxRetries: 5,
    maxLastMessages: 1000,
    maxDisconnectGraceMs: 600_000,
  },
  agentsConfigPath: undefined,
  agentsConfigPollMs: 2_000,
  mcpConnectWaitMs: 10_000,
  mastraEntry: undefined,
  defaultAgentId: undefined,
  agentEnv: {},
  shutdownGraceMs: 20_000,
  corsOrigins: [],
  rateLimitPerMinute: 120,
  auth: {
    mode: 'none',
    oidcIssuer: undefined,
    oidcAudience: undefined,
    oidcJwksUri: undefined,
    oidcClientId: undefined,
    resourceIdClaim: 'sub',
    contextClaims: ['sub', 'name', 'email', 'preferred_username'],
    adminRoleClaim: 'roles',
    adminRole: undefined,
    clockToleranceS: 5,
    header: 'x-auth-request-user',
    headerPercentDecoding: false,
    trustedProxies: [],
  },
  tracing: { url: undefined, serviceName: 'io-bridge', serviceVersion: '0.1.0' },
  playground: { enabled: true },
  budgets: { tokens: undefined, windowMs: 86_400_000 },
};

describe('loadConfig', () => {
  describe('defaults', () => {
    it('an empty environment gives the documented defaults', () => {
      expect(loadConfig({})).toEqual(DEFAULTS);
    });

    it('empty and undefined values count as unset', () => {
      expect(loadConfig({ PORT: '', MODEL: '', DATABASE_URL: undefined, IO_BRIDGE_PREFIX: '' })).toEqual(
        DEFAULTS,
      );
    });

    it('ignores variables it does not know', () => {
      expect(loadConfig({ PATH: '/usr/bin', SOMETHING_ELSE: '1' })).toEqual(DEFAULTS);
    });
  });

  describe('tracing (OpenTelemetry variables)', () => {
    it('sends traces to <OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces, or to the traces endpoint as given', () => {
      expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing.url).toBe(
        'http://collector:4318/v1/traces',
      );
      const both = loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4318/custom',
        OTEL_SERVICE_NAME: 'bridge-eu',
      }).tracing;
      expect(both).toMatchObject({ url: 'http://traces:4318/custom', serviceName: 'bridge-eu' });
    });

    it('is off with OTEL_SDK_DISABLED=true, and refuses an endpoint that is not a URL', () => {
      expect(
        loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).tracing.url,
      ).toBeUndefined();
      expect(namedVariables(configError({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector' }))).toEqual([
        'OTEL_EXPORTER_OTLP_ENDPOINT',
      ]);
    });
  });

  describe('values it accepts', () => {
    it('parses numbers, booleans and strings into the typed configuration', () => {
      const config = loadConfig({
        NODE_ENV: 'production',
        HOST: '0.0.0.0',
        PORT: '8080',
        IO_BRIDGE_PREFIX: '/api/v1',
        LOG_LEVEL: 'debug',
        DATABASE_URL: 'postgresql://u:p@db:5432/io',
        DATABASE_POOL_SIZE: '25',
        MIGRATIONS_RUN: 'no',
        DATABASE_CONNECT_TIMEOUT_MS: '1000',
        DATABASE_STATEMENT_TIMEOUT_MS: '2000',
        DATABASE_QUERY_TIMEOUT_MS: '2500',
        DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '3000',
        MODEL: 'openai/gpt-4o-mini',
        OPENAI_API_KEY: 'sk-test',
        DEFAULT_AGENT_ID: 'helper_2',
        HEARTBEAT_MS: '5000',
        MAX_BODY_BYTES: '2048',
        MAX_MESSAGES: '50',
        MAX_TOOLS: '0',
        MAX_CONTEXT: '5',
        MAX_STEPS: '3',
        FRONTEND_TOOL_TIMEOUT_MS: '1000',
        CLIENT_PROTOCOL: 'ag-ui',
        APPROVAL_TTL_MS: '60000',
        RUN_LEASE_MS: '300',
        LAST_MESSAGES: '7',
        MODEL_MAX_MESSAGES: '250',
        STORE_ALL_RUNS: 'true',
        AUTH_MODE: 'jwt',
        OIDC_ISSUER: 'https://idp.example.com/realms/acme',
        OIDC_AUDIENCE: 'io-bridge',
        OIDC_JWKS_URI: 'https://idp.example.com/realms/acme/certs',
        RESOURCE_ID_CLAIM: 'preferred_username',
        ADMIN_ROLE_CLAIM: 'realm_access.roles',
        REQUEST_CONTEXT_CLAIMS: ' sub, department ,realm_access.roles,',
        ADMIN_ROLE: 'io-admin',
        JWT_CLOCK_TOLERANCE_S: '30',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector:4318',
        OTEL_SERVICE_NAME: 'io-bridge-prod',
      });
      expect(config).toEqual({
        env: 'production',
        host: '0.0.0.0',
        port: 8080,
        prefix: '/api/v1',
        logLevel: 'debug',
        database: {
          url: 'postgresql://u:p@db:5432/io',
          poolSize: 25,
          embeddedDir: '.data/postgres',
          embeddedPort: 54329,
          migrationsRun: false,
          timeouts: { connectMs: 1000, statementMs: 2000, queryMs: 2500, idleInTransactionMs: 3000 },
        },
        model: {
          id: 'openai/gpt-4o-mini',
          openaiBaseUrl: undefined,
          openaiApiKey: 'sk-test',
          retries: 2,
          backoffMs: 500,
          firstTokenTimeoutMs: 120_000,
          idleTimeoutMs: 60_000,
          contextTokens: 128_000,
        },
        defaultAgentId: 'helper_2',
        heartbeatMs: 5000,
        limits: {
          ...DEFAULTS.limits,
          maxBodyBytes: 2048,
          maxMessages: 50,
          maxTools: 0,
          maxContext: 5,
          maxSteps: 3,
        },
        fairShare: DEFAULTS.fairShare,
        frontendToolTimeoutMs: 1000,
        tools: { timeoutMs: 60_000, maxResultBytes: 131_072 },
        clientProtocol: 'ag-ui',
        approvalTtlMs: 60_000,
        runLeaseMs: 300,
        runMaxAttempts: 3,
        runParkAfterMs: 0,
        runQueueWaitMs: 60_000,
        lastMessages: 7,
        modelMaxMessages: 250,
        runEvents: {
          retentionMs: 900_000,
          maxQueuedBytes: 1024 * 1024,
          writeTimeoutMs: 30_000,
        },
        disconnectGrace: { defaultMs: 0, maxMs: 600_000 },
        storeAllRuns: true,
        ceilings: {
          maxTokens: 16_384,
          maxSteps: 3,
          maxRetries: 5,
          maxLastMessages: 1000,
          maxDisconnectGraceMs: 600_000,
        },
        agentsConfigPath: undefined,
        agentsConfigPollMs: 2_000,
        mcpConnectWaitMs: 10_000,
        agentEnv: {},
        shutdownGraceMs: 20_000,
        corsOrigins: [],
        rateLimitPerMinute: 120,
        auth: {
          mode: 'jwt',
          oidcIssuer: 'https://idp.example.com/realms/acme',
          oidcAudience: 'io-bridge',
          oidcJwksUri: 'https://idp.example.com/realms/acme/certs',
          resourceIdClaim: 'preferred_username',
          adminRoleClaim: 'realm_access.roles',
          contextClaims: ['sub', 'department', 'realm_access.roles'],
          adminRole: 'io-admin',
          clockToleranceS: 30,
          header: 'x-auth-request-user',
          headerPercentDecoding: false,
          trustedProxies: [],
        },
        tracing: {
          url: 'http://otel-collector:4318/v1/traces',
          serviceName: 'io-bridge-prod',
          serviceVersion: '0.1.0',
        },
        playground: { enabled: false },
        budgets: { tokens: undefined, windowMs: 86_400_000 },
      });
    });

    it('serves the playground unless NODE_ENV=production, and PLAYGROUND_ENABLED decides either way', () => {
      expect(loadConfig({}).playground.enabled).toBe(true);
      expect(loadConfig({ NODE_ENV: 'production' }).playground.enabled).toBe(false);
      expect(loadConfig({ NODE_ENV: 'production', PLAYGROUND_ENABLED: 'true' }).playground.enabled).toBe(
        true,
      );
      expect(loadConfig({ PLAYGROUND_ENABLED: 'false' }).playground.enabled).toBe(false);
      expect(namedVariables(configError({ PLAYGROUND_ENABLED: 'maybe' }))).toEqual(['PLAYGROUND_ENABLED']);
    });

    it('AUTH_MODE=jwt needs only OIDC_ISSUER and OIDC_AUDIENCE (the JWKS comes from discovery)', () => {
      const { auth } = loadConfig({
        AUTH_MODE: 'jwt',
        OIDC_ISSUER: 'https://login.example.com/tenant/v2.0',
        OIDC_AUDIENCE: 'api://io-bridge',
      });
      expect(auth).toMatchObject({
        mode: 'jwt',
        oidcIssuer: 'https://login.example.com/tenant/v2.0',
        oidcAudience: 'api://io-bridge',
        oidcJwksUri: undefined,
        resourceIdClaim: 'sub',
      });
    });

    it('AUTH_MODE=header lower-cases AUTH_HEADER and splits TRUSTED_PROXIES on commas, trimmed', () => {
      const { auth } = loadConfig({
        AUTH_MODE: 'header',
        AUTH_HEADER: 'X-Forwarded-User',
        TRUSTED_PROXIES: ' 10.0.0.0/8, fd00::/8 ,,192.168.1.7 ',
      });
      expect(auth).toMatchObject({
        mode: 'header',
        header: 'x-forwarded-user',
        headerPercentDecoding: false,
        trustedProxies: ['10.0.0.0/8', 'fd00::/8', '192.168.1.7'],
      });
    });

    it('AUTH_HEADER_PERCENT_DECODING is off unless set, and a boolean', () => {
      const header = { AUTH_MODE: 'header', TRUSTED_PROXIES: '10.0.0.0/8' };
      expect(loadConfig(header).auth.headerPercentDecoding).toBe(false);
      expect(loadConfig({ ...header, AUTH_HEADER_PERCENT_DECODING: 'true' }).auth.headerPercentDecoding).toBe(
        true,
      );
      expect(namedVariables(configError({ ...header, AUTH_HEADER_PERCENT_DECODING: 'maybe' }))).toEqual([
        'AUTH_HEADER_PERCENT_DECODING',
      ]);
    });

    it.each(['0', '300'])('JWT_CLOCK_TOLERANCE_S=%s is accepted', (value) => {
      expect(loadConfig({ JWT_CLOCK_TOLERANCE_S: value }).auth.clockToleranceS).toBe(Number(value));
    });

    it.each([
      ['true', true],
      ['1', true],
      ['yes', true],
      ['false', false],
      ['0', false],
      ['no', false],
    ])('MIGRATIONS_RUN=%s is %s', (value, expected) => {
      expect(loadConfig({ MIGRATIONS_RUN: value }).database.migrationsRun).toBe(expected);
    });

    it.each([
      ['0', 0],
      ['65535', 65535],
    ])('PORT=%s is accepted', (value, expected) => {
      expect(loadConfig({ PORT: value }).port).toBe(expected);
    });

    it("IO_BRIDGE_PREFIX='/' mounts the routes at the root (empty prefix)", () => {
      expect(loadConfig({ IO_BRIDGE_PREFIX: '/' }).prefix).toBe('');
    });

    it.each(['/io', '/a/b-c_d.e~f'])('IO_BRIDGE_PREFIX=%s is kept as it is', (prefix) => {
      expect(loadConfig({ IO_BRIDGE_PREFIX: prefix }).prefix).toBe(prefix);
    });

    it.each(['postgres://localhost/io', 'postgresql://u@h:1/d'])('DATABASE_URL=%s is accepted', (url) => {
      expect(loadConfig({ DATABASE_URL: url }).database.url).toBe(url);
    });

    it.each(['scripted', 'openai/gpt-4o-mini', 'anthropic/claude-sonnet-4-5', 'ollama/llama3.1:8b'])(
      'MODEL=%s is accepted',
      (model) => {
        expect(loadConfig({ MODEL: model }).model.id).toBe(model);
      },
    );

    it.each([
      ['*', '*'],
      [' * ', '*'],
      ['https://app.example.com', ['https://app.example.com']],
      [
        ' https://app.example.com, http://localhost:4200 ,,http://[::1]:8080',
        ['https://app.example.com', 'http://localhost:4200', 'http://[::1]:8080'],
      ],
    ])('CORS_ORIGINS=%j is %j', (value, expected) => {
      expect(loadConfig({ CORS_ORIGINS: value }).corsOrigins).toEqual(expected);
    });

    it('OPENAI_BASE_URL with a provider/model MODEL configures an OpenAI-compatible server', () => {
      const config = loadConfig({ MODEL: 'ollama/llama3.1', OPENAI_BASE_URL: 'http://localhost:11434/v1' });
      expect(config.model).toEqual({
        id: 'ollama/llama3.1',
        openaiBaseUrl: 'http://localhost:11434/v1',
        openaiApiKey: undefined,
        retries: 2,
        backoffMs: 500,
        firstTokenTimeoutMs: 120_000,
        idleTimeoutMs: 60_000,
        contextTokens: 128_000,
      });
    });
  });

  describe('values it refuses, naming the variable', () => {
    it.each(['abc', '70000', '-1', '3000.5', 'true'])('PORT=%s', (value) => {
      const error = configError({ PORT: value });
      expect(namedVariables(error)).toEqual(['PORT']);
      expect(error.message).toMatch(/^Invalid configuration: PORT: [^\n]+$/);
    });

    it.each(['mysql://localhost/io', 'localhost:5432', 'http://db/io', ' postgres://x'])(
      'DATABASE_URL=%s',
      (url) => {
        const error = configError({ DATABASE_URL: url });
        expect(namedVariables(error)).toEqual(['DATABASE_URL']);
        expect(error.message).toContain('must be a postgres:// URL');
      },
    );

    it.each(['gpt-4o', 'OpenAI/gpt-4o', 'openai/', '/gpt', 'openai/gpt 4o', 'Scripted'])(
      'MODEL=%s',
      (model) => {
        const error = configError({ MODEL: model });
        expect(namedVariables(error)).toEqual(['MODEL']);
        expect(error.message).toContain("must be 'scripted' or a provider/model id");
      },
    );

    it.each(['io-bridge', '/io-bridge/', '//', '/a b', '/ü', 'https://x/y'])(
      'IO_BRIDGE_PREFIX=%s',
      (prefix) => {
        const error = configError({ IO_BRIDGE_PREFIX: prefix });
        expect(namedVariables(error)).toEqual(['IO_BRIDGE_PREFIX']);
        expect(error.message).toContain('must start with / and not end with /');
      },
    );

    it.each([
      ['LOG_LEVEL', 'trace'],
      ['MIGRATIONS_RUN', 'maybe'],
      ['DATABASE_POOL_SIZE', '0'],
      ['MAX_STEPS', '101'],
      ['HEARTBEAT_MS', '5'],
      ['OPENAI_BASE_URL', 'not a url'],
      ['DEFAULT_AGENT_ID', 'has space'],
      ['RUN_LEASE_MS', '299'],
      ['LAST_MESSAGES', '-1'],
      ['MODEL_MAX_MESSAGES', '0'],
      ['FRONTEND_TOOL_TIMEOUT_MS', '0'],
      ['DATABASE_CONNECT_TIMEOUT_MS', '99'],
      ['DATABASE_STATEMENT_TIMEOUT_MS', 'soon'],
      ['DATABASE_QUERY_TIMEOUT_MS', '0'],
      ['DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS', '99'],
      ['AUTH_MODE', 'oidc'],
      ['OIDC_ISSUER', 'idp.example.com'],
      ['OIDC_JWKS_URI', 'not a url'],
      ['JWT_CLOCK_TOLERANCE_S', '301'],
      ['JWT_CLOCK_TOLERANCE_S', '-1'],
      ['AUTH_HEADER', 'x_user'],
      ['AUTH_HEADER', 'x user'],
    ])('%s=%s', (name, value) => {
      expect(namedVariables(configError({ MODEL: 'openai/gpt-4o-mini', [name]: value }))).toEqual([name]);
    });

    it.each([
      ['app.example.com', 'is not an origin such as https://app.example.com'],
      ['ftp://files.example.com', 'is not an origin'],
      ['https://app.example.com/', 'did you mean https://app.example.com?'],
      ['https://app.example.com/chat', 'did you mean https://app.example.com?'],
      ['https://App.Example.com', 'did you mean https://app.example.com?'],
      ['https://app.example.com:443', 'did you mean https://app.example.com?'],
      ['https://*.example.com', 'wildcards inside an origin are not supported'],
      ['*,https://app.example.com', "'*' allows any origin: use it alone"],
      ['https://ok.example.com,null', "'null' is not an origin"],
    ])('CORS_ORIGINS=%s', (value, reason) => {
      const error = configError({ CORS_ORIGINS: value });
      expect(namedVariables(error)).toEqual(['CORS_ORIGINS']);
      expect(error.message).toContain(reason);
    });

    it('names every bad variable at once', () => {
      const error = configError({
        PORT: 'x',
        DATABASE_URL: 'mysql://h/d',
        MODEL: 'gpt',
        IO_BRIDGE_PREFIX: 'p/',
      });
      expect(namedVariables(error)).toEqual(['DATABASE_URL', 'IO_BRIDGE_PREFIX', 'MODEL', 'PORT']);
    });

    it.each([{}, { MODEL: 'scripted' }])(
      'OPENAI_BASE_URL with the scripted model (%j) is refused: it needs a provider/model MODEL',
      (model) => {
        const error = configError({ ...model, OPENAI_BASE_URL: 'http://localhost:11434/v1' });
        expect(namedVariables(error)).toEqual(['MODEL']);
        expect(error.message).toContain('OPENAI_BASE_URL needs MODEL=<provider>/<model>');
      },
    );

    it.each([
      [{ AUTH_MODE: 'jwt', OIDC_AUDIENCE: 'io-bridge' }, 'OIDC_ISSUER', 'required with AUTH_MODE=jwt'],
      [
        { AUTH_MODE: 'jwt', OIDC_ISSUER: 'https://idp.example.com' },
        'OIDC_AUDIENCE',
        'required with AUTH_MODE=jwt',
      ],
      [{ AUTH_MODE: 'header' }, 'TRUSTED_PROXIES', 'required with AUTH_MODE=header'],
      [
        { DATABASE_STATEMENT_TIMEOUT_MS: '5000', DATABASE_QUERY_TIMEOUT_MS: '4000' },
        'DATABASE_QUERY_TIMEOUT_MS',
        'must be at least DATABASE_STATEMENT_TIMEOUT_MS',
      ],
    ])('%j is refused, naming %s', (env, name, reason) => {
      const error = configError(env);
      expect(namedVariables(error)).toEqual([name]);
      expect(error.message).toContain(reason);
    });
  });
});
