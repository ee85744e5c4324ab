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
 * The verdict of {@link JsonLimitScan} on `text`, scanned a slice at a time, each slice (a unit) once
 * `turns` has room (without it, one a turn): however large the body (up to MAX_BODY_BYTES) and however
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
  if (turns) await turns.take();
  scan.step(sliceChars);
  while (!scan.done) {
    await (turns ? turns.take() : turn());
    scan.step(sliceChars);
  }
  return scan.verdict();
}
