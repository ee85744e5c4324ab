import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DataSource } from 'typeorm';
import { buildInfo } from '../common/build-info';

type PgPool = { totalCount: number; idleCount: number; waitingCount: number };

/** The service's Prometheus metrics, in a registry of its own (several apps can share a process in tests). */
@Injectable()
export class Metrics implements OnModuleInit {
  readonly registry = new Registry();

  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration (for a run: until its stream ends)',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });

  /** Responses the runs controller times itself (to the stream's end): the onResponse hook skips them. */
  readonly timedByController = new WeakSet<object>();

  readonly runDuration = new Histogram({
    name: 'io_bridge_run_duration_seconds',
    help: 'From RUN_STARTED to the recorded end, by end status and agent',
    labelNames: ['status', 'agent'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    registers: [this.registry],
  });

  readonly activeRuns = new Gauge({
    name: 'io_bridge_active_runs',
    help: 'Runs streaming on this instance',
    registers: [this.registry],
  });

  readonly runOutcomes = new Counter({
    name: 'io_bridge_run_outcomes_total',
    help: 'Ended runs by status and error code (code "none" for a finished run)',
    labelNames: ['status', 'code'] as const,
    registers: [this.registry],
  });

  readonly timeToFirstEvent = new Histogram({
    name: 'io_bridge_time_to_first_event_seconds',
    help: 'From the run request to RUN_STARTED written',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [this.registry],
  });

  readonly frontendToolWait = new Histogram({
    name: 'io_bridge_frontend_tool_wait_seconds',
    help: 'How long runs waited for frontend tool results',
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300],
    registers: [this.registry],
  });

  readonly toolResultTimeouts = new Counter({
    name: 'io_bridge_tool_result_timeouts_total',
    help: 'Runs ended because a frontend tool result did not come in time',
    registers: [this.registry],
  });

  readonly streamJoins = new Counter({
    name: 'io_bridge_run_stream_joins_total',
    help: 'Streams rejoining a run (GET /runs/:runId/events), by where they read it: local (the run is here), follow (its storage, from another instance or ended)',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });

  readonly streamsClosed = new Counter({
    name: 'io_bridge_stream_closed_total',
    help: 'Streams the service closed before their end, by reason (write_timeout: the socket took nothing for STREAM_WRITE_TIMEOUT_MS; storage_failed: the stored events could not be read after the headers were sent)',
    labelNames: ['reason'],
    registers: [this.registry],
  });

  readonly streamCatchUps = new Counter({
    name: 'io_bridge_run_stream_catchups_total',
    help: 'Times a stream fell too far behind a live run (STREAM_MAX_QUEUED_BYTES) and was served from storage',
    registers: [this.registry],
  });

  readonly modelTokens = new Counter({
    name: 'io_bridge_model_tokens_total',
    help: 'Tokens the model providers reported, by agent, configured model and kind (input, output)',
    labelNames: ['agent', 'model', 'kind'] as const,
    registers: [this.registry],
  });

  readonly modelFirstToken = new Histogram({
    name: 'io_bridge_model_time_to_first_token_seconds',
    help: "From a provider call's start (its retries included) to its first content",
    labelNames: ['agent', 'model'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });

  readonly modelCallDuration = new Histogram({
    name: 'io_bridge_model_call_duration_seconds',
    help: 'Provider calls from start to end, by outcome (ok, error, cancelled)',
    labelNames: ['agent', 'model', 'outcome'] as const,
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
  });

  readonly modelErrors = new Counter({
    name: 'io_bridge_model_errors_total',
    help: 'Provider calls that failed, by error code (after their retries)',
    labelNames: ['agent', 'model', 'code'] as const,
    registers: [this.registry],
  });

  readonly modelRetries = new Counter({
    name: 'io_bridge_model_retries_total',
    help: 'Provider requests retried, by the code of the failure retried',
    labelNames: ['agent', 'model', 'code'] as const,
    registers: [this.registry],
  });

  readonly mcpToolCalls = new Counter({
    name: 'io_bridge_mcp_tool_calls_total',
    help: "Calls of MCP servers' tools, by server, tool and outcome (ok, error)",
    labelNames: ['server', 'tool', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly mcpToolDuration = new Histogram({
    name: 'io_bridge_mcp_tool_duration_seconds',
    help: 'How long an MCP tool call took, by server and tool',
    labelNames: ['server', 'tool'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });

  readonly mcpServerUp = new Gauge({
    name: 'io_bridge_mcp_server_up',
    help: 'Whether an MCP server of AGENTS_CONFIG is connected (1) or not (0)',
    labelNames: ['server'] as const,
    registers: [this.registry],
  });

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  onModuleInit(): void {
    collectDefaultMetrics({ register: this.registry });
    const pool = () => (this.dataSource.driver as unknown as { master?: PgPool }).master;
    // The pool's connections by state, which add up: sum() is the pool's size (no "total" beside them).
    new Gauge({
      name: 'io_bridge_db_pool_connections',
      help: 'Database pool connections by state: active (lent to a query) or idle',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        const p = pool();
        if (!p) return;
        this.set({ state: 'active' }, p.totalCount - p.idleCount);
        this.set({ state: 'idle' }, p.idleCount);
      },
    });
    new Gauge({
      name: 'io_bridge_db_pool_waiting_requests',
      help: 'Queries waiting for a free database pool connection',
      registers: [this.registry],
      collect() {
        const p = pool();
        if (p) this.set(p.waitingCount);
      },
    });
    const build = buildInfo();
    new Gauge({
      name: 'io_bridge_build_info',
      help: 'Always 1: the version, the commit built ("unknown" when not known) and the Node.js version running',
      labelNames: ['version', 'commit', 'node_version'] as const,
      registers: [this.registry],
    }).set({ version: build.version, commit: build.commit, node_version: build.node }, 1);
  }
}
