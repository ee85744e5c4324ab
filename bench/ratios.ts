/**
 * The summary table of issue 14's "How well" figures: each row is one figure of the service against
 * the engine alone, measured in the same bench run, with its target. A missed target is reported,
 * never an exit code: on a shared two-vCPU machine the figures are noisy (bench/README.md).
 *
 * A bench module adds its rows with the helpers below (`ratioAtLeast`, `ratioAtMost`,
 * `differenceAtMost`) or builds a `RatioRow` itself; `formatRatios` prints them all.
 */
export type RatioRow = {
  /** What is compared, e.g. `throughput, one /bench 5000 run: service / engine`. */
  name: string;
  /** The figure as printed, e.g. `0.93×`. */
  figure: string;
  /** The target as printed, e.g. `≥ 1.0×`. */
  target: string;
  met: boolean;
  /** The two measurements behind the figure, e.g. `41,200 / 44,300 deltas/s`. */
  detail: string;
};

const times = (r: number) => `${r.toFixed(2)}×`;

/** service / engine where higher is better (throughput). */
export function ratioAtLeast(
  name: string,
  service: number,
  engine: number,
  target: number,
  detail: string,
): RatioRow {
  const r = service / engine;
  return { name, figure: times(r), target: `≥ ${target.toFixed(1)}×`, met: r >= target, detail };
}

/** service / engine where lower is better (latency). */
export function ratioAtMost(
  name: string,
  service: number,
  engine: number,
  target: number,
  detail: string,
): RatioRow {
  const r = service / engine;
  return { name, figure: times(r), target: `≤ ${target.toFixed(1)}×`, met: r <= target, detail };
}

/** service − engine where lower is better, in `unit`s (e.g. KB per open run). */
export function differenceAtMost(
  name: string,
  service: number,
  engine: number,
  target: number,
  unit: string,
  detail: string,
): RatioRow {
  const d = service - engine;
  return {
    name,
    figure: `${d >= 0 ? '+' : ''}${d.toFixed(1)} ${unit}`,
    target: `≤ ${target} ${unit}`,
    met: d <= target,
    detail,
  };
}

export function formatRatios(title: string, rows: RatioRow[]): string {
  const w = {
    name: Math.max(11, ...rows.map((r) => r.name.length)) + 2,
    figure: Math.max(6, ...rows.map((r) => r.figure.length)) + 2,
    target: Math.max(6, ...rows.map((r) => r.target.length)) + 2,
  };
  const line = (name: string, figure: string, target: string, result: string, detail: string) =>
    `${name.padEnd(w.name)}${figure.padStart(w.figure)}  ${target.padEnd(w.target)}${result.padEnd(8)}${detail}`;
  return [
    title,
    line('measurement', 'figure', 'target', 'result', 'service / engine alone'),
    ...rows.map((r) => line(r.name, r.figure, r.target, r.met ? 'pass' : 'FAIL', r.detail)),
    '(a missed target does not change the exit code: the figures are noisy on a shared machine)',
  ].join('\n');
}
