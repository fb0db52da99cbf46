import { normalizeLanguage } from '../domain/language.js';
import { isRecord } from '../domain/records.js';

/** What the rule needs besides the schema. */
export interface Leniency {
  /** Whether a value passes a (sub)schema: the body validator's Ajv, compiled once per schema. */
  accepts: (schema: Record<string, unknown>, value: unknown) => boolean;
  /** OPENLINE_VOICE_ALIASES: a voice the client names (lower case) -> a voice of this server. */
  voiceAliases?: ReadonlyMap<string, string> | undefined;
}

/**
 * The leniency rule of every request body (CONTRACT.md section 4): real clients of the hosted API
 * send what it accepts, so before a body is validated, an optional field whose value is `null`,
 * `""`, `{}`, `[]` or `[{}]` and which the field's schema would refuse is removed, as if it had
 * not been given; a number or a boolean sent as a string (`"150"`, `"true"`, as forms, no-code
 * tools and the hosted API's own examples send them), or a number where a string is due
 * (`"area_code": 415`), takes the type its field's schema accepts, when that value passes it
 * (`"fast"` stays a string, and an error naming the field; a number becomes a string only for a
 * field of a set form, a pattern or a check, never free text); and values the schema marks for
 * normalisation (`x-normalize`: language codes) are put in their canonical form. A value the field accepts keeps its meaning (an update's
 * `null` or `""` that clears a field, as the seed has it); required fields are left alone, so
 * their absence stays an error.
 *
 * Driven by the route's schema, so every endpoint gets the same rule. Linear in the body: each
 * value is visited once (arrays are bounded before this runs, see body-bounds.ts).
 */
export function applyLeniency(schema: unknown, data: unknown, lenient: Leniency): void {
  if (!isRecord(schema)) return;
  const objectSchema = objectBranch(schema, data);
  if (objectSchema && isRecord(data)) {
    const properties = objectSchema.properties as Record<string, unknown>;
    const required = new Set(Array.isArray(objectSchema.required) ? (objectSchema.required as string[]) : []);
    for (const [key, property] of Object.entries(properties)) {
      if (!Object.hasOwn(data, key) || !isRecord(property)) continue;
      const value = data[key];
      if (!required.has(key) && emptyLike(value) && !lenient.accepts(property, value)) {
        delete data[key];
        continue;
      }
      const retyped = retypedScalar(value, property);
      if (retyped !== undefined && !lenient.accepts(property, value) && lenient.accepts(property, retyped)) {
        data[key] = retyped;
        continue;
      }
      const normalizer = normalizerOf(property);
      if (normalizer === 'language' && typeof value === 'string') {
        data[key] = normalizeLanguage(value) ?? value;
        continue;
      }
      if (normalizer === 'voice' && typeof value === 'string') {
        data[key] = lenient.voiceAliases?.get(value.trim().toLowerCase()) ?? value;
        continue;
      }
      applyLeniency(property, value, lenient);
    }
    return;
  }
  const items = schema.items;
  if (Array.isArray(data) && isRecord(items) && schema['x-items-checked-by-route'] !== true) {
    for (const item of data) applyLeniency(items, item, lenient);
  }
}

/**
 * An update body (a schema marked `x-update`) must name a field of its resource. One wrapped as
 * GET returns the resource (`{"tool": {...}}`, or the whole GET answer) is unwrapped first. Returns
 * the fields expected when the body names none of them (after the leniency rule), else undefined.
 */
export function missingUpdateFields(schema: unknown, data: unknown, lenient: Leniency): string[] | undefined {
  if (!isRecord(schema) || schema['x-update'] !== true || !isRecord(schema.properties) || !isRecord(data)) {
    return undefined;
  }
  const fields = Object.keys(schema.properties);
  const namesAField = (body: Record<string, unknown>) => fields.some((field) => Object.hasOwn(body, field));
  if (namesAField(data)) return undefined;
  // The fields may sit one level down (`{"tool": {...}}`) or two: the hosted GET of a tool answers
  // `{"status", "tool": {"tool_id", "tool": {...}}}`.
  const wrapped = (body: Record<string, unknown>, depth: number): Record<string, unknown> | undefined => {
    for (const inner of Object.values(body)) {
      if (!isRecord(inner)) continue;
      if (namesAField(inner)) return inner;
      const deeper = depth > 1 ? wrapped(inner, depth - 1) : undefined;
      if (deeper) return deeper;
    }
    return undefined;
  };
  const inner = wrapped(data, 2);
  if (!inner) return fields;
  for (const key of Object.keys(data)) delete data[key];
  Object.assign(data, inner);
  applyLeniency(schema, data, lenient);
  return namesAField(data) ? undefined : fields;
}

/** The schema's object form for `data`: itself, or the object branch of a union. */
function objectBranch(schema: Record<string, unknown>, data: unknown): Record<string, unknown> | undefined {
  if (isRecord(schema.properties)) return schema;
  if (!isRecord(data)) return undefined;
  const branches = (schema.anyOf ?? schema.oneOf) as unknown;
  if (!Array.isArray(branches)) return undefined;
  return branches.find((b): b is Record<string, unknown> => isRecord(b) && isRecord(b.properties));
}

/** The `x-normalize` mark of a schema or of a branch of its union. */
function normalizerOf(schema: Record<string, unknown>): unknown {
  if (schema['x-normalize'] !== undefined) return schema['x-normalize'];
  const branches = (schema.anyOf ?? schema.oneOf) as unknown;
  return Array.isArray(branches)
    ? branches.map((b) => (isRecord(b) ? b['x-normalize'] : undefined)).find(Boolean)
    : undefined;
}

/** A decimal number written as a JSON number. */
const NUMERIC = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** A string of a set form (an area code, a postal code, a phone number), not free text. */
const formedString = (schema: Record<string, unknown>): boolean =>
  schema.type === 'string' &&
  (schema.pattern !== undefined || schema.format !== undefined || schema['x-check'] !== undefined);

/**
 * The other type a scalar may have been meant as for its field: a string's number or boolean,
 * a number's string; undefined for anything else.
 */
function retypedScalar(value: unknown, schema: Record<string, unknown>): number | boolean | string | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && formedString(schema) ? String(value) : undefined;
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (NUMERIC.test(text)) return Number(text);
  const lower = text.toLowerCase();
  return lower === 'true' ? true : lower === 'false' ? false : undefined;
}

const isEmptyObject = (value: unknown): boolean => isRecord(value) && Object.keys(value).length === 0;

/** null, "", {}, [] and [{}]: what clients send for "not given". */
function emptyLike(value: unknown): boolean {
  if (value === null || value === '' || isEmptyObject(value)) return true;
  return Array.isArray(value) && (value.length === 0 || (value.length === 1 && isEmptyObject(value[0])));
}
