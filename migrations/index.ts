import { CreateRuns1764690000000 } from './1764690000000-create-runs';
import { CreateRunToolCalls1764690100000 } from './1764690100000-create-run-tool-calls';
import { CreateThreadsAndMessages1764690200000 } from './1764690200000-create-threads-and-messages';
import { IndexToolResults1764690300000 } from './1764690300000-index-tool-results';
import { AddRunCheckpoint1764690400000 } from './1764690400000-add-run-checkpoint';
import { EarlyToolResults1764690500000 } from './1764690500000-early-tool-results';
import { StatelessRuns1764690600000 } from './1764690600000-stateless-runs';
import { RunEvents1764690700000 } from './1764690700000-run-events';
import { RunInterrupts1764691000000 } from './1764691000000-run-interrupts';
import { RunUsage1764692300000 } from './1764692300000-run-usage';
import { OwnerBudgets1764692300100 } from './1764692300100-owner-budgets';
import { DurableRuns1764692700000 } from './1764692700000-durable-runs';
import { ParkedRuns1764692800000 } from './1764692800000-parked-runs';
import { RunQueue1764692600000 } from './1764692600000-run-queue';
import { RunWriteFence1764692900000 } from './1764692900000-run-write-fence';
import { MastraMemoryTables1764693000000 } from './1764693000000-mastra-memory-tables';
import { OneThreadStore1764693100000 } from './1764693100000-one-thread-store';
import { ResponseBoundaries1764693200000 } from './1764693200000-response-boundaries';
import { RunEventsFencedOnly1764693300000 } from './1764693300000-run-events-fenced-only';

/** Every migration, in order: the app, the CLI and the tests all run this list. */
export const migrations = [
  CreateRuns1764690000000,
  CreateRunToolCalls1764690100000,
  CreateThreadsAndMessages1764690200000,
  IndexToolResults1764690300000,
  AddRunCheckpoint1764690400000,
  EarlyToolResults1764690500000,
  StatelessRuns1764690600000,
  RunEvents1764690700000,
  RunInterrupts1764691000000,
  RunUsage1764692300000,
  OwnerBudgets1764692300100,
  RunQueue1764692600000,
  DurableRuns1764692700000,
  ParkedRuns1764692800000,
  RunWriteFence1764692900000,
  MastraMemoryTables1764693000000,
  OneThreadStore1764693100000,
  ResponseBoundaries1764693200000,
  RunEventsFencedOnly1764693300000,
];
