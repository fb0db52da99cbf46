import type { OpenAPIV3_1 } from 'openapi-types';
import { DEFAULT_MAX_ITEMS } from '../api/body-bounds.js';

/** One operation of the OpenAPI document that takes a JSON body. */
export interface BodyOperation {
  method: string;
  /** Path with every parameter filled in. */
  url: string;
  /** The documented path, for messages. */
  path: string;
  schema: OpenAPIV3_1.SchemaObject;
}

/** A hostile body for one operation, with what it is made of. */
export interface LargeBody {
  label: string;
  payload: string;
}

/** Items no array of the API accepts in bulk: each fails a different way. */
function wrongItem(i: number): unknown {
  switch (i % 4) {
    case 0:
      return true;
    case 1:
      return { wrong: [i] };
    case 2:
      return [i];
    default:
      return i + 0.5;
  }
}

function isArraySchema(schema: OpenAPIV3_1.SchemaObject | undefined): boolean {
  if (!schema) return false;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.includes('array')) return true;
  const union = (schema.anyOf ?? schema.oneOf ?? []) as OpenAPIV3_1.SchemaObject[];
  return union.some((s) => isArraySchema(s));
}

function maxItemsOf(schema: OpenAPIV3_1.SchemaObject): number {
  if (typeof schema.maxItems === 'number') return schema.maxItems;
  const union = (schema.anyOf ?? schema.oneOf ?? []) as OpenAPIV3_1.SchemaObject[];
  for (const branch of union) if (typeof branch.maxItems === 'number') return branch.maxItems;
  return DEFAULT_MAX_ITEMS;
}

/** Every operation of an OpenAPI document that takes a JSON body (the /api/v1 copies are hidden). */
export function bodyOperations(doc: OpenAPIV3_1.Document): BodyOperation[] {
  const operations: BodyOperation[] = [];
  for (const [path, methods] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(methods ?? {})) {
      const body = (op as OpenAPIV3_1.OperationObject).requestBody as OpenAPIV3_1.RequestBodyObject | undefined;
      const schema = body?.content?.['application/json']?.schema as OpenAPIV3_1.SchemaObject | undefined;
      if (!schema) continue;
      operations.push({ method: method.toUpperCase(), path, url: path.replace(/\{[^}]+\}/g, 'x1'), schema });
    }
  }
  return operations;
}

/**
 * The largest bodies of wrong items an operation allows, and the same just over its bounds:
 * - every array field at its bound, filled with wrong items (the schema validator sees them all);
 * - one array field far over its bound, up to the body limit;
 * - a body nested as deep as the body limit allows.
 */
export function largeBodies(op: BodyOperation, bodyLimitBytes: number): LargeBody[] {
  const properties = Object.entries(op.schema.properties ?? {}) as [string, OpenAPIV3_1.SchemaObject][];
  const arrays = properties.filter(([, schema]) => isArraySchema(schema));
  const bodies: LargeBody[] = [];
  if (arrays.length > 0) {
    const atBound: Record<string, unknown[]> = {};
    for (const [name, schema] of arrays) {
      atBound[name] = Array.from({ length: maxItemsOf(schema) }, (_, i) => wrongItem(i));
    }
    const payload = JSON.stringify(atBound);
    if (payload.length <= bodyLimitBytes) bodies.push({ label: 'every array at its bound, wrong items', payload });
    const [first] = arrays[0] as [string, OpenAPIV3_1.SchemaObject];
    // `true,` is five bytes: as many items as the body limit holds.
    const count = Math.floor((bodyLimitBytes - first.length - 10) / 5);
    bodies.push({
      label: `${first} over its bound (${count} items)`,
      payload: `{"${first}":[${'true,'.repeat(count - 1)}true]}`,
    });
  }
  const depth = Math.floor((bodyLimitBytes - 10) / 2);
  bodies.push({ label: `nested ${depth} deep`, payload: `${'['.repeat(depth)}${']'.repeat(depth)}` });
  return bodies;
}
