// The dashboard's only way to the server: the public REST API under /v1, with the API key the
// user signed in with. Response types come from the server's own schemas (src/schemas), so the
// dashboard and the API cannot drift apart.
import type { CallRecord, CallSummary } from '../../src/schemas/call-record.js';
import type { SendCallBody } from '../../src/schemas/call.js';
import type { Agent } from '../../src/schemas/agent.js';
import type { CampaignDetail, CampaignSummary } from '../../src/schemas/campaign.js';
import type { InboundNumber } from '../../src/schemas/inbound.js';
import type { KnowledgeBaseBody as KnowledgeBase } from '../../src/schemas/knowledge.js';

export type {
  CallRecord,
  CallSummary,
  SendCallBody,
  Agent,
  CampaignDetail,
  CampaignSummary,
  InboundNumber,
  KnowledgeBase,
};

export type Json = Record<string, unknown>;

const KEY = 'openline.apiKey';

/** The key lives in session storage only: never in a URL, a cookie or local storage. */
export const session = {
  key: (): string | null => sessionStorage.getItem(KEY),
  signIn: (key: string): void => sessionStorage.setItem(KEY, key),
  signOut: (): void => sessionStorage.removeItem(KEY),
};

/** A refused request: the server's message, and the field errors of a 400. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: string[] = [],
  ) {
    super(message);
  }
}

/** Signed-out listeners: a 401 from any request ends the session (the key was revoked). */
const onUnauthorized = new Set<() => void>();
export function whenSignedOut(listener: () => void): () => void {
  onUnauthorized.add(listener);
  return () => onUnauthorized.delete(listener);
}

interface RequestOptions {
  method?: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** JSON, or a form (a file upload, sent as multipart/form-data). */
  body?: unknown;
  /** The key to use instead of the session's (sign-in checks a key before keeping it). */
  key?: string;
}

async function send(path: string, options: RequestOptions): Promise<Response> {
  const key = options.key ?? session.key();
  const headers: Record<string, string> = {};
  if (key) headers.authorization = key;
  const form = options.body instanceof FormData ? options.body : undefined;
  if (options.body !== undefined && !form) headers['content-type'] = 'application/json';
  const response = await fetch(path, {
    method: options.method ?? 'GET',
    headers,
    ...(options.body !== undefined && { body: form ?? JSON.stringify(options.body) }),
  });
  if (response.ok) return response;
  let body: Json = {};
  try {
    body = (await response.json()) as Json;
  } catch {
    // not JSON: keep the status text
  }
  const errors = Array.isArray(body.errors) ? body.errors.map(String) : [];
  const message = typeof body.message === 'string' ? body.message : response.statusText || `HTTP ${response.status}`;
  if (response.status === 401 && !options.key) {
    session.signOut();
    for (const listener of onUnauthorized) listener();
  }
  throw new ApiFailure(response.status, message, errors);
}

/** JSON in, JSON out. */
export async function api<T = Json>(path: string, options: RequestOptions = {}): Promise<T> {
  const response = await send(path, options);
  return (await response.json()) as T;
}

/** Audio and other binary answers (recordings, voice samples) as a blob URL for an <audio>. */
export async function blobUrl(path: string, options: RequestOptions = {}): Promise<string> {
  const response = await send(path, options);
  return URL.createObjectURL(await response.blob());
}

/** A query string of the filled fields only. */
export function query(params: Record<string, string | number | boolean | undefined | null>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params))
    if (value !== undefined && value !== null && value !== '') search.set(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** Shown next to a form: the message and each field error the server named. */
export function problemText(error: unknown): string[] {
  if (error instanceof ApiFailure) return error.errors.length > 0 ? error.errors : [error.message];
  return [error instanceof Error ? error.message : String(error)];
}
