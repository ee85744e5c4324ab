import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { isResourceId, RESOURCE_RULE, type Principal } from '../auth/principal';
import { DomainError } from '../common/errors';
import type { AppConfig } from '../config/config';
import { durationMs } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import {
  AdminUsageQueryDto,
  AdminUsageView,
  BudgetView,
  OwnerUsageView,
  QuotaView,
  SetQuotaDto,
  UsageQueryDto,
  UsageRowView,
  UsageView,
} from './dto/usage.dto';

type BudgetRow = {
  resource_id: string;
  tokens: string;
  window_ms: string;
  source: 'configuration' | 'owner';
  spent: string;
};

/** A window in the unit it reads best in: `1d`, `12h`, `30m`, `45s`. */
export function windowText(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
  ] as const)
    if (ms % size === 0) return `${ms / size}${unit}`;
  return `${Math.round(ms / 1000)}s`;
}

/**
 * Token usage as recorded on the runs (`runs.usage`, `runs.tokens`), and owners' budgets: the
 * configured default (TOKEN_BUDGET_PER_OWNER) or one set for the owner (`owner_quotas`). A run
 * counts once it has ended, in the window its end falls in.
 */
@Injectable()
export class UsageService {
  private readonly defaults: { tokens: number | null; windowMs: number };

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.defaults = { tokens: config.budgets.tokens ?? null, windowMs: config.budgets.windowMs };
  }

  async mine(query: UsageQueryDto, principal: Principal): Promise<UsageView> {
    const days = query.days ?? 30;
    const rows: Array<Record<string, string | null>> = await this.db.query(
      `SELECT to_char(r.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, r.agent_id,
              u->>'provider' AS provider, u->>'model' AS model, count(DISTINCT r.id) AS runs,
              sum(COALESCE((u->>'inputTokens')::bigint, 0)) AS input,
              sum(COALESCE((u->>'outputTokens')::bigint, 0)) AS output
         FROM runs r CROSS JOIN LATERAL jsonb_array_elements(r.usage) AS u
        WHERE r.resource_id = $1 AND r.tokens > 0 AND r.finished_at > now() - $2 * interval '1 day'
        GROUP BY 1, 2, 3, 4
        ORDER BY 1 DESC, 2, 3, 4`,
      [principal.resourceId, days],
    );
    const usage: UsageRowView[] = rows.map((r) => ({
      day: r.day!,
      agentId: r.agent_id!,
      ...(r.provider ? { provider: r.provider } : {}),
      ...(r.model ? { model: r.model } : {}),
      runs: Number(r.runs),
      inputTokens: Number(r.input),
      outputTokens: Number(r.output),
      totalTokens: Number(r.input) + Number(r.output),
    }));
    const budget = (await this.budgets([principal.resourceId])).get(principal.resourceId);
    return { resourceId: principal.resourceId, days, usage, ...(budget ? { budget } : {}) };
  }

  async everyone(query: AdminUsageQueryDto, principal: Principal): Promise<AdminUsageView> {
    operatorOnly(principal);
    const days = query.days ?? 30;
    const rows: Array<Record<string, string>> = await this.db.query(
      `SELECT r.resource_id, count(*) AS runs, sum(r.tokens) AS total,
              sum((SELECT COALESCE(sum((u->>'inputTokens')::bigint), 0) FROM jsonb_array_elements(r.usage) u)) AS input,
              sum((SELECT COALESCE(sum((u->>'outputTokens')::bigint), 0) FROM jsonb_array_elements(r.usage) u)) AS output
         FROM runs r
        WHERE r.tokens > 0 AND r.finished_at > now() - $1 * interval '1 day'
        GROUP BY r.resource_id
        ORDER BY total DESC, r.resource_id
        LIMIT $2`,
      [days, query.limit ?? 50],
    );
    const budgets = await this.budgets(rows.map((r) => r.resource_id));
    const owners: OwnerUsageView[] = rows.map((r) => {
      const budget = budgets.get(r.resource_id);
      return {
        resourceId: r.resource_id,
        runs: Number(r.runs),
        inputTokens: Number(r.input),
        outputTokens: Number(r.output),
        totalTokens: Number(r.input) + Number(r.output),
        ...(budget ? { budget } : {}),
      };
    });
    return { days, owners };
  }

  async setQuota(resourceId: string, dto: SetQuotaDto, principal: Principal): Promise<QuotaView> {
    operatorOnly(principal);
    if (!isResourceId(resourceId))
      throw new DomainError('VALIDATION_FAILED', `resourceId must be ${RESOURCE_RULE}`, [
        { path: 'resourceId', message: `must be ${RESOURCE_RULE}` },
      ]);
    const windowMs = dto.window ? durationMs(dto.window) : this.defaults.windowMs;
    await this.db.query(
      `INSERT INTO owner_quotas (resource_id, tokens, window_ms, updated_by) VALUES ($1, $2, $3, $4)
       ON CONFLICT (resource_id) DO UPDATE
          SET tokens = EXCLUDED.tokens, window_ms = EXCLUDED.window_ms, updated_by = EXCLUDED.updated_by, updated_at = now()`,
      [resourceId, dto.tokens, windowMs, principal.resourceId],
    );
    return { resourceId, tokens: dto.tokens, window: windowText(windowMs) };
  }

  /** Each owner's budget, as the claim computes it (its own, else the default), with what it spent. */
  private async budgets(resourceIds: string[]): Promise<Map<string, BudgetView>> {
    if (!resourceIds.length) return new Map();
    const rows: BudgetRow[] = await this.db.query(
      `WITH owners AS (SELECT unnest($1::text[]) AS resource_id),
       budget AS (
         SELECT o.resource_id, COALESCE(q.tokens, $2::bigint) AS tokens, COALESCE(q.window_ms, $3::bigint) AS window_ms,
                CASE WHEN q.resource_id IS NULL THEN 'configuration' ELSE 'owner' END AS source
           FROM owners o LEFT JOIN owner_quotas q ON q.resource_id = o.resource_id)
       SELECT b.*, (SELECT COALESCE(sum(r.tokens), 0) FROM runs r
                     WHERE r.resource_id = b.resource_id AND r.tokens > 0
                       AND r.finished_at > now() - b.window_ms * interval '1 millisecond') AS spent
         FROM budget b WHERE b.tokens IS NOT NULL`,
      [resourceIds, this.defaults.tokens, this.defaults.windowMs],
    );
    return new Map(
      rows.map((r) => {
        const tokens = Number(r.tokens);
        const spent = Number(r.spent);
        return [
          r.resource_id,
          {
            tokens,
            window: windowText(Number(r.window_ms)),
            spent,
            remaining: Math.max(0, tokens - spent),
            source: r.source,
          },
        ];
      }),
    );
  }
}

function operatorOnly(principal: Principal): void {
  if (!principal.admin) throw new DomainError('FORBIDDEN', 'Only an operator (ADMIN_ROLE) may do this');
}
