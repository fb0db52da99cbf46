import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

export type PhoneResult = { ok: true; e164: string } | { ok: false; reason: string };

const FORMATTING = /[\s()-]/g;

function validE164(candidate: string): PhoneResult {
  const parsed = parsePhoneNumberFromString(candidate);
  if (!parsed || !parsed.isValid()) {
    return { ok: false, reason: 'is not a valid phone number for its country code' };
  }
  return { ok: true, e164: parsed.number };
}

/**
 * The Send Call rules of the seed: `+` and a country code is E.164; 10 digits with no `+` is a US
 * number; spaces, parentheses and dashes are stripped; 11 digits with no `+`, letters and
 * extensions are invalid. A JSON number counts as its digits.
 */
export function normalizePhone(input: unknown): PhoneResult {
  let raw: string;
  if (typeof input === 'number') {
    if (!Number.isSafeInteger(input) || input <= 0) return { ok: false, reason: 'must be a phone number' };
    raw = String(input);
  } else if (typeof input === 'string') {
    raw = input.trim();
  } else {
    return { ok: false, reason: 'must be a string or a number' };
  }
  if (raw === '') return { ok: false, reason: 'must not be empty' };
  if (/[a-z]/i.test(raw)) return { ok: false, reason: 'must not contain letters or an extension' };
  const compact = raw.replace(FORMATTING, '');
  if (!/^\+?\d+$/.test(compact)) {
    return { ok: false, reason: 'may contain only digits, a leading +, spaces, parentheses and dashes' };
  }
  if (compact.startsWith('+')) return validE164(compact);
  if (compact.length === 10) return validE164(`+1${compact}`);
  if (compact.length === 11) {
    return { ok: false, reason: 'has 11 digits without a +: write it in E.164 form, e.g. +1XXXXXXXXXX' };
  }
  return { ok: false, reason: 'must be in E.164 form (+ and country code) or 10 US digits' };
}

/** A `from` number: E.164 only, country code required, no spaces or parentheses. */
export function normalizeFromNumber(input: unknown): PhoneResult {
  if (typeof input !== 'string') return { ok: false, reason: 'must be a string' };
  if (!/^\+\d{6,15}$/.test(input)) {
    return { ok: false, reason: 'must be in E.164 form: + and the country code, digits only' };
  }
  return validE164(input);
}

/**
 * A number in a query string (`?to_number=+14155550100`): a `+` sent unencoded arrives as a space,
 * which is read as the `+` it was; otherwise as in a body (normalizePhone).
 */
export function normalizeQueryPhone(input: string): PhoneResult {
  return normalizePhone(input.replace(/^ (?=\d)/, '+'));
}

/**
 * A number in a path (inbound configuration): `+` (or `%2B`, already decoded), the country code
 * without `+`, or 10 national US digits all name the same number.
 */
export function normalizePathNumber(input: string): PhoneResult {
  const compact = input.trim().replace(FORMATTING, '');
  if (/^\+\d+$/.test(compact)) return validE164(compact);
  if (/^\d{10}$/.test(compact)) return validE164(`+1${compact}`);
  if (/^\d{11,15}$/.test(compact)) return validE164(`+${compact}`);
  return { ok: false, reason: 'must be a phone number in E.164 form, with or without +, or 10 US digits' };
}

/** The number without its country code (the seed's short_from / short_to). */
export function nationalNumber(e164: string): string {
  const parsed = parsePhoneNumberFromString(e164);
  return parsed ? String(parsed.nationalNumber) : e164.replace(/^\+/, '');
}

/** ISO country of a number, when its numbering plan tells. */
export function countryOf(e164: string): string | undefined {
  return parsePhoneNumberFromString(e164)?.country;
}
