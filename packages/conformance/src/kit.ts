import { ALL_CHECKS } from './checks';
import { CheckFailure } from './check';
import type { Check, CheckContext, Source } from './check';
import { clientFor } from './http';
import { DEFAULT_OPTIONS } from './options';
import type { ConformanceLevel, ConformanceOptions, ConformanceProfile, ConformanceTarget } from './options';

export type { Check, CheckContext, Source };

export type CheckStatus = 'pass' | 'fail' | 'blocked';

export type CheckReport = {
  id: string;
  level: ConformanceLevel;
  title: string;
  source: Source;
  extension: boolean;
  required: boolean;
  status: CheckStatus;
  /** What the kit saw: evidence on a pass, the finding on a failure. */
  seen: string;
  ms: number;
};

export type LevelReport = {
  level: ConformanceLevel;
  status: 'pass' | 'fail';
  checks: CheckReport[];
};

export type ConformanceReport = {
  base: string;
  profile: ConformanceProfile;
  levels: LevelReport[];
  /** io-bridge's own contract (the io-bridge profile only), by level. */
  extensions?: LevelReport[];
  /** False when a required check of the chosen levels failed: the CLI's exit code. */
  ok: boolean;
  summary: string;
};

const LEVEL_NAMES: Record<ConformanceLevel, string> = {
  1: 'POST /run streaming core',
  2: 'tool execution events and tool-loop behavior',
  3: 'thread and message persistence routes',
  4: 'agent discovery routes',
};

const failed = (c: CheckReport) => c.status === 'fail' && c.required;

function levelReports(checks: CheckReport[], levels: ConformanceLevel[]): LevelReport[] {
  return levels.map((level) => {
    const mine = checks.filter((c) => c.level === level);
    return { level, status: mine.some(failed) ? 'fail' : 'pass', checks: mine };
  });
}

function count(checks: CheckReport[]): string {
  const pass = checks.filter((c) => c.status === 'pass').length;
  const notes = [
    ...(checks.some((c) => c.status === 'fail' && !c.required)
      ? [`${checks.filter((c) => c.status === 'fail' && !c.required).length} recommended failed`]
      : []),
    ...(checks.some((c) => c.status === 'blocked')
      ? [`${checks.filter((c) => c.status === 'blocked').length} blocked`]
      : []),
  ];
  return `${pass}/${checks.length} checks pass${notes.length ? `, ${notes.join(', ')}` : ''}`;
}

/**
 * Runs the conformance kit against a backend and returns its report; it never throws for what the
 * backend does. `options.levels` chooses the levels, `options.profile` adds io-bridge's extensions.
 */
