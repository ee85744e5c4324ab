import Ajv from 'ajv';

const ajv = new Ajv({ strict: false });

/** Whether `schema` is an object and a valid JSON Schema (tool parameters, structured output). */
export function isJsonSchemaObject(schema: unknown): schema is Record<string, unknown> {
  return (
    typeof schema === 'object' &&
    schema !== null &&
    !Array.isArray(schema) &&
    ajv.validateSchema(schema) === true
  );
}
