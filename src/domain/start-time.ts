/**
 * `start_time` of Send Call: `YYYY-MM-DD HH:MM:SS` with an optional ` -HH:MM` / `+HH:MM` offset
 * (UTC when absent). ISO 8601 (`2026-05-01T09:30:00Z`) is accepted too.
 * Returns the instant, or undefined when the text is not such a time.
 */
export function parseStartTime(text: string): Date | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,6})?(?:\s*(Z|[+-]\d{2}:?\d{2}))?$/.exec(
    text.trim(),
  );
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, zone] = m;
  const parts = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number];
  const [year, month, day, hour, minute, second] = parts;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMin = 0;
  if (zone && zone !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = Number(digits.slice(2, 4));
    if (oh > 14 || om > 59) return undefined;
    offsetMin = sign * (oh * 60 + om);
  }
  const utc = Date.UTC(year, month - 1, day, hour, minute, second) - offsetMin * 60_000;
  const date = new Date(utc);
  // Reject dates such as 2026-02-31 that Date.UTC silently rolls over.
  const local = new Date(Date.UTC(year, month - 1, day));
  if (local.getUTCMonth() !== month - 1 || local.getUTCDate() !== day) return undefined;
  return date;
}

export function isValidTimezone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}
