import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Client, QueryConfig } from 'pg';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { pgSession } from './data-source';

export const CHANNELS = [
  'io_bridge_tool_result',
  'io_bridge_run_cancel',
  'io_bridge_thread_cancel',
  'io_bridge_run_events',
  'io_bridge_run_watch',
  'io_bridge_thread_run',
  'io_bridge_thread_watch',
  'io_bridge_runs_handed_over',
] as const;
export type Channel = (typeof CHANNELS)[number];

/**
 * Postgres LISTEN/NOTIFY between replicas, no extra broker: one dedicated connection per instance
 * listens; NOTIFY goes through the pool. After a reconnect, `onReconnect` handlers re-check the
 * tables, so nothing sent while the connection was down is missed. A LISTEN connection only
 * receives, so a frozen server would go unnoticed: it is pinged, and replaced when the ping fails.
 */
@Injectable()
export class PgNotifications implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(PgNotifications.name);
  private readonly handlers = new Map<Channel, Set<(payload: string) => void>>();
  private readonly reconnectHandlers = new Set<() => void>();
  private client: Client | undefined;
  private closing = false;
  private retry: NodeJS.Timeout | undefined;
  private keepalive: NodeJS.Timeout | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.connect();
    const { connectMs } = this.config.database.timeouts;
    this.keepalive = setInterval(() => void this.ping(connectMs).catch(() => undefined), connectMs);
    this.keepalive.unref();
  }

  async onModuleDestroy(): Promise<void> {
    this.closing = true;
    clearTimeout(this.retry);
    clearInterval(this.keepalive);
    await this.client?.end().catch(() => undefined);
  }

  /**
   * Resolves when the LISTEN connection answers `SELECT 1` within `timeoutMs`: the database is up
   * and this instance hears other replicas. It never waits for the pool. A connection that does not
   * answer is dropped and reconnected.
   */
  async ping(timeoutMs: number): Promise<void> {
    const client = this.client;
    if (!client) throw new Error('notification connection down; reconnecting');
    try {
      await client.query({ text: 'SELECT 1', query_timeout: timeoutMs } as QueryConfig);
    } catch (err) {
      // A query without an answer stays in flight: this connection is of no more use.
      if (this.client === client) void client.end().catch(() => undefined);
      throw err;
    }
  }

  on(channel: Channel, handler: (payload: string) => void): () => void {
    let set = this.handlers.get(channel);
    if (!set) this.handlers.set(channel, (set = new Set()));
    set.add(handler);
    return () => set.delete(handler);
  }

  onReconnect(handler: () => void): () => void {
    this.reconnectHandlers.add(handler);
    return () => this.reconnectHandlers.delete(handler);
  }

  async notify(channel: Channel, payload: string): Promise<void> {
    await this.dataSource.query('SELECT pg_notify($1, $2)', [channel, payload]);
  }

  private async connect(): Promise<void> {
    const client = new Client({
      connectionString: this.config.database.url,
      application_name: 'io-bridge-listen',
      ...pgSession(this.config.database.timeouts),
    });
    client.on('notification', (msg) => {
      for (const handler of this.handlers.get(msg.channel as Channel) ?? []) handler(msg.payload ?? '');
    });
    const lost = (err?: Error) => {
      if (this.closing || this.client !== client) return;
      this.client = undefined;
      this.log.warn(`notification connection lost${err ? `: ${err.message}` : ''}; reconnecting`);
      this.retry = setTimeout(() => void this.reconnect(), 1000);
    };
    client.on('error', lost);
    client.on('end', () => lost());
    await client.connect();
    for (const channel of CHANNELS) await client.query(`LISTEN ${channel}`);
    this.client = client;
  }

  private async reconnect(): Promise<void> {
    try {
      await this.connect();
      for (const handler of this.reconnectHandlers) handler();
    } catch (err) {
      this.log.warn(`reconnect failed: ${(err as Error).message}`);
      if (!this.closing) this.retry = setTimeout(() => void this.reconnect(), 1000);
    }
  }
}
