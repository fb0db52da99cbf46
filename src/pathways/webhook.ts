import { renderTemplate } from '../domain/template.js';
import { jsonPath, renderValue, templatedBody, text } from '../agent/tools.js';
import { OutboundError, type OutboundClient } from '../outbound/http.js';
import { isRecord } from '../domain/records.js';

/** Default time a Webhook node may take; `timeoutValue` (seconds) changes it. */
const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_TIMEOUT_MS = 60_000;
const MAX_RETRIES = 3;

export interface WebhookResult {
  ok: boolean;
  status: number | null;
  method: 'GET' | 'POST';
  /** Variables from responseData (only those found in the response). */
  variables: Record<string, unknown>;
  error: string | null;
}

/**
 * `headers` as an object of names to values, or as a list of `[name, value]` pairs (the editor's
 * form); values are templates over the call's variables.
 */
function headersOf(raw: unknown, variables: Record<string, unknown>): Record<string, string> {
  const pairs: [string, unknown][] = isRecord(raw)
    ? Object.entries(raw)
    : Array.isArray(raw)
      ? raw.flatMap((p: unknown) =>
          Array.isArray(p) && typeof p[0] === 'string' ? [[p[0], p[1]] as [string, unknown]] : [],
        )
      : [];
  return Object.fromEntries(pairs.map(([k, v]) => [k, text(renderValue(v, variables))]));
}

/**
 * The node's `auth` as the hosted editor saves it, `{type: "bearer" | "basic", token, encode?}`:
 * an Authorization header (`Bearer <token>`, `Basic <token>`, with `encode` the token base64
 * encoded, as `user:password` is written). The token is a template over the call's variables.
 * An Authorization header among the node's own headers wins.
 */
function withAuth(
  headers: Record<string, string>,
  auth: unknown,
  variables: Record<string, unknown>,
): Record<string, string> {
  if (!isRecord(auth) || typeof auth.token !== 'string') return headers;
  if (Object.keys(headers).some((name) => name.toLowerCase() === 'authorization')) return headers;
  const token = renderTemplate(auth.token, variables).trim();
  if (token === '') return headers;
  const type = typeof auth.type === 'string' ? auth.type.trim().toLowerCase() : 'bearer';
  const value =
    type === 'basic'
      ? `Basic ${auth.encode === true ? Buffer.from(token).toString('base64') : token}`
      : `Bearer ${token}`;
  return { ...headers, Authorization: value };
}

/**
 * responseData maps the response into variables: a list of `{name, data}` where data is a JSON
 * path (`$.booking.id`), or an object of variable names to paths.
 */
export function mappingOf(raw: unknown): [string, string][] {
  if (Array.isArray(raw)) {
    return raw.flatMap((m: unknown) =>
      isRecord(m) && typeof m.name === 'string' && typeof m.data === 'string'
        ? [[m.name, m.data] as [string, string]]
        : [],
    );
  }
  if (isRecord(raw)) {
    return Object.entries(raw).flatMap(([k, v]) => (typeof v === 'string' ? [[k, v] as [string, string]] : []));
  }
  return [];
}

/**
 * A Webhook node's request: url, headers and body rendered over the call's variables (extracted
 * ones included), sent through the guarded client as custom tools are, retried up to
 * `max_retries` times on failure. A 2xx answer is success. Never throws.
 */
export async function callWebhook(
  data: Record<string, unknown>,
  variables: Record<string, unknown>,
  http: OutboundClient | undefined,
): Promise<WebhookResult> {
  const method = typeof data.method === 'string' && data.method.toUpperCase() === 'GET' ? 'GET' : 'POST';
  const fail = (error: string, status: number | null = null): WebhookResult => ({
    ok: false,
    status,
    method,
    variables: {},
    error,
  });
  if (!http) return fail('no outbound client');
  let url: string;
  try {
    url = new URL(renderTemplate(String(data.url ?? ''), variables)).toString();
  } catch {
    return fail('invalid URL after templating');
  }
  const headers = withAuth(headersOf(data.headers, variables), data.auth, variables);
  let body: string | undefined;
  if (method === 'POST' && data.body !== undefined && data.body !== null) {
    body = templatedBody(data.body, variables, headers);
  }
  const seconds = typeof data.timeoutValue === 'number' && data.timeoutValue > 0 ? data.timeoutValue : undefined;
  const timeoutMs = Math.min(seconds ? seconds * 1000 : DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS);
  const retries =
    typeof data.max_retries === 'number' && Number.isInteger(data.max_retries)
      ? Math.min(Math.max(0, data.max_retries), MAX_RETRIES)
      : 0;
  let last: WebhookResult = fail('not sent');
  for (let attempt = 0; attempt <= retries; attempt++) {
    try {
      const response = await http.request({
        method,
        url,
        headers,
        ...(body !== undefined && { body }),
        // As every webhook: http:// too (the guard still refuses private addresses).
        timeoutMs,
      });
      if (response.status < 200 || response.status >= 300) {
        last = fail(`HTTP ${response.status}`, response.status);
        continue;
      }
      let parsed: unknown = response.body;
      try {
        parsed = JSON.parse(response.body);
      } catch {
        // Not JSON: the text is the data.
      }
      const mapped: Record<string, unknown> = {};
      for (const [name, path] of mappingOf(data.responseData)) {
        const value = jsonPath(parsed, path);
        if (value !== undefined) mapped[name] = value;
      }
      return { ok: true, status: response.status, method, variables: mapped, error: null };
    } catch (error) {
      last = fail(
        error instanceof OutboundError ? (error.reason === 'timeout' ? 'timeout' : error.message) : String(error),
      );
    }
  }
  return last;
}
