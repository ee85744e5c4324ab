import { CreateRuns1764690000000 } from './1764690000000-create-runs';

/** Every migration, in order: the app, the CLI and the tests all run this list. */
export const migrations = [CreateRuns1764690000000];
