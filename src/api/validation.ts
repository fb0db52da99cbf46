import { isRecord } from '../domain/records.js';
import { once } from '../domain/once.js';
import { Ajv, type ErrorObject, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyRequest, FastifySchemaCompiler } from 'fastify';
import { validationError } from '../errors.js';
import { CHECKS, type CheckName, type CheckContext } from '../domain/checks.js';
import { findOversizedArray } from './body-bounds.js';
import { applyLeniency, missingUpdateFields, type Leniency } from './leniency.js';

/**
 * Builds the Ajv instances behind every route: bodies are validated strictly (no coercion, every
 * problem reported), query strings and path parameters with type coercion. Each route's validator
 * is compiled when it first validates: the API has hundreds of schemas and a process answers few
 * of them soon, so compiling them all made every start (and every test's app) seconds slower.
 */
export function buildValidatorCompiler(context: CheckContext): FastifySchemaCompiler<unknown> {
  const common: Options = { allErrors: true, strict: false, verbose: true, removeAdditional: false };
  const bodyAjv = withKeywords(new Ajv({ ...common, coerceTypes: false, useDefaults: false }), context);
  const paramAjv = withKeywords(new Ajv({ ...common, coerceTypes: 'array', useDefaults: true }), context);
  const lenient: Leniency = { accepts: acceptsWith(bodyAjv), voiceAliases: context.voiceAliases };
  return ({ schema, httpPart }) => {
    if (httpPart !== 'body')
      return whenUsed(
        () => paramAjv.compile(safeIntegers(schema) as object),
        httpPart === 'querystring' ? queryPreparerOf(schema) : undefined,
      ) as ReturnType<FastifySchemaCompiler<unknown>>;
    return boundedValidator(
      whenUsed(() => bodyAjv.compile(withoutRouteItems(schema))),
      schema,
      lenient,
    );
  };
}

/**
 * The schema with every whole number bounded by what storage counts exactly (±2^53 − 1), unless
 * it says less: a query string's `1e309` coerces to Infinity and `99999999999999999999` to a
 * number SQLite cannot take as an OFFSET, and either was a 500 instead of a 400 naming it. A copy:
 * the OpenAPI document keeps the schema as written.
 */
function safeIntegers(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(safeIntegers);
  if (!isRecord(schema)) return schema;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) copy[key] = safeIntegers(value);
  const types = Array.isArray(schema.type) ? (schema.type as unknown[]) : [schema.type];
  if (types.includes('integer')) {
    copy.maximum ??= Number.MAX_SAFE_INTEGER;
    copy.minimum ??= Number.MIN_SAFE_INTEGER;
  }
  return copy;
}

/** How people write yes and no in a query string (`?ascending=1`, `?inbound=TRUE`, `?completed=no`). */
const QUERY_BOOLEANS: Readonly<Record<string, string>> = {
  true: 'true',
  '1': 'true',
  yes: 'true',
  on: 'true',
  false: 'false',
  '0': 'false',
  no: 'false',
  off: 'false',
};

/**
 * Readies a query string before the parameter coercion: an optional parameter sent empty
 * (`?limit=&to_number=`, as forms and clients that write every key send it) is not given, as an
 * empty optional body field is (CONTRACT.md section 4); and boolean parameters' yes and no are read
 * the ways people write them. Anything else stays as sent, for the error that names the parameter.
 * Undefined when the query has no parameter either applies to.
 */
