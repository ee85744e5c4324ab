import type { Client } from './http';
import type { ConformanceLevel, ConformanceOptions } from './options';

/**
 * Where a check's rule comes from. `protocol`: the io.Intelligence Agent Protocol; `clause` quotes its
 * words exactly. `ag-ui`: AG-UI 1.0, where the protocol defers to it; `clause` states the rule.
 * `io-bridge`: io-bridge's own contract, an extension: checked only in the io-bridge profile, reported
 * apart, never failing protocol conformance; `clause` states the rule.
 */
export type Source =
  | { kind: 'protocol'; clause: string }
  | { kind: 'ag-ui'; clause: string }
  | { kind: 'io-bridge'; clause: string };

/** What a check works with: the backend, the options, and values checks share within one kit run. */
export type CheckContext = {
  client: Client;
  options: ConformanceOptions;
  /** One value per kit run, made by the first check that asks for it under `key`. */
  shared: <T>(key: string, make: () => Promise<T>) => Promise<T>;
};

export type Check = {
  /** Stable and unique, e.g. `L1.run-started-first` (protocol) or `X1.event-ids` (extension). */
  id: string;
  level: ConformanceLevel;
  /** What a conforming backend does, in one line. */
  title: string;
  source: Source;
  /** False for a clause that says "should": its failure is reported, the exit code stays 0. Default true. */
  required?: boolean;
  /** Runs after every other check: it judges every stream the kit read (the stream rules do). */
  final?: boolean;
  /**
   * Checks whose failure already explains this one's (a client that rejects a stream breaking a rule):
   * when one of them fails, this check's failure is reported as `blocked`, not counted twice.
   */
  after?: string[];
  /** Resolves with what was seen; throws (a CheckFailure, or any error) with what was seen instead. */
  run: (ctx: CheckContext) => Promise<string>;
};

/** A check that did not hold: its message is what the kit saw. */
export class CheckFailure extends Error {}
