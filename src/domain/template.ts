import { countryOf, nationalNumber } from './phone.js';
import { areaOf } from './area-codes.js';

/**
 * Reads `a.b.c` from nested objects; undefined when any step is missing. Only own properties
 * count, so `{{constructor}}` or `{{toString}}` is an unknown variable, not a function's source.
 */
export function readPath(source: Record<string, unknown>, path: string): unknown {
  let value: unknown = source;
  for (const key of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

function show(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/**
 * The most characters of variable values one rendering inserts. A template that names a large
 * variable many times (`{{doc}}` 60,000 times in an 800 KB task, with an 8 KB `doc` in
 * request_data) would otherwise grow to hundreds of megabytes and hold the event loop for
 * seconds; past the bound, values render empty, as an unknown variable does.
 */
export const MAX_INSERTED_CHARS = 1_000_000;

/** The values of one rendering: each path is read and written out once, and all count against one bound. */
class Values {
  private left = MAX_INSERTED_CHARS;
  private readonly shown = new Map<string, string>();
  constructor(private readonly variables: Record<string, unknown>) {}

  of(path: string): string {
    let text = this.shown.get(path);
    if (text === undefined) {
      text = show(readPath(this.variables, path));
      this.shown.set(path, text);
    }
    if (text.length > this.left) {
      this.left = 0;
      return '';
    }
    this.left -= text.length;
    return text;
  }
}

/**
 * Replaces `{{name}}` and `{{name.field}}` with variables. The one template function of Openline:
 * task, first_sentence, tool URLs, headers, bodies and dynamic_data all go through it. An unknown
 * variable becomes empty text, so a caller never hears braces read aloud. At most
 * MAX_INSERTED_CHARS of values are inserted.
 */
export function renderTemplate(text: string, variables: Record<string, unknown>): string {
  return renderWith(text, new Values(variables));
}

function renderWith(text: string, values: Values): string {
  return text.replace(PLACEHOLDERS, (_match, path: string) => values.of(path));
}

const PLACEHOLDERS = /\{\{\s*([\w$-]+(?:\.[\w$-]+)*)\s*\}\}/g;

/**
 * renderTemplate for words the agent says: a variable with no value takes the space before it
 * along, so "Hi {{name}}, welcome." without a name is "Hi, welcome.", not "Hi , welcome.".
 */
export function renderSpoken(text: string, variables: Record<string, unknown>): string {
  const values = new Values(variables);
  return text.replace(
    new RegExp(String.raw`(\s*)${PLACEHOLDERS.source}`, 'g'),
    (_match, space: string, path: string) => {
      const value = values.of(path);
      return value === '' ? '' : space + value;
    },
  );
}

/**
 * renderTemplate for a template that is JSON text (a webhook or tool body typed as a string, as the
 * hosted dashboard keeps it): a variable inside a JSON string literal is written escaped, so that
 * a value with a quote, a backslash or a line break keeps the JSON whole. Elsewhere, as
 * renderTemplate writes it (`"party": {{party}}` gives `"party": 2`).
 */
export function renderJsonTemplate(text: string, variables: Record<string, unknown>): string {
  const placeholder = /\{\{\s*([\w$-]+(?:\.[\w$-]+)*)\s*\}\}/y;
  const values = new Values(variables);
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length;) {
    placeholder.lastIndex = i;
    const match = placeholder.exec(text);
    if (match) {
      const value = values.of(match[1]!);
      out += inString ? JSON.stringify(value).slice(1, -1) : value;
      i += match[0].length;
      continue;
    }
    const c = text[i]!;
    if (inString && c === '\\') {
      out += text.slice(i, i + 2);
      i += 2;
      continue;
    }
    if (c === '"') inString = !inString;
    out += c;
    i += 1;
  }
  return out;
}

/** A secret's name: letters, digits, `_` and `-`, as `{{secrets.NAME}}` refers to it. */
export const SECRET_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The secrets a template refers to as `{{secrets.NAME}}`, in any string inside it, each once. */
export function secretNames(template: unknown): string[] {
  const names = new Set<string>();
  const visit = (value: unknown, depth: number): void => {
    if (depth > 32) return;
    if (typeof value === 'string') {
      for (const m of value.matchAll(/\{\{\s*secrets\.([A-Za-z0-9_-]{1,64})\s*\}\}/g)) names.add(m[1]!);
    } else if (Array.isArray(value)) value.forEach((v) => visit(v, depth + 1));
    else if (value && typeof value === 'object') Object.values(value).forEach((v) => visit(v, depth + 1));
  };
  visit(template, 0);
  return [...names];
}

/** Renders every string inside a JSON value (tool bodies, headers, query objects), all against one bound. */
export function renderDeep<T>(value: T, variables: Record<string, unknown>): T {
  return renderDeepWith(value, new Values(variables));
}

function renderDeepWith<T>(value: T, values: Values): T {
  if (typeof value === 'string') return renderWith(value, values) as T;
  if (Array.isArray(value)) return value.map((v) => renderDeepWith(v, values)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderDeepWith(v, values)])) as T;
  }
  return value;
}

/**
 * The seed's system variables of a call. `phone_number` is the other party (the called number
 * outbound, the caller inbound); city, state and zip are filled where the number tells.
 */
export function systemVariables(call: {
  id: string;
  from: string | null;
  to: string;
  inbound: boolean;
  timezone: string;
  now: Date;
}): Record<string, unknown> {
  const other = call.inbound ? call.from : call.to;
  const area = other ? areaOf(other) : undefined;
  let localNow: string;
  try {
    localNow = call.now.toLocaleString('en-US', { timeZone: call.timezone, dateStyle: 'full', timeStyle: 'long' });
  } catch {
    localNow = call.now.toUTCString();
  }
  return {
    now: localNow,
    now_utc: call.now.toISOString(),
    from: call.from ?? '',
    to: call.to,
    short_from: call.from ? nationalNumber(call.from) : '',
    short_to: nationalNumber(call.to),
    call_id: call.id,
    phone_number: other ?? '',
    country: other ? (countryOf(other) ?? '') : '',
    state: area?.state ?? '',
    city: area?.city ?? '',
    zip: '',
  };
}
