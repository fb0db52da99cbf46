/**
 * Array bounds of request bodies, checked before the schema validator runs.
 *
 * Validating every item of a huge array and describing every wrong one costs time in proportion to
 * its length, on the event loop every account shares. An array longer than its schema allows
 * (its `maxItems`, else DEFAULT_MAX_ITEMS) and than DEFAULT_MAX_ITEMS is refused at once, naming
 * the field and the bound, without looking at a single item.
 */

/** The bound of an array whose schema declares none. */
export const DEFAULT_MAX_ITEMS = 1000;

/** How deep the walk follows a body (deeper data is the schema validator's business). */
const MAX_DEPTH = 32;

interface Schema {
  type?: unknown;
  properties?: Record<string, Schema>;
  items?: Schema | Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  maxItems?: number;
}

export interface OversizedArray {
  /** JSON pointer of the array, as Ajv reports instance paths (`/tools`). */
  instancePath: string;
  limit: number;
}

function typeOf(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  return typeof value;
}

/** The branch of a union that describes `value`'s kind, if any. */
function branchFor(schema: Schema, value: unknown): Schema | undefined {
  const union = schema.anyOf ?? schema.oneOf;
  if (!union) return schema;
  const kind = typeOf(value);
  const fits = (s: Schema): boolean => {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    return types.includes(kind) || (kind === 'number' && types.includes('integer'));
  };
  const branch = union.find(fits) ?? union.find((s) => s.anyOf !== undefined || s.oneOf !== undefined);
  return branch ? branchFor(branch, value) : undefined;
}

/** The first array of `data` over its bound, or undefined when every array is within its own. */
export function findOversizedArray(schema: unknown, data: unknown): OversizedArray | undefined {
  return walk(schema as Schema | undefined, data, '', 0);
}

function walk(schema: Schema | undefined, data: unknown, path: string, depth: number): OversizedArray | undefined {
  if (depth > MAX_DEPTH || typeof data !== 'object' || data === null) return undefined;
  const own = schema ? branchFor(schema, data) : undefined;
  if (Array.isArray(data)) {
    const limit = typeof own?.maxItems === 'number' ? own.maxItems : DEFAULT_MAX_ITEMS;
    // A few items over a small bound are the schema validator's to describe (its own wording).
    if (data.length > Math.max(limit, DEFAULT_MAX_ITEMS)) return { instancePath: path, limit };
    const items = own && !Array.isArray(own.items) ? own.items : undefined;
    for (let i = 0; i < data.length; i++) {
      const found = walk(items, data[i], `${path}/${i}`, depth + 1);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, value] of Object.entries(data)) {
    if (typeof value !== 'object' || value === null) continue;
    const found = walk(
      own?.properties?.[key],
      value,
      `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`,
      depth + 1,
    );
    if (found) return found;
  }
  return undefined;
}
