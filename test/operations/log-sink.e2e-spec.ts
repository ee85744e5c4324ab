import { failedWith, LEVEL, LogSink } from '../support/log-sink';

const line = (fields: Record<string, unknown>) => `${JSON.stringify({ level: LEVEL.error, ...fields })}\n`;

describe('the tests’ log sink', () => {
  it('keeps the lines a test expects and prints every other one, so an unexpected error still shows', () => {
    const printed: string[] = [];
    const sink = new LogSink((text) => void printed.push(text));
    const withdraw = sink.expect(failedWith(503));

    sink.write(line({ res: { statusCode: 503 }, msg: 'request failed with status code 503' }));
    sink.write(line({ res: { statusCode: 500 }, msg: 'request failed with status code 500' }));
    sink.write('not json\n');
    withdraw();
    sink.write(line({ res: { statusCode: 503 }, msg: 'after the test' }));

    expect(sink.kept).toEqual([expect.objectContaining({ msg: 'request failed with status code 503' })]);
    expect(printed).toEqual([
      line({ res: { statusCode: 500 }, msg: 'request failed with status code 500' }),
      'not json\n',
      line({ res: { statusCode: 503 }, msg: 'after the test' }),
    ]);
  });

  it('hands each kept line to one assertion: take removes what it returns', () => {
    const sink = new LogSink(() => undefined);
    sink.expect(() => true);
    sink.write(line({ msg: 'a', runId: 'r1' }));
    sink.write(line({ msg: 'b', runId: 'r2' }));

    expect(sink.take((l) => l.runId === 'r1').map((l) => l.msg)).toEqual(['a']);
    expect(sink.kept.map((l) => l.msg)).toEqual(['b']);
    expect(sink.keptAt(LEVEL.fatal)).toEqual([]);
  });

  it('takeWhen waits for the lines still to come, and fails naming how many came', async () => {
    const sink = new LogSink(() => undefined);
    sink.expect(failedWith(503));
    const two = sink.takeWhen(failedWith(503), 2);
    sink.write(line({ res: { statusCode: 503 }, msg: 'one' }));
    setImmediate(() => sink.write(line({ res: { statusCode: 503 }, msg: 'two' })));
    expect((await two).map((l) => l.msg)).toEqual(['one', 'two']);
    expect(sink.kept).toEqual([]);

    await expect(sink.takeWhen(failedWith(503), 1, 50)).rejects.toThrow(
      '0 of 1 expected log lines within 50 ms',
    );
  });
});
