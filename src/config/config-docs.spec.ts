import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { loadConfig, Variable, VARIABLES } from './config';
import { configTableRows, readConfigTables, CONFIG_SECTIONS, writeConfigTables } from './config-docs';
import { AGENT_SOURCE_VARIABLES, MODEL_VARIABLES } from './agent-variables';
import { AUTH_VARIABLES } from './auth-variables';
import { MEMORY_VARIABLES, REQUEST_VARIABLES, RUN_VARIABLES } from './run-variables';
import { DATABASE_VARIABLES, EDGE_VARIABLES, SERVER_VARIABLES, TRACING_VARIABLES } from './server-variables';

const PAGE = readFileSync(join(__dirname, '..', '..', 'docs', 'configuration.md'), 'utf8');
const definitions = Object.entries(VARIABLES as Record<string, Variable>);

describe('the configuration tables of docs/configuration.md and the variable definitions', () => {
  it('list exactly the variables defined, with the same defaults and meanings (npm run config:docs writes them)', () => {
    expect(readConfigTables(PAGE)).toEqual(CONFIG_SECTIONS.map(configTableRows));
  });

  it('every variable appears once, in the table of its section', () => {
    const listed = readConfigTables(PAGE)
      .flat()
      .flatMap(([names]) => [...names.matchAll(/`([A-Z0-9_<>]+)`/g)].map((m) => m[1]));
    const defined = [...definitions.map(([name]) => name), 'AGENT_<ID>_MODEL', 'AGENT_<ID>_INSTRUCTIONS'];
    expect([...listed].sort()).toEqual([...defined].sort());
  });

  it('the Default column is the default loadConfig applies', () => {
    const defaults = loadConfig({});
    const shown = new Map(
      readConfigTables(PAGE)
        .flat()
        .map(([name, value]) => [name, value]),
    );
    for (const [name, variable] of definitions) {
      if (!(variable.schema instanceof z.ZodDefault)) {
        expect({ name, shown: shown.get(`\`${name}\``) }).toEqual({
          name,
          shown: expect.not.stringMatching(/^`/),
        });
        continue;
      }
      const at = typeof variable.at === 'string' ? variable.at : variable.at?.[0];
      const value = at?.split('.').reduce<any>((node, key) => node[key], defaults);
      if (at)
        expect({ name, shown: shown.get(`\`${name}\``) }).toEqual({ name, shown: `\`${String(value)}\`` });
    }
  });

  it('writing the tables into the page changes no row', () => {
    expect(readConfigTables(writeConfigTables(PAGE))).toEqual(readConfigTables(PAGE));
  });

  it('each variable is defined in one part of the table (a second definition would replace the first unseen)', () => {
    const parts = [
      SERVER_VARIABLES,
      DATABASE_VARIABLES,
      MODEL_VARIABLES,
      REQUEST_VARIABLES,
      RUN_VARIABLES,
      MEMORY_VARIABLES,
      AGENT_SOURCE_VARIABLES,
      EDGE_VARIABLES,
      AUTH_VARIABLES,
      TRACING_VARIABLES,
    ];
    expect(parts.flatMap((part) => Object.keys(part))).toEqual(Object.keys(VARIABLES));
  });

  it('each variable has a meaning, and no two variables fill the same place of AppConfig', () => {
    const places = definitions.flatMap(([, v]) => (v.at === undefined ? [] : [v.at].flat()));
    expect(places.length).toBe(new Set(places).size);
    for (const [name, variable] of definitions)
      expect({ name, doc: variable.doc.length > 0 }).toEqual({ name, doc: true });
  });
});
