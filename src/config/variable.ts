import { z } from 'zod';

// What every part of the variable table (the `*-variables.ts` files) is made of; config.ts assembles
// the parts into VARIABLES, from which the schema, AppConfig and docs/configuration.md derive.

/** A yes/no variable: `true`, `1`, `yes` (or `false`, `0`, `no`). */
export const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
/** A whole number within bounds, given as text. */
export const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

type Section = 'general' | 'jwt' | 'header';

/** One environment variable: everything about it, in one place. */
export type Variable = {
  /** Its validation; a default is the schema's `.default()`, a transformation its `.transform()`. */
  schema: z.ZodType;
  /** Where AppConfig holds the value (a dotted path, or several); none: only DERIVED values read it. */
  at?: string | readonly string[];
  /** What it means: docs/configuration.md shows it as is. */
  doc: string;
  /** The Default column of docs/configuration.md for a variable without a default; `unset` when not given. */
  unset?: string;
  /** Its table in docs/configuration.md: `general` (Variables), or an AUTH_MODE's (`jwt`, `header`). */
  table?: Section;
};
