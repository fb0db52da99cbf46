import { normalizeFromNumber, normalizePhone } from './phone.js';
import { isValidTimezone, parseStartTime } from './start-time.js';
import { toolNameProblem } from './tool-name.js';
import { US_STATES } from './us-states.js';
import { parseTrunk } from './sip-trunk.js';

/** What a check may depend on besides the value: server configuration. */
export interface CheckContext {
  /** With OPENLINE_ALLOW_PRIVATE_URLS, tool URLs may be http:// (local development). */
  allowPrivateUrls: boolean;
  /** OPENLINE_VOICE_ALIASES: a voice the client names (lower case) -> a voice of this server. */
  voiceAliases?: ReadonlyMap<string, string>;
}

type Check = (value: unknown, context: CheckContext) => string | null;

/** Why `value` is not a URL of one of `protocols` (`http:`, `https:`), or null when it is one. */
export function httpUrlProblem(value: unknown, protocols: string[] = ['http:', 'https:']): string | null {
  if (typeof value !== 'string') return 'must be a string';
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    return 'must be a valid URL';
  }
  if (!protocols.includes(parsed.protocol)) return `must begin with ${protocols.map((p) => `${p}//`).join(' or ')}`;
  if (!parsed.hostname) return 'must be a valid URL';
  return null;
}

/**
 * A URL a call fills in: one that begins with a prompt variable (`{{webhook_url}}`,
 * `{{base_url}}/book`), as the hosted dashboard saves tools and webhook nodes. Its scheme and host
 * are known only once the variable is rendered; the request is checked then (runTool, the
 * pathway webhook, dynamic_data), so at save time it is taken as it is.
 */
const LEADING_VARIABLE = /^\{\{\s*[\w$-]+(?:\.[\w$-]+)*\s*\}\}/;

/** httpUrlProblem for a URL that may begin with a prompt variable (see LEADING_VARIABLE). */
export function templatedUrlProblem(value: unknown, protocols?: string[]): string | null {
  return typeof value === 'string' && LEADING_VARIABLE.test(value.trim()) ? null : httpUrlProblem(value, protocols);
}

/**
 * Domain rules usable from any schema as `"x-check": "<name>"`. Each returns null when the value
 * is fine, else the end of a sentence that starts with the field's name.
 */
export const CHECKS = {
  phone: (value) => {
    const r = normalizePhone(value);
    return r.ok ? null : r.reason;
  },
  from_number: (value) => {
    const r = normalizeFromNumber(value);
    return r.ok ? null : r.reason;
  },
  start_time: (value) =>
    typeof value === 'string' && parseStartTime(value) !== undefined
      ? null
      : 'must be a time in the form "YYYY-MM-DD HH:MM:SS" with an optional " -HH:MM" offset',
  timezone: (value) =>
    typeof value === 'string' && isValidTimezone(value)
      ? null
      : 'must be an IANA time zone such as America/Los_Angeles',
  keyword: (value) =>
    typeof value === 'string' && /^[^:]+(:\d+(\.\d+)?)?$/.test(value) && value.trim() !== ''
      ? null
      : 'must be "word" or "word:<boost>" with a numeric boost',
  tool_url: (value, context) => templatedUrlProblem(value, context.allowPrivateUrls ? ['https:', 'http:'] : ['https:']),
  http_url: (value) => httpUrlProblem(value, ['https:', 'http:']),
  templated_http_url: (value) => templatedUrlProblem(value, ['https:', 'http:']),
  // A voice this server does not know falls back to the default voice with a warning (see
  // resolveVoice): clients send voices of the hosted service that no self-hosted server can know.
  voice: (value) => (typeof value === 'string' && value.trim() !== '' ? null : 'must be a voice name or id'),
  tool_name: (value) => (typeof value === 'string' ? toolNameProblem(value) : 'must be a string'),
  sip_trunk: (value) => {
    if (typeof value !== 'string') return 'must be a string';
    const trunk = parseTrunk(value);
    return typeof trunk === 'string' ? trunk : null;
  },
  boolean_like: (value) =>
    typeof value === 'boolean' || value === 'true' || value === 'false' ? null : 'must be true or false',
  us_state: (value) =>
    typeof value === 'string' && US_STATES.has(value.toUpperCase()) ? null : 'must be a valid US state code such as CA',
} satisfies Record<string, Check>;

export type CheckName = keyof typeof CHECKS;