function queryPreparerOf(schema: unknown): ((data: unknown) => void) | undefined {
  const properties = isRecord(schema) && isRecord(schema.properties) ? schema.properties : {};
  const required = new Set(isRecord(schema) && Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const optional = Object.keys(properties).filter((key) => !required.has(key));
  const booleans = Object.keys(properties).filter((key) => {
    const property = properties[key];
    return isRecord(property) && property.type === 'boolean';
  });
  if (optional.length === 0 && booleans.length === 0) return undefined;
  return (data) => {
    if (!isRecord(data)) return;
    for (const key of optional) if (typeof data[key] === 'string' && data[key].trim() === '') delete data[key];
    for (const key of booleans) {
      const value = data[key];
      if (typeof value === 'string') data[key] = QUERY_BOOLEANS[value.trim().toLowerCase()] ?? value;
    }
  };
}

/** Accepts for the leniency rule: a field's own schema, compiled once and kept with it. */
function acceptsWith(ajv: Ajv): Leniency['accepts'] {
  const compiled = new WeakMap<object, AjvValidate>();
  return (schema, value) => {
    let validate = compiled.get(schema);
    if (!validate) compiled.set(schema, (validate = ajv.compile(withoutRouteItems(schema))));
    return validate(value) as boolean;
  };
}

type AjvValidate = ReturnType<Ajv['compile']>;

/** A validator as Fastify calls it: true or false, with the errors of the last call. */
interface Validator {
  (data: unknown): boolean;
  errors: ErrorObject[] | null;
}

/** A validator compiled by its first call; `prepare` readies the data before each validation. */
function whenUsed(compile: () => AjvValidate, prepare?: (data: unknown) => void): Validator {
  const compiled = once(compile);
  const run = (data: unknown): boolean => {
    prepare?.(data);
    const validate = compiled();
    const ok = validate(data) as boolean;
    run.errors = validate.errors ?? null;
    return ok;
  };
  run.errors = null as ErrorObject[] | null;
  return run;
}

/** The schema path of a body array refused for its length before any item was looked at. */
const OVERSIZED = '#/x-bounds';

/**
 * A route that takes its validation errors itself (`attachValidation`) and goes on to check the
 * body's items in its own code: an array over its bound is refused before that code runs.
 */
export function refuseOversizedBodies(request: FastifyRequest, _reply: unknown, done: (error?: Error) => void): void {
  const failed = request.validationError as (Error & { validation?: ErrorObject[] }) | undefined;
  if (failed?.validation?.some((e) => e.schemaPath === OVERSIZED)) {
    return done(validationError(formatValidationErrors(failed.validation)));
  }
  done();
}

/**
 * A body validator that refuses arrays over their bound before Ajv looks at any item (see
 * body-bounds.ts), so that the work of validating a body stays small whatever its length.
 */
function boundedValidator(
  validate: Validator,
  schema: unknown,
  lenient: Leniency,
): ReturnType<FastifySchemaCompiler<unknown>> {
  const bounded = (data: unknown): boolean => {
    const over = findOversizedArray(schema, data);
    if (over) {
      bounded.errors = [
        {
          keyword: 'maxItems',
          instancePath: over.instancePath,
          schemaPath: OVERSIZED,
          params: { limit: over.limit },
        },
      ];
      return false;
    }
    applyLeniency(schema, data, lenient);
    const expected = missingUpdateFields(schema, data, lenient);
    if (expected) {
      bounded.errors = [{ keyword: 'x-update', instancePath: '', schemaPath: '#/x-update', params: { expected } }];
      return false;
    }
    const ok = validate(data);
    bounded.errors = validate.errors;
    return ok;
  };
  bounded.errors = null as ErrorObject[] | null;
  return bounded as ReturnType<FastifySchemaCompiler<unknown>>;
}

/**
 * An array marked `x-items-checked-by-route` (campaign numbers: up to 100,000) keeps its bounds in
 * the schema validator, while its route checks the items itself, in slices that let other requests
 * run in between. The OpenAPI document still describes the items.
 */
function withoutRouteItems(schema: unknown): object {
  if (Array.isArray(schema)) return schema.map(withoutRouteItems);
  if (!isRecord(schema)) return schema as object;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    copy[key] = key === 'items' && schema['x-items-checked-by-route'] === true ? {} : withoutRouteItems(value);
  }
  return copy;
}

