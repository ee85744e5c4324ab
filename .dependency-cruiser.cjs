/**
 * The layer rules of src/ (docs/architecture.md), checked by `npm run lint:layers` in `npm run check`
 * and so in CI. Features are agents/, threads/ and runs/; protocol/ holds the AG-UI wire types every
 * feature may use; common/, config/ and database/ are the ground they stand on.
 */
module.exports = {
  forbidden: [
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
