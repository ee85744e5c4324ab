/**
 * The layer rules of src/ (docs/architecture.md), checked by `npm run lint:layers` in `npm run check`
 * and so in CI. Features are agents/, threads/ and runs/; protocol/ holds the AG-UI wire types every
 * feature may use; common/, config/ and database/ are the ground they stand on.
 */
/**
 * The parts of a run, lowest first (docs/architecture.md#the-parts-of-a-run): each may import the
 * parts before it, never one after it. The run routes (src/runs/*.ts) stand on all of them.
 */
const RUN_PARTS = ['events', 'storage', 'prepare', 'stream', 'tools', 'engine', 'durable'];

const runPartRules = RUN_PARTS.slice(0, -1).map((part, i) => ({
  name: `runs-${part}-below-${RUN_PARTS.slice(i + 1).join('-')}`,
  severity: 'error',
  comment: `src/runs/${part}/ is below ${RUN_PARTS.slice(i + 1).join(', ')}: it may not import them, nor the run routes (src/runs/*.ts).`,
  from: { path: `^src/runs/${part}/` },
  to: { path: [`^src/runs/(${RUN_PARTS.slice(i + 1).join('|')})/`, '^src/runs/[^/]+$'] },
}));

module.exports = {
  forbidden: [
    ...runPartRules,
    {
      name: 'runs-durable-below-routes',
      severity: 'error',
      comment: 'src/runs/durable/ may not import the run routes (src/runs/*.ts): they stand on it.',
      from: { path: '^src/runs/durable/' },
      to: { path: '^src/runs/[^/]+$' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle: split the shared part out, or invert the dependency.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'ground-not-features',
      severity: 'error',
      comment:
        'common/, config/, database/ and protocol/ are below every feature: they may not import agents/, threads/, runs/, auth/, ops/ or playground/.',
      from: { path: '^src/(common|config|database|protocol)/' },
      to: { path: '^src/(agents|threads|runs|auth|ops|playground)/' },
    },
    {
      name: 'threads-not-runs',
      severity: 'error',
      comment: 'threads/ knows nothing of runs/: a run appends to a thread, not the other way round.',
      from: { path: '^src/threads/' },
      to: { path: '^src/runs/' },
    },
    {
      name: 'mastra-is-a-project',
      severity: 'error',
      comment:
        'src/mastra/ is the built-in agents as an ordinary Mastra project, the one new users copy: it uses Mastra and its own files, and of io-bridge only the scripted model it runs on offline.',
      from: { path: '^src/mastra/' },
      to: { path: '^src/', pathNot: ['^src/mastra/', '^src/agents/scripted-model\\.ts$'] },
    },
    {
      name: 'agents-not-threads-or-runs',
      severity: 'error',
      comment:
        'agents/ defines agents and their models; it knows nothing of the threads or runs that use them.',
      from: { path: '^src/agents/' },
      to: { path: '^src/(threads|runs)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    includeOnly: '^src/',
  },
};