export async function runConformance(
  target: ConformanceTarget,
  options: Partial<Omit<ConformanceOptions, 'prompts'>> & {
    prompts?: Partial<ConformanceOptions['prompts']>;
  } = {},
  checks?: Check[],
): Promise<ConformanceReport> {
  const opts: ConformanceOptions = {
    ...DEFAULT_OPTIONS,
    ...options,
    prompts: { ...DEFAULT_OPTIONS.prompts, ...options.prompts },
  };
  const levels = [...new Set(opts.levels)].sort();
  const all = checks ?? ALL_CHECKS;
  const chosen = all.filter(
    (c) => levels.includes(c.level) && (opts.profile === 'io-bridge' || c.source.kind !== 'io-bridge'),
  );
  const ids = new Set<string>();
  for (const c of all) {
    if (ids.has(c.id)) throw new Error(`two checks are named ${c.id}`);
    ids.add(c.id);
  }

  const client = clientFor(target, opts.timeoutMs);
  const values = new Map<string, Promise<unknown>>();
  const ctx: CheckContext = {
    client,
    options: opts,
    shared: <T>(key: string, make: () => Promise<T>) => {
      if (!values.has(key)) values.set(key, make());
      return values.get(key) as Promise<T>;
    },
  };

  const results = new Map<string, CheckReport>();
  const runOne = async (check: Check) => {
    client.setLabel(check.id);
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new CheckFailure(`no verdict within ${opts.timeoutMs} ms`)),
        opts.timeoutMs,
      );
    });
    let status: CheckStatus = 'pass';
    let seen: string;
    try {
      seen = await Promise.race([check.run(ctx), timeout]);
    } catch (err) {
      status = 'fail';
      seen = err instanceof CheckFailure ? err.message : `${(err as Error)?.message ?? String(err)}`;
    } finally {
      clearTimeout(timer);
    }
    results.set(check.id, {
      id: check.id,
      level: check.level,
      title: check.title,
      source: check.source,
      extension: check.source.kind === 'io-bridge',
      required: check.required ?? true,
      status,
      seen,
      ms: Date.now() - started,
    });
  };

  for (const check of chosen.filter((c) => !c.final)) await runOne(check);
  // Streams a check left open (a tool call never answered) end now, so the rules judge what arrived.
  for (const stream of client.runs) if (!stream.ended()) stream.abort();
  await Promise.allSettled(client.runs.map((s) => s.done));
  for (const check of chosen.filter((c) => c.final)) await runOne(check);

  for (const check of chosen) {
    const result = results.get(check.id)!;
    const cause = (check.after ?? []).find((id) => results.get(id)?.status === 'fail');
    if (result.status === 'fail' && cause) {
      result.status = 'blocked';
      result.seen = `${cause} failed first, which explains this: ${result.seen}`;
    }
  }

  const reports = chosen.map((c) => results.get(c.id)!);
  const protocol = reports.filter((c) => !c.extension);
  const extension = reports.filter((c) => c.extension);
  const levelReport = levelReports(protocol, levels);
  const extensions = opts.profile === 'io-bridge' ? levelReports(extension, levels) : undefined;
  const ok = !reports.some(failed);
  const levelsText = levelReport.map((l) => `Level ${l.level} ${l.status}`).join(', ');
  const summary =
    `${ok ? 'PASS' : 'FAIL'} ${target.base} (profile ${opts.profile}): ${levelsText}; ` +
    `protocol ${count(protocol)}` +
    (extensions ? `; io-bridge extensions ${count(extension)}` : '');
  return { base: target.base, profile: opts.profile, levels: levelReport, extensions, ok, summary };
}

const MARK: Record<CheckStatus, string> = { pass: 'ok  ', fail: 'FAIL', blocked: 'skip' };

function sourceLine(source: Source): string {
  if (source.kind === 'protocol') return `protocol: "${source.clause}"`;
  return `${source.kind === 'ag-ui' ? 'AG-UI 1.0' : 'io-bridge contract'}: ${source.clause}`;
}

function checkLines(check: CheckReport): string[] {
  const mark = check.status === 'fail' && !check.required ? 'warn' : MARK[check.status];
  return [
    `  ${mark} ${check.id}  ${check.title}${check.required ? '' : ' (recommended)'}`,
    `         ${sourceLine(check.source)}`,
    `         seen: ${check.seen.replace(/\n/g, '\n               ')}`,
  ];
}

/** The report as text for a terminal: each level, each check with its clause and what was seen, one summary line. */
export function formatReport(report: ConformanceReport): string {
  const lines = [
    `io.Intelligence Agent Protocol conformance of ${report.base} (profile ${report.profile})`,
    '',
  ];
  for (const level of report.levels) {
    lines.push(`Level ${level.level}, ${LEVEL_NAMES[level.level]}: ${level.status.toUpperCase()}`);
    for (const check of level.checks) lines.push(...checkLines(check));
    lines.push('');
  }
  for (const level of report.extensions ?? []) {
    lines.push(
      `io-bridge extensions at level ${level.level} (not part of protocol conformance): ${level.status.toUpperCase()}`,
    );
    for (const check of level.checks) lines.push(...checkLines(check));
    lines.push('');
  }
  lines.push(report.summary);
  return lines.join('\n');
}

/** The ids of the checks that failed (required or not), blocked ones excluded. */
export function failedChecks(report: ConformanceReport): string[] {
  return [...report.levels, ...(report.extensions ?? [])]
    .flatMap((l) => l.checks)
    .filter((c) => c.status === 'fail')
    .map((c) => c.id);
}
