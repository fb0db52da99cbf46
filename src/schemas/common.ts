import { Type, type Static, type TSchema, type TUnsafe, type SchemaOptions } from '@sinclair/typebox';
import type { CheckName } from '../domain/checks.js';

/** A string limited to the given values; reported as "must be one of: ...". */
export function StringEnum<const T extends readonly string[]>(
  values: T,
  options: SchemaOptions = {},
): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

/**
 * T or null. A schema with one plain `type` becomes `type: [T, "null"]` rather than a union: the
 * response serializer handles that directly instead of trying each branch of an anyOf.
 */
export function Nullable<T extends TSchema>(schema: T, options: SchemaOptions = {}): TUnsafe<Static<T> | null> {
  const type = (schema as { type?: unknown }).type;
  if (typeof type === 'string' && !('enum' in schema)) {
    return Type.Unsafe<Static<T> | null>({ ...schema, ...options, type: [type, 'null'] });
  }
  return Type.Unsafe<Static<T> | null>(Type.Union([schema, Type.Null()], options));
}

/** Marks a schema with a domain rule from src/domain/checks.ts. */
export function checked<T extends TSchema>(schema: T, check: CheckName): T {
  // A voice is also put through the configured voice aliases before it is checked (leniency.ts).
  return { ...schema, 'x-check': check, ...(check === 'voice' ? { 'x-normalize': 'voice' } : {}) };
}

/** An object whose keys are the caller's own (request_data, metadata, headers, ...). */
export const FreeObject = (options: SchemaOptions = {}) =>
  Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true, ...options });

export const ErrorResponse = Type.Object(
  {
    status: Type.Literal('error'),
    message: Type.String(),
    code: Type.String({ description: 'Machine-readable error code, e.g. VALIDATION_ERROR, NOT_FOUND' }),
    errors: Type.Optional(Type.Array(Type.String(), { description: 'One sentence per problem, naming the field' })),
    request_id: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

/** Error replies every authenticated route may give. */
export const errorResponses = {
  400: ErrorResponse,
  401: ErrorResponse,
  404: ErrorResponse,
  500: ErrorResponse,
};

export const SuccessMessage = Type.Object({ status: Type.Literal('success'), message: Type.String() });

export const IdParams = Type.Object({ id: Type.String() });
