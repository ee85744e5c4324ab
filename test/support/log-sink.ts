/** One JSON log line of the service, parsed. */
export type LogLine = {
  level: number;
  msg?: string;
  context?: string;
  req?: { method: string; path: string };
  res?: { statusCode: number };
  err?: { type?: string; message?: string };
  [field: string]: unknown;
};

/** pino's numeric levels. */
export const LEVEL = { warn: 40, error: 50, fatal: 60 } as const;

/**
 * The service's log lines in a test. A line the test provokes on purpose (it matches one of `expect`'s
 * patterns) is kept in `kept` for the test to assert and is not printed; every other line goes to
 * stdout as before, so an error nobody expected still shows in the test run.
 */
export class LogSink {
  /** The lines the test expected, in order. */
  readonly kept: LogLine[] = [];
  private readonly expected: Array<(line: LogLine) => boolean> = [];
  private readonly waiters = new Set<() => void>();

  constructor(private readonly out: (text: string) => void = (text) => void process.stdout.write(text)) {}

  /** Lines matching `match` are the test's own: kept, not printed, until the returned function withdraws it. */
  expect(match: (line: LogLine) => boolean): () => void {
    this.expected.push(match);
    return () => {
      const at = this.expected.indexOf(match);
      if (at >= 0) this.expected.splice(at, 1);
    };
  }

  /** pino's destination: one JSON line per call. */
  write = (text: string): void => {
    let line: LogLine;
    try {
      line = JSON.parse(text) as LogLine;
    } catch {
      return this.out(text);
    }
    if (this.expected.some((match) => match(line))) {
      this.kept.push(line);
      for (const check of this.waiters) check();
    } else this.out(text.endsWith('\n') ? text : `${text}\n`);
  };

  /** Removes from `kept` and returns the lines matching `match`: a test's assertion claims them once. */
  take(match: (line: LogLine) => boolean): LogLine[] {
    const taken = this.kept.filter(match);
    this.kept.splice(0, this.kept.length, ...this.kept.filter((line) => !match(line)));
    return taken;
  }

  /**
   * Takes the kept lines matching `match` once there are `count` of them (a request's line is written
   * when its response ends, which may be after the client read it); rejects after `timeoutMs`.
   */
  takeWhen(match: (line: LogLine) => boolean, count = 1, timeoutMs = 5000): Promise<LogLine[]> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.kept.filter(match).length < count) return;
        done();
        resolve(this.take(match));
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new Error(
            `${this.kept.filter(match).length} of ${count} expected log lines within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }

  /** The kept lines at `level` or above. */
  keptAt(level: number): LogLine[] {
    return this.kept.filter((line) => line.level >= level);
  }
}

/** A request's completion line with this status (pino-http's "request failed with status code …"). */
export const failedWith =
  (status: number) =>
  (line: LogLine): boolean =>
    line.res?.statusCode === status;

/**
 * The one sink of a test file. nestjs-pino builds its pino-http instance once per process, from the
 * first application's parameters, and every later application in the file logs through it: a sink
 * per application would leave the later ones' lines in the first one's sink.
 */
export const serviceLogs = new LogSink();
