/**
 * Turns the user's analysis_schema (seed 2.1: "map of desired output field name to a type hint or
 * format description") into a JSON Schema the model's answer is validated against, and coerces
 * the answers of the analyze endpoint to the type their question asked for.
 */

export type JsonSchema = Record<string, unknown>;

/** Type words a hint may be, or start with ("boolean - whether they agreed"). */
const TYPE_WORDS: Record<string, JsonSchema> = {
  string: { type: 'string' },
  str: { type: 'string' },
  text: { type: 'string' },
  boolean: { type: 'boolean' },
  bool: { type: 'boolean' },
  number: { type: 'number' },
  float: { type: 'number' },
  double: { type: 'number' },
  decimal: { type: 'number' },
  integer: { type: 'integer' },
  int: { type: 'integer' },
  date: { type: 'string', format: 'date', description: 'A date as YYYY-MM-DD' },
  'yyyy-mm-dd': { type: 'string', format: 'date', description: 'A date as YYYY-MM-DD' },
  datetime: { type: 'string', format: 'date-time', description: 'An ISO 8601 date and time' },
  'date-time': { type: 'string', format: 'date-time', description: 'An ISO 8601 date and time' },
  timestamp: { type: 'string', format: 'date-time', description: 'An ISO 8601 date and time' },
  email: { type: 'string', format: 'email' },
};

/**
 * Every leaf may also be null: a call often does not tell (no date was agreed), and a model
 * forced to fill a field invents a value, which is worse than an honest null.
 */
function nullable(schema: JsonSchema): JsonSchema {
  const type = schema.type;
  return typeof type === 'string' ? { ...schema, type: [type, 'null'] } : schema;
}

/** One hint to a schema, without the null allowance (arrays and objects get theirs from the caller). */
function hintSchema(hint: unknown): JsonSchema {
  if (Array.isArray(hint)) {
    // ["string"] or [{...}]: an array of the first element's kind; [] is a list of strings.
    return { type: 'array', items: hint.length ? leafOrNested(hint[0]) : { type: 'string' } };
  }
  if (hint !== null && typeof hint === 'object') return objectSchema(hint as Record<string, unknown>);
  if (typeof hint === 'boolean') return { type: 'boolean' };
  if (typeof hint === 'number') return Number.isInteger(hint) ? { type: 'integer' } : { type: 'number' };
  if (typeof hint !== 'string') return { type: 'string' };
  const text = hint.trim();
  const lower = text.toLowerCase();
  const exact = TYPE_WORDS[lower];
  if (exact) return { ...exact };
  // "string[]" / "number[]": arrays spelled TypeScript-style.
  const list = /^([a-z-]+)\[\]$/.exec(lower);
  if (list?.[1] && TYPE_WORDS[list[1]]) return { type: 'array', items: { ...TYPE_WORDS[list[1]] } };
  // A type word followed by a description: "boolean - did they confirm", "integer: how many seats".
  const lead = /^([a-z-]+)\s*[-:,(]\s*(.+)$/s.exec(text);
  const word = lead?.[1]?.toLowerCase();
  if (lead?.[2] && word && TYPE_WORDS[word]) return { ...TYPE_WORDS[word], description: lead[2].replace(/\)$/, '') };
  // Anything else is a description of a text value (or an unknown type word): a string.
  return text ? { type: 'string', description: text } : { type: 'string' };
}

function leafOrNested(hint: unknown): JsonSchema {
  return nullable(hintSchema(hint));
}

function objectSchema(hints: Record<string, unknown>): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const [key, hint] of Object.entries(hints)) properties[key] = leafOrNested(hint);
  // Every field is required (it may be null): the answer always has the same shape, which is
  // what a consumer of the webhook body wants.
  return { type: 'object', properties, required: Object.keys(hints), additionalProperties: false };
}

/** The JSON Schema of an analysis_schema object: one required (nullable) property per field. */
export function schemaFromHints(hints: Record<string, unknown>): JsonSchema {
  return objectSchema(hints);
}

/** The JSON Schema for one analyze question's type hint ("boolean", "string", "human or voicemail"). */
export function schemaForType(hint: string | undefined): JsonSchema {
  return hintSchema(hint ?? 'string');
}

const YES = new Set(['yes', 'true', 'y', '1', 'yeah', 'yep', 'correct', 'affirmative']);
const NO = new Set(['no', 'false', 'n', '0', 'nope', 'incorrect', 'negative']);

/**
 * Coerces a model's answer to the schema's type: models often write "yes" for a boolean or
 * "42" for a number. What cannot be coerced becomes null rather than a value of the wrong type.
 */
export function coerce(value: unknown, schema: JsonSchema): unknown {
  if (value === undefined || value === null) return null;
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'boolean': {
      if (typeof value === 'boolean') return value;
      if (typeof value === 'number') return value !== 0;
      const word = String(value).trim().toLowerCase().replace(/[.!]$/, '');
      if (YES.has(word) || word.startsWith('yes')) return true;
      if (NO.has(word) || word.startsWith('no')) return false;
      return null;
    }
    case 'number':
    case 'integer': {
      // "3 seats", "$1,200": the first number written in the answer.
      const found = typeof value === 'number' ? null : /[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?/i.exec(String(value));
      const n = typeof value === 'number' ? value : found ? Number(found[0].replace(/,/g, '')) : NaN;
      if (!Number.isFinite(n)) return null;
      return type === 'integer' ? Math.round(n) : n;
    }
    case 'array': {
      const items = (schema.items as JsonSchema | undefined) ?? { type: 'string' };
      return (Array.isArray(value) ? value : [value]).map((v) => coerce(v, items));
    }
    case 'object':
      return typeof value === 'object' ? value : null;
    default:
      return typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  }
}
