import { Observable } from 'rxjs';
import { Span, SpanKind } from '@opentelemetry/api';
import { Metrics } from '../../ops/metrics.service';
import { ownerHash, startSpan, tracingOn, withSpan } from '../../ops/tracing';
import type { RunErrorCode } from '../../protocol/agui-events';
import type { TokenUsage } from '../../protocol/usage';
import type { RunEnd } from '../storage/runs.repository';
import type { PreparedRun } from '../prepare/run-preparer';
import { endRunSpan } from './run-ending';

/** A run's span (a child of its request's, when tracing is on) and its metrics, from its start here to its end or hand-over. */
export class RunTelemetry {
  private span: Span | undefined;
  /** When the run was held here (performance.now()), for its duration metric; 0 before. */
  private startedAt = 0;

  constructor(
    private readonly run: PreparedRun,
    private readonly metrics: Metrics,
  ) {}

  get started(): boolean {
    return this.startedAt !== 0;
  }

  /** The run's span: model and tool calls nest under it. */
  get current(): Span | undefined {
    return this.span;
  }

  start(): void {
    if (tracingOn()) {
      const { runId, threadId, principal, agent } = this.run;
      this.span = startSpan(`run ${agent.definition.id}`, SpanKind.INTERNAL, {
        'io_bridge.run.id': runId,
        'io_bridge.thread.id': threadId,
        'io_bridge.agent.id': agent.definition.id,
        'io_bridge.owner.hash': ownerHash(principal.resourceId),
      });
    }
    this.metrics.activeRuns.inc();
    this.startedAt = performance.now();
  }

  /** `source` subscribed with the run's span current. */
  inSpan<T>(source: Observable<T>): Observable<T> {
    const span = this.span;
    if (!span) return source;
    return new Observable<T>((subscriber) => withSpan(span, () => source.subscribe(subscriber)));
  }

  /** Handed over to another replica: no outcome here. */
  handedOver(): void {
    this.span?.end();
    this.metrics.activeRuns.dec();
  }

  ended(end: RunEnd, code: RunErrorCode | undefined, usage: TokenUsage[] | undefined): void {
    if (this.span) endRunSpan(this.span, end.status, code, usage);
    this.metrics.activeRuns.dec();
    this.metrics.runOutcomes.inc({ status: end.status, code: end.code ?? 'none' });
    if (this.startedAt) {
      this.metrics.runDuration.observe(
        { agent: this.run.agent.definition.id, status: end.status },
        (performance.now() - this.startedAt) / 1000,
      );
    }
  }
}
