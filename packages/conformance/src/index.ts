/**
 * The kit as a library (README "As a library"): run it against a backend and read its report, or judge a
 * stream of AG-UI events by the stream rules alone, as io-bridge's own tests do.
 */
export { failedChecks, formatReport, runConformance } from './kit';
export type {
  Check,
  CheckContext,
  CheckReport,
  CheckStatus,
  ConformanceReport,
  LevelReport,
  Source,
} from './kit';
export { DEFAULT_OPTIONS, FRONTEND_TOOL, parseLevels } from './options';
export type { ConformanceLevel, ConformanceOptions, ConformanceProfile, ConformanceTarget } from './options';
export { ALL_CHECKS } from './checks';
export { IO_BRIDGE_STREAM_RULES, PROTOCOL_STREAM_RULES, streamViolations } from './stream-rules';
export type { RunInput, StreamFacts, StreamRule, Violation } from './stream-rules';
