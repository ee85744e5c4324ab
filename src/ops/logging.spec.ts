import { loggingParams, traceContext } from './logging';

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
