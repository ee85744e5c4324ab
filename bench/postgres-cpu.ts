/**
 * The CPU time the local Postgres server has used so far, read from /proc: every process named
 * `postgres` (the postmaster, its backends and helpers) plus what the postmaster's exited children
 * used (`cutime`, `cstime`: a pooled connection closed between two readings still counts). The
 * realistic part reads it around each window, so each subject's database work per run shows beside
 * its own CPU. Undefined where /proc or the server is not on this machine.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's times (USER_HZ, 100 on Linux). */
const TICK_MS = 10;

/** utime, stime, cutime, cstime (ms) of a process named `postgres`, or undefined. */
function times(pid: string): { own: number; children: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid …": the command may hold spaces, so fields are counted after its ')'.
  const open = stat.indexOf('(');
  const close = stat.lastIndexOf(')');
  if (stat.slice(open + 1, close) !== 'postgres') return undefined;
  const fields = stat.slice(close + 2).split(' ');
  // Fields 14-17 of proc(5) are utime, stime, cutime, cstime; `fields` starts at field 3.
  const [utime, stime, cutime, cstime] = fields.slice(11, 15).map(Number);
  return { own: (utime + stime) * TICK_MS, children: (cutime + cstime) * TICK_MS };
}

export function postgresCpuMs(): number | undefined {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  let total = 0;
  let found = false;
  for (const pid of pids) {
    const t = times(pid);
    if (!t) continue;
    found = true;
    // A backend's own children are none; the postmaster's are every exited backend.
    total += t.own + t.children;
  }
  return found ? total : undefined;
}
