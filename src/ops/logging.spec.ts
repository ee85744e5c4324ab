import type { ServerResponse } from 'node:http';
import { isInvented, loggingParams, prettyLine, quietStartup, traceContext } from './logging';

describe('logging', () => {
  it('reads a W3C traceparent', () => {
    expect(traceContext('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toEqual({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
    });
  });

  it.each([undefined, '', 'garbage', '00-00000000000000000000000000000000-00f067aa0ba902b7-01', ['a', 'b']])(
    'ignores %j',
    (header) => {
      expect(traceContext(header)).toBeUndefined();
    },
  );

  it('logs requests without headers or bodies, and maps the level', () => {
    const params = loggingParams('log');
    const http = params.pinoHttp as { level: string; serializers: { req: (r: unknown) => unknown } };
    expect(http.level).toBe('info');
    const req = {
      id: 'r1',
      method: 'POST',
      url: '/io-bridge/threads?resourceId=x',
      headers: { authorization: 'Bearer t' },
      body: { x: 1 },
    };
    expect(http.serializers.req(req)).toEqual({ id: 'r1', method: 'POST', path: '/io-bridge/threads' });
  });
});

describe('terminal and error log lines', () => {
  it('prints a request line readably, with its run and no invented error', () => {
    const line = prettyLine(
      JSON.stringify({
        level: 30,
        time: Date.UTC(2025, 0, 1, 12, 34, 56, 789),
        req: { id: 'r1', method: 'POST', path: '/io-bridge/run' },
        res: { statusCode: 200 },
        responseTime: 12,
        runId: 'run-1',
        msg: 'request completed',
      }),
    );
    expect(line).toBe('12:34:56.789 INFO  POST /io-bridge/run 200 12ms runId=run-1\n');
  });

  it("drops pino-http's made-up 5xx error, keeps a real one", () => {
    const res = {} as ServerResponse;
    expect(isInvented(new Error('failed with status code 500'), res)).toBe(true);
    expect(isInvented(new Error('connection reset'), res)).toBe(false);
  });

  it("moves Nest's route map to debug", () => {
    const calls: string[] = [];
    const logger = quietStartup({
      log: (m: string) => calls.push(`log ${m}`),
      debug: (m: string) => calls.push(`debug ${m}`),
      error: () => undefined,
      warn: () => undefined,
    });
    logger.log('Mapped {/io-bridge/run, POST} route', 'RouterExplorer');
    logger.log('listening', 'Bootstrap');
    expect(calls).toEqual(['debug Mapped {/io-bridge/run, POST} route', 'log listening']);
  });
});
