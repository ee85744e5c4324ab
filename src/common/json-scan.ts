import { setImmediate as turn } from 'node:timers/promises';
import type { BodyLimits, RunBodyLimits } from './body-limits';
import { JsonLimitScan, ScanVerdict } from './json-limit-scan';
import { TurnShare } from './turn-share';

export { JsonLimitScan } from './json-limit-scan';
export type { ScanVerdict } from './json-limit-scan';

/**
 * Characters of JSON text scanned in one turn of the event loop: a few milliseconds at most (about
 * 1 ms on the 2-core VM for the densest text), so a body of MAX_BODY_BYTES is scanned in slices.
 */
export const SCAN_SLICE_CHARS = 32 * 1024;

/**
 * The verdict of {@link JsonLimitScan} on `text`, scanned a slice at a time, each slice once `turns`
 * has room for it (without it, one a turn): a whole slice is a unit, a shorter text its share of one
 * (a body of 1 KiB is 1/32 of a unit, so the many small bodies of a burst of runs are scanned in the
 * turn they arrive in, not four a turn). However large the body (up to MAX_BODY_BYTES) and however
 * many arrive at once, no turn of the event loop holds more than `turns` allows.
 */
export async function scanJson(
  text: string,
  limits: BodyLimits,
  run?: RunBodyLimits,
  sliceChars = SCAN_SLICE_CHARS,
  turns?: TurnShare,
): Promise<ScanVerdict> {
  const scan = new JsonLimitScan(text, limits, run);
  if (turns) await turns.take(Math.min(text.length, sliceChars) / sliceChars);
  scan.step(sliceChars);
  while (!scan.done) {
    await (turns ? turns.take() : turn());
    scan.step(sliceChars);
  }
  return scan.verdict();
}