function withKeywords(ajv: Ajv, context: CheckContext): Ajv {
  addFormats.default(ajv, ['email', 'date-time', 'uri']);
  ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
  ajv.addKeyword({ keyword: 'example' });
  ajv.addKeyword({ keyword: 'x-items-checked-by-route', schemaType: 'boolean' });
  ajv.addKeyword({ keyword: 'x-normalize', schemaType: 'string' });
  ajv.addKeyword({ keyword: 'x-update', schemaType: 'boolean' });
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
    case 'x-update':
      return (
        'the body gives no field to update (null and empty values count as not given); expected one of: ' +
        (p.expected as string[]).join(', ')
      );
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

/** Whether `e` was raised inside `union` (a branch of it, at its value or below). */
function isInside(e: ErrorObject, union: ErrorObject): boolean {
  return (
    e.schemaPath.startsWith(`${union.schemaPath}/`) &&
    (e.instancePath === union.instancePath || e.instancePath.startsWith(`${union.instancePath}/`))
  );
}

/**
 * Where a union fails, keeps only the errors of the one branch whose type fits the value, so that
 * `tools[0].url` is reported instead of "tools[0] must be a string or an object".
 *
 * Linear in the number of errors (times the unions' nesting depth): Ajv reports a failed union
 * right after the errors of its branches, so those are the run of errors just before it. A
 * quadratic version held the event loop for seconds on a body of a few thousand wrong items.
 */
function collapseUnions(errors: readonly ErrorObject[]): ErrorObject[] {
  const result: ErrorObject[] = [];
  for (const error of errors) {
    if (error.keyword !== 'anyOf' && error.keyword !== 'oneOf') {
      result.push(error);
      continue;
    }
    // Inner unions came first and are collapsed already: their survivors are on the stack.
    let start = result.length;
    while (start > 0 && isInside(result[start - 1] as ErrorObject, error)) start--;
    const inner = result.splice(start);
    const prefixLength = error.schemaPath.length + 1;
    const branches = new Map<string, ErrorObject[]>();
    for (const e of inner) {
      const rest = e.schemaPath.slice(prefixLength);
      const slash = rest.indexOf('/');
      const branch = slash === -1 ? rest : rest.slice(0, slash);
      let list = branches.get(branch);
      if (!list) branches.set(branch, (list = []));
      list.push(e);
    }
    const fitting = [...branches.values()].filter(
      (errs) =>
        !errs.some((e) => e.instancePath === error.instancePath && (e.keyword === 'type' || e.keyword === 'const')),
    );
    if (fitting.length === 1 && fitting[0]) result.push(...fitting[0]);
    else result.push(error);
  }
  return result;
}

/** How many problems are listed per array (the rest are counted in one line). */
export const PROBLEMS_PER_ARRAY = 10;

/**
 * Keeps the first problems of each array (`numbers[3]...`, `tools[0].url`) and counts the rest in
 * one line, so that a body of 20,000 wrong items is answered with a short list, not a 2 MB one.
 */
function capPerArray(lines: string[]): string[] {
  const kept: string[] = [];
  const counts = new Map<string, { shown: Set<string>; hidden: number }>();
  for (const line of lines) {
    const match = /^([^\s[]+)\[(\d+)\]/.exec(line);
    if (!match) {
      kept.push(line);
      continue;
    }
    const array = match[1] as string;
    let count = counts.get(array);
    if (!count) counts.set(array, (count = { shown: new Set(), hidden: 0 }));
    const item = match[2] as string;
    if (count.shown.has(item) || count.shown.size < PROBLEMS_PER_ARRAY) {
      count.shown.add(item);
      kept.push(line);
    } else {
      count.hidden++;
    }
  }
  for (const [array, { hidden }] of counts) {
    if (hidden > 0) kept.push(`${array}: ${hidden} more problem${hidden === 1 ? '' : 's'} not listed`);
  }
  return kept;
}

/** Turns Ajv errors into the contract's `errors`: one sentence per problem, naming the field. */
export function formatValidationErrors(errors: ErrorObject[] | readonly unknown[], context?: string): string[] {
  const root = context === 'querystring' ? 'query' : context === 'params' ? 'path' : 'body';
  const lines = collapseUnions(errors as ErrorObject[]).map((e) => message(e, root));
  return capPerArray([...new Set(lines)]);
}

/**
 * For routes declared with `attachValidation: true`: throws one validation error carrying the
 * schema's problems and the route's own cross-field problems together.
 */
export function assertValid(request: FastifyRequest, more: string[] = []): void {
  const failed = request.validationError as
    (Error & { validation?: ErrorObject[]; validationContext?: string }) | undefined;
  const schemaErrors = failed?.validation ? formatValidationErrors(failed.validation, failed.validationContext) : [];
  const all = capPerArray([...new Set([...schemaErrors, ...more])]);
  if (all.length > 0) throw validationError(all);
}
