import { defaultOptions, formatChaos, runChaos, type ChaosReport } from '../../bench/chaos';

/**
 * The chaos harness (bench/chaos.ts, `npm run chaos`) small enough for CI. Two built replicas
 * on a fresh database, ten runs posted at once (half to each), faults in series, each on the replica
 * holding the most runs: a SIGSTOP longer than the lease while a replica streams its own runs to
 * their clients (a GC pause, a starved CPU); a kill -9 of the replica that took them over; two more
 * kills, so runs are continued again and again. Every run must finish, its stream whole and well-formed across its
 * rejoins, its answer stored once under the id it streamed, and the paused replica must write nothing
 * to the runs it lost.
 */
const FAULTS = ['pause', 'kill', 'kill', 'kill'] as const;
describe('chaos: 2 replicas, 10 runs, 3 kills and a pause', () => {
  let report: ChaosReport;

  beforeAll(async () => {
    report = await runChaos(
      {
        ...defaultOptions(),
        replicas: 2,
        concurrency: 10,
        totalRuns: 10,
        faults: [...FAULTS],
        // Each fault hits the replica holding the most runs: live runs, however long a restart takes.
        target: 'busiest',
        faultEveryS: 4,
        // 40 words, one every 300 ms: about 13 s an attempt, so the runs are live through the faults.
        wordMs: 300,
        runTimeoutMs: 90_000,
        pgUrl: process.env.E2E_ADMIN_URL!,
        report: `.data/chaos-e2e-${process.pid}.json`,
      },
      () => undefined,
    );
    // The figures, for whoever reads the test's output.
    console.log(formatChaos(report));
  }, 200_000);

  it('the faults hit live runs', () => {
    expect(report.faults.map((f) => f.kind)).toEqual(FAULTS);
    expect(report.faults.every((f) => f.runsHeld > 0)).toBe(true);
    expect(report.runs.continued).toBeGreaterThan(0);
  });

  it('every run ends RUN_FINISHED, its reader with the terminal event', () => {
    expect(report.runs.started).toBe(10);
    expect(report.runs.examples).toEqual([]);
    expect(report.runs).toMatchObject({
      finished: 10,
      runError: {},
      noTerminal204: 0,
      neverTerminal: 0,
      refused: 0,
      recordDisagrees: 0,
    });
  });

  it('every stream is well-formed across its rejoins, and every answer whole', () => {
    expect(report.malformed.examples).toEqual([]);
    expect(report.malformed.count).toBe(0);
    expect(report.divergent).toEqual({ count: 0, examples: [] });
    expect(report.clients.framingErrors).toBe(0);
    expect(report.answers).toEqual({ lostWords: 0, runsWithLostWords: 0, notExact: 0, examples: [] });
  });

  it('every answer is stored once, under the id it streamed', () => {
    expect(report.stored).toEqual({ twice: 0, underAnotherId: 0, missing: 0, examples: [] });
  });

  it('the paused replica writes nothing to the runs it lost; no replica writes to a run it does not hold', () => {
    expect(report.pauses).toHaveLength(1);
    expect(report.pauses[0].runsLost).toBeGreaterThan(0);
    expect(report.pauses[0].examples).toEqual([]);
    expect(report.pauses[0].staleWrites).toBe(0);
    expect(report.fencing.examples).toEqual([]);
    expect(report.fencing.stale).toBe(0);
    expect(report.problems).toEqual([]);
  });
});
