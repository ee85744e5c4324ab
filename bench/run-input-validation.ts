/**
 * What checking one `POST /run` body costs on the largest body the limits allow (issue 22): the JSON
 * parse, SafeInputPipe, the compiled RunAgentInput schema, and @ag-ui/core's zod schema for comparison.
 * Run with `npm run build:bench && node dist-bench/bench/run-input-validation.js` (not part of `npm test`).
 */
import 'reflect-metadata';
import { performance } from 'node:perf_hooks';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import { unsafeInput } from '../src/common/safe-input';
import { runAgentInputProblems } from '../src/protocol/run-agent-input.schema';
import { countValues, largestBody } from './largest-body';

const RUNS = 50;

/** Median and max milliseconds of `check` on a freshly parsed body (the schema drops unknown fields in place). */
function time(text: string, check: (body: unknown) => unknown): { medianMs: number; maxMs: number } {
  for (let i = 0; i < 10; i++) check(JSON.parse(text));
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const body: unknown = JSON.parse(text);
    const started = performance.now();
    check(body);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { medianMs: times[RUNS >> 1], maxMs: times[RUNS - 1] };
}

const text = largestBody();
const fail = (what: string) => {
  throw new Error(`the largest body failed ${what}`);
};
const figures = {
  bytes: Buffer.byteLength(text),
  values: countValues(JSON.parse(text)),
  'JSON.parse': time(text, () => JSON.parse(text)),
  SafeInputPipe: time(text, (b) => unsafeInput(b) && fail('SafeInputPipe')),
  'RunAgentInput schema (Ajv)': time(text, (b) => runAgentInputProblems(b) && fail('the schema')),
  '@ag-ui/core zod schema': time(text, (b) => RunAgentInputSchema.safeParse(b).success || fail('zod')),
};
for (const [name, value] of Object.entries(figures)) {
  console.log(
    typeof value === 'number'
      ? `${name}: ${value}`
      : `${name}: median ${value.medianMs.toFixed(2)} ms, max ${value.maxMs.toFixed(2)} ms`,
  );
}
