import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';

export const CHANNELS = ['io_bridge_tool_result', 'io_bridge_run_cancel'] as const;
export type Channel = (typeof CHANNELS)[number];

/**
 * Postgres LISTEN/NOTIFY between replicas, no extra broker: one dedicated connection per instance
 * listens; NOTIFY goes through the pool. After a reconnect, `onReconnect` handlers re-check the
 * tables, so nothing sent while the connection was down is missed.
 */
@Injectable()
export class PgNotifications implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(PgNotifications.name);
  private readonly handlers = new Map<Channel, Set<(payload: string) => void>>();
  private readonly reconnectHandlers = new Set<() => void>();
  private client: Client | undefined;
  private closing = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.connect();
  }

  async onModuleDestroy(): Promise<void> {
    this.closing = true;
    clearTimeout(this.retry);
    await this.client?.end().catch(() => undefined);
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
