import { randomUUID } from 'node:crypto';
import { BuiltService, startBuiltService } from '../support/built-service';
import { eventually } from '../support/app';
import { runInput } from '../support/sse';

const CAP = 3;
const READERS_PER_OWNER = 3;
const READERS_PER_RUN = 2;

/**
 * Fair shares (docs/limits.md#fair-shares), on the built service with AUTH_MODE=none: one address cannot
 * hold more than its cap.
 */
describe('fair shares: live runs and readers are capped per owner, per run and per address', () => {
  let service: BuiltService | undefined;
  beforeAll(async () => {
    service = await startBuiltService({
      DATABASE_URL: process.env.E2E_DATABASE_URL!,
      MAX_ACTIVE_RUNS_PER_OWNER: String(CAP),
      MAX_READERS_PER_OWNER: String(READERS_PER_OWNER),
      MAX_READERS_PER_RUN: String(READERS_PER_RUN),
      RATE_LIMIT_PER_MINUTE: '100000',
    });
  }, 90_000);
  afterAll(() => service?.stop());

  /** A run left at once after its headers, kept alive for a rejoin (grace) on a slow answer. */
  const pin = async (resourceId: string) => {
    const controller = new AbortController();
    const input = runInput('/slow 60000 a b c', {
      forwardedProps: { resourceId, disconnectGraceMs: 600_000 },
    });
    const res = await fetch(`${service!.base}/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(input),
      signal: controller.signal,
    });
    const body = res.status === 200 ? undefined : ((await res.json()) as { code: string });
    controller.abort();
    return { status: res.status, code: body?.code, runId: input.runId, resourceId };
  };
  const cancel = (runId: string, resourceId: string) =>
    fetch(`${service!.base}/runs/${runId}/cancel`, {
      method: 'POST',
      headers: { 'x-resource-id': resourceId },
    });

  it('1,000 attempts by one owner to pin runs: at most MAX_ACTIVE_RUNS_PER_OWNER live, the rest 429', async () => {
    const owner = `pinner-${randomUUID()}`;
    const results: Array<Awaited<ReturnType<typeof pin>>> = [];
    for (let batch = 0; batch < 1000; batch += 50) {
      results.push(...(await Promise.all(Array.from({ length: 50 }, () => pin(owner)))));
    }
    const live = results.filter((r) => r.status === 200);
    expect(live).toHaveLength(CAP);
    expect(results.filter((r) => r.status === 429 && r.code === 'TOO_MANY_ACTIVE_RUNS')).toHaveLength(
      1000 - CAP,
    );
    // A run that ends gives its share back.
    expect((await cancel(live[0].runId, owner)).status).toBe(202);
    const next = await eventually(() => pin(owner).then((r) => (r.status === 200 ? r : undefined)), 10_000);
    for (const r of [...live.slice(1), next]) await cancel(r.runId, owner);
  }, 240_000);

  it('1,000 owners from one address (AUTH_MODE=none): the cap holds for the address too', async () => {
    const results: Array<Awaited<ReturnType<typeof pin>>> = [];
    for (let batch = 0; batch < 1000; batch += 50) {
      results.push(...(await Promise.all(Array.from({ length: 50 }, () => pin(`owner-${randomUUID()}`)))));
    }
    const live = results.filter((r) => r.status === 200);
    expect(live.length).toBeLessThanOrEqual(CAP);
    expect(results.filter((r) => r.code === 'TOO_MANY_ACTIVE_RUNS').length).toBeGreaterThanOrEqual(
      1000 - CAP,
    );
    for (const r of live) await cancel(r.runId, r.resourceId);
  }, 240_000);

  it('replays and joins are capped per run and per owner, refused 429 before any header of a stream', async () => {
    const owner = `reader-${randomUUID()}`;
    // Two live runs to join; the address's earlier runs (cancelled above) give their shares back first.
    const runs: string[] = [];
    for (let i = 0; i < 2; i++) {
      const started = await eventually(
        () => pin(owner).then((r) => (r.status === 200 ? r : undefined)),
        10_000,
      );
      runs.push(started.runId);
    }
    const open = async (runId: string) => {
      const controller = new AbortController();
      const res = await fetch(`${service!.base}/runs/${runId}/events`, {
        headers: { accept: 'text/event-stream', 'x-resource-id': owner },
        signal: controller.signal,
      });
      return { res, close: () => controller.abort() };
    };
    const onA = [await open(runs[0]), await open(runs[0])];
    expect(onA.map((r) => r.res.status)).toEqual([200, 200]);
    const thirdOnA = await open(runs[0]);
    expect(thirdOnA.res.status).toBe(429);
    expect(thirdOnA.res.headers.get('content-type')).toMatch(/application\/json/);
    expect(await thirdOnA.res.json()).toMatchObject({ statusCode: 429, code: 'TOO_MANY_READERS' });
    const onB = await open(runs[1]);
    expect(onB.res.status).toBe(200);
    // The owner's third stream is its last: a fourth, on a run with room, is refused.
    const fourth = await open(runs[1]);
    expect(fourth.res.status).toBe(429);
    expect(await fourth.res.json()).toMatchObject({ code: 'TOO_MANY_READERS' });
    // A reader that leaves frees its share.
    onA[0].close();
    const again = await eventually(async () => {
      const r = await open(runs[1]);
      if (r.res.status === 200) return r;
      await r.res.arrayBuffer();
      return undefined;
    }, 10_000);
    for (const r of [...onA, onB, again]) r.close();
    for (const runId of runs) await cancel(runId, owner);
  }, 60_000);
});
