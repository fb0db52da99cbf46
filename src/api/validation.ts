import { Ajv, type ErrorObject, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyRequest, FastifySchemaCompiler } from 'fastify';
import { validationError } from '../errors.js';
import { CHECKS, type CheckName, type CheckContext } from '../domain/checks.js';

/**
 * Builds the Ajv instances behind every route: bodies are validated strictly (no coercion, every
 * problem reported), query strings and path parameters with type coercion.
 */
export function buildValidatorCompiler(context: CheckContext): FastifySchemaCompiler<unknown> {
  const common: Options = { allErrors: true, strict: false, verbose: true, removeAdditional: false };
  const bodyAjv = withKeywords(new Ajv({ ...common, coerceTypes: false, useDefaults: false }), context);
  const paramAjv = withKeywords(new Ajv({ ...common, coerceTypes: 'array', useDefaults: true }), context);
  return ({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? bodyAjv : paramAjv;
    return ajv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
  };
}

function withKeywords(ajv: Ajv, context: CheckContext): Ajv {
  addFormats.default(ajv, ['email', 'date-time', 'uri']);
  ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
  ajv.addKeyword({ keyword: 'example' });
  ajv.addKeyword({
    keyword: 'x-check',
    schemaType: 'string',
    errors: true,
    validate: function check(
      this: unknown,
      name: CheckName,
      data: unknown,
      parentSchema?: { type?: unknown },
    ): boolean {
      // Nullable(checked(...)) allows null: the rule is about the value, not its absence.
      if (data === null && Array.isArray(parentSchema?.type) && parentSchema.type.includes('null')) return true;
      const problem = CHECKS[name](data, context);
      if (problem === null) return true;
      (check as unknown as { errors: Partial<ErrorObject>[] }).errors = [
        { keyword: 'x-check', message: problem, params: { check: name } },
      ];
      return false;
    },
  });
  return ajv;
}

/** `/tools/0/url` -> `tools[0].url`. */
export function fieldName(instancePath: string, root: string): string {
  if (instancePath === '') return root;
  let name = '';
  for (const raw of instancePath.slice(1).split('/')) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    name += /^\d+$/.test(part) ? `[${part}]` : name === '' ? part : `.${part}`;
  }
  return name;
}

function joinField(base: string, prop: string, root: string): string {
  return base === root ? prop : `${base}.${prop}`;
}

const ARTICLE: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'an integer',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

function describeTypes(types: unknown): string {
  const list = Array.isArray(types) ? types : String(types).split(',');
  return list.map((t) => ARTICLE[String(t)] ?? String(t)).join(' or ');
}

function describeBranch(schema: Record<string, unknown>): string {
  if (schema['x-message']) return String(schema['x-message']).replace(/^must be /, '');
  if ('const' in schema) return JSON.stringify(schema.const);
  if (schema.type) return describeTypes(schema.type);
  return 'another form';
}

function message(error: ErrorObject, root: string): string {
  const field = fieldName(error.instancePath, root);
  const custom = (error.parentSchema as Record<string, unknown> | undefined)?.['x-message'];
  if (custom && error.keyword !== 'required' && error.keyword !== 'x-check') return `${field} ${String(custom)}`;
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return `${joinField(field, String(p.missingProperty), root)} is required`;
    case 'type':
      return `${field} must be ${describeTypes(p.type)}`;
    case 'enum':
      return `${field} must be one of: ${(p.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'const':
      return `${field} must be ${JSON.stringify(p.allowedValue)}`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return `${field} must be ${String(p.comparison)} ${String(p.limit)}`;
    case 'minLength':
      return p.limit === 1 ? `${field} must not be empty` : `${field} must be at least ${String(p.limit)} characters`;
    case 'maxLength':
      return `${field} must be at most ${String(p.limit)} characters`;
    case 'minItems':
      return `${field} must have at least ${String(p.limit)} item${p.limit === 1 ? '' : 's'}`;
    case 'maxItems':
      return `${field} must have at most ${String(p.limit)} item${p.limit === 1 ? '' : 's'}`;
    case 'minProperties':
      return `${field} must not be empty`;
    case 'format':
      return `${field} must be a valid ${String(p.format)}`;
    case 'pattern':
      return `${field} has an invalid format`;
    case 'anyOf':
    case 'oneOf': {
      const branches = (error.schema as Record<string, unknown>[] | undefined) ?? [];
      return `${field} must be ${branches.map(describeBranch).join(' or ')}`;
    }
    default:
      return `${field} ${error.message ?? 'is invalid'}`;
  }
}

/**
 * Where a union fails, keeps only the errors of the one branch whose type fits the value, so that
 * `tools[0].url` is reported instead of "tools[0] must be a string or an object".
 */
function collapseUnions(errors: ErrorObject[]): ErrorObject[] {
  let result = [...errors];
  const unions = errors
    .filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf')
    .sort((a, b) => a.schemaPath.length - b.schemaPath.length);
  for (const union of unions) {
    if (!result.includes(union)) continue;
    const prefix = `${union.schemaPath}/`;
    // The same union fails once per array item: keep each item's errors with its own union.
    const inner = result.filter(
      (e) =>
        e.schemaPath.startsWith(prefix) &&
        (e.instancePath === union.instancePath || e.instancePath.startsWith(`${union.instancePath}/`)),
    );
    const branches = new Map<string, ErrorObject[]>();
    for (const e of inner) {
      const branch = e.schemaPath.slice(prefix.length).split('/')[0] ?? '';
      branches.set(branch, [...(branches.get(branch) ?? []), e]);
    }
    const fitting = [...branches.values()].filter(
      (errs) =>
        !errs.some((e) => e.instancePath === union.instancePath && (e.keyword === 'type' || e.keyword === 'const')),
    );
    result = result.filter((e) => !inner.includes(e));
    if (fitting.length === 1 && fitting[0]) {
      const at = result.indexOf(union);
      result.splice(at, 1, ...fitting[0]);
    }
  }
  return result;
}

/** Turns Ajv errors into the contract's `errors`: one sentence per problem, naming the field. */
export function formatValidationErrors(errors: ErrorObject[] | readonly unknown[], context?: string): string[] {
  const root = context === 'querystring' ? 'query' : context === 'params' ? 'path' : 'body';
  const lines = collapseUnions(errors as ErrorObject[]).map((e) => message(e, root));
  return [...new Set(lines)];
}

/**
 * For routes declared with `attachValidation: true`: throws one validation error carrying the
 * schema's problems and the route's own cross-field problems together.
 */
export function assertValid(request: FastifyRequest, more: string[] = []): void {
  const failed = request.validationError as
    (Error & { validation?: ErrorObject[]; validationContext?: string }) | undefined;
  const schemaErrors = failed?.validation ? formatValidationErrors(failed.validation, failed.validationContext) : [];
  const all = [...new Set([...schemaErrors, ...more])];
  if (all.length > 0) throw validationError(all);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
