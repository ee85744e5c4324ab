import { z } from 'zod';
import { AGENT_VARIABLES, Variable, VARIABLES } from './config';

/** The configuration tables of docs/configuration.md, in the order they appear: Variables, then AUTH_MODE=jwt and =header. */
export const CONFIG_SECTIONS = ['general', 'jwt', 'header'] as const;
type Section = (typeof CONFIG_SECTIONS)[number];

const HEADER = ['Variable', 'Default', 'Meaning'];

/** The Default column: the schema's default, else what being unset means. */
function defaultCell(variable: Variable): string {
  const schema = variable.schema;
  if (schema instanceof z.ZodDefault) return `\`${String(schema.def.defaultValue)}\``;
  return variable.unset ?? 'unset';
}

/** The rows of one configuration table, as cells (Variable, Default, Meaning), from the definitions. */
export function configTableRows(section: Section): string[][] {
  const rows = Object.entries(VARIABLES as Record<string, Variable>)
    .filter(([, variable]) => (variable.table ?? 'general') === section)
    .map(([name, variable]) => [`\`${name}\``, defaultCell(variable), variable.doc]);
  if (section === 'general') {
    rows.push([AGENT_VARIABLES.names.map((n) => `\`${n}\``).join(', '), 'unset', AGENT_VARIABLES.doc]);
  }
  return rows;
}

type Table = { start: number; end: number; rows: string[][] };

const cells = (line: string) =>
  line
    .trim()
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((cell) => cell.trim());

/** The configuration tables of a markdown text (header `| Variable | Default | Meaning |`), by line range. */
function findTables(markdown: string): Table[] {
  const lines = markdown.split('\n');
  const tables: Table[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].startsWith('|') || cells(lines[i]).join('|') !== HEADER.join('|')) continue;
    let end = i + 2;
    while (end < lines.length && lines[end].startsWith('|')) end++;
    tables.push({ start: i, end, rows: lines.slice(i + 2, end).map(cells) });
    i = end;
  }
  return tables;
}

/** The rows of a page's configuration tables, as cells. */
export function readConfigTables(markdown: string): string[][][] {
  return findTables(markdown).map((table) => table.rows);
}

/** The markdown with its configuration tables rewritten from the definitions (columns unaligned: prettier aligns them). */
export function writeConfigTables(markdown: string): string {
  const tables = findTables(markdown);
  if (tables.length !== CONFIG_SECTIONS.length) {
    throw new Error(`expected ${CONFIG_SECTIONS.length} configuration tables, found ${tables.length}`);
  }
  const lines = markdown.split('\n');
  for (let t = tables.length - 1; t >= 0; t--) {
    const row = (c: string[]) => `| ${c.join(' | ')} |`;
    const rendered = [
      row(HEADER),
      row(HEADER.map(() => '---')),
      ...configTableRows(CONFIG_SECTIONS[t]).map(row),
    ];
    lines.splice(tables[t].start, tables[t].end - tables[t].start, ...rendered);
  }
  return lines.join('\n');
}
