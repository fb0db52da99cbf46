import type { Headers, SipRequest } from './message.js';

/**
 * Session timers (RFC 4028): a call's dialog is refreshed (re-INVITE or UPDATE) by one side, the
 * refresher, before its interval runs out; the other side ends a session nobody refreshed.
 */

/** The smallest interval we accept (RFC 4028's floor), in seconds. */
export const MIN_SE = 90;
/** The interval our outbound INVITEs ask for (RFC 4028's recommendation), in seconds. */
export const SESSION_EXPIRES = 1800;

export interface SessionExpires {
  /** Seconds. */
  interval: number;
  /** Who refreshes: the client or the server of the transaction that carried it; unset: not chosen yet. */
  refresher: 'uac' | 'uas' | undefined;
}

/** Reads `Session-Expires: 1800;refresher=uac`. */
export function parseSessionExpires(value: string | undefined): SessionExpires | undefined {
  const match = /^\s*(\d{1,9})\s*(?:;(.*))?$/.exec(value ?? '');
  if (!match) return undefined;
  const interval = Number(match[1]);
  if (interval <= 0) return undefined;
  const refresher = /(?:^|;)\s*refresher\s*=\s*(uac|uas)\b/i.exec(match[2] ?? '')?.[1]?.toLowerCase();
  return { interval, refresher: refresher as SessionExpires['refresher'] };
}

export const sessionExpiresOf = (message: { headers: Headers }): string | undefined =>
  message.headers.get('session-expires')?.[0];

/**
 * When the side that does not refresh gives up on a session: a third of the interval, at most 32
 * seconds, before it runs out (RFC 4028 section 10). In milliseconds.
 */
export const expiryMs = (interval: number): number => (interval - Math.min(32, interval / 3)) * 1000;

/**
 * How we answer a request that may carry Session-Expires (an INVITE, a re-INVITE, an UPDATE): 422
 * with our Min-SE when its interval is too brief, else the headers of our 2xx (the interval, its
 * refresher: when the caller supports timers, the one the request named, else the caller; else
 * us, whatever the request named) and
 * the value to arm our own timer with. No Session-Expires: no timer.
 */
export function answerSessionTimer(
  request: SipRequest,
): { tooBrief: true } | { tooBrief: false; headers: [string, string[]][]; value: string | undefined } {
  const asked = parseSessionExpires(sessionExpiresOf(request));
  if (!asked) return { tooBrief: false, headers: [], value: undefined };
  if (asked.interval < MIN_SE) return { tooBrief: true };
  const supported = /(^|[\s,])timer([\s,]|$)/i.test((request.headers.get('supported') ?? []).join(','));
  // A caller without timer support cannot refresh, nor be sent Require: timer (RFC 4028 section 9),
  // whatever refresher a proxy on the way named.
  const refresher = supported ? (asked.refresher ?? 'uac') : 'uas';
  const value = `${asked.interval};refresher=${refresher}`;
  return {
    tooBrief: false,
    headers: [
      ['session-expires', [value]],
      ...(refresher === 'uac' ? [['require', ['timer']] as [string, string[]]] : []),
    ],
    value,
  };
}

export const tooBriefHeaders = (): Headers => new Map([['min-se', [String(MIN_SE)]]]);

/** The Min-SE a 422 asks for, when it is a usable number. */
export const minSeOf = (response: { headers: Headers }): number | undefined => {
  const value = Number(response.headers.get('min-se')?.[0]);
  return Number.isInteger(value) && value > 0 ? value : undefined;
};
