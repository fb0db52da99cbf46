import { areaOf } from '../domain/area-codes.js';
import type { CallingWindow } from '../schemas/campaign.js';

/**
 * The time zone most of each US state lives in. A state split between zones gets the zone of
 * most of its people: a callee's zone is a guess from the area code either way, and guessing the
 * populous side is right for most callees.
 */
const STATE_ZONES: Record<string, string> = {
  AL: 'America/Chicago',
  AK: 'America/Anchorage',
  AZ: 'America/Phoenix',
  AR: 'America/Chicago',
  CA: 'America/Los_Angeles',
  CO: 'America/Denver',
  CT: 'America/New_York',
  DE: 'America/New_York',
  DC: 'America/New_York',
  FL: 'America/New_York',
  GA: 'America/New_York',
  HI: 'Pacific/Honolulu',
  ID: 'America/Boise',
  IL: 'America/Chicago',
  IN: 'America/Indiana/Indianapolis',
  IA: 'America/Chicago',
  KS: 'America/Chicago',
  KY: 'America/New_York',
  LA: 'America/Chicago',
  ME: 'America/New_York',
  MD: 'America/New_York',
  MA: 'America/New_York',
  MI: 'America/Detroit',
  MN: 'America/Chicago',
  MS: 'America/Chicago',
  MO: 'America/Chicago',
  MT: 'America/Denver',
  NE: 'America/Chicago',
  NV: 'America/Los_Angeles',
  NH: 'America/New_York',
  NJ: 'America/New_York',
  NM: 'America/Denver',
  NY: 'America/New_York',
  NC: 'America/New_York',
  ND: 'America/Chicago',
  OH: 'America/New_York',
  OK: 'America/Chicago',
  OR: 'America/Los_Angeles',
  PA: 'America/New_York',
  RI: 'America/New_York',
  SC: 'America/New_York',
  SD: 'America/Chicago',
  TN: 'America/Chicago',
  TX: 'America/Chicago',
  UT: 'America/Denver',
  VT: 'America/New_York',
  VA: 'America/New_York',
  WA: 'America/Los_Angeles',
  WV: 'America/New_York',
  WI: 'America/Chicago',
  WY: 'America/Denver',
  PR: 'America/Puerto_Rico',
};

/**
 * The callee's time zone: from the number's area code when it is a known US one, else the
 * window's own timezone (numbers outside the table, and every non-US number).
 */
export function calleeZone(e164: string, window: CallingWindow): string {
  const area = areaOf(e164);
  return (area && STATE_ZONES[area.state]) ?? window.timezone;
}

const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
const formatters = new Map<string, Intl.DateTimeFormat>();

/** Weekday (0 = Sunday) and minute of the day at `at` in `zone`. */
function localTime(at: Date, zone: string): { day: number; minute: number } {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(zone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(at).map((p) => [p.type, p.value]));
  const day = DAYS.indexOf(String(parts.weekday).toLowerCase().slice(0, 3) as (typeof DAYS)[number]);
  return { day, minute: Number(parts.hour) * 60 + Number(parts.minute) };
}

const minutes = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/**
 * Whether `at` falls inside the window in `zone`: from start (inclusive) to end (exclusive) on a
 * listed day. A window whose end is before its start spans midnight and belongs to the day it
 * opens on (a Friday 21:00-02:00 window includes Saturday 01:00).
 */
export function windowOpen(window: CallingWindow, zone: string, at: Date): boolean {
  const { day, minute } = localTime(at, zone);
  const start = minutes(window.start);
  const end = minutes(window.end);
  const listed = (d: number) => window.days.includes(DAYS[(d + 7) % 7]!);
  if (start < end) return listed(day) && minute >= start && minute < end;
  return (listed(day) && minute >= start) || (listed(day - 1) && minute < end);
}

/**
 * When the window next opens in `zone` after `at` (within 8 days). Computed with the zone's
 * offset at `at`, so across a daylight-saving change it may be an hour off; the dialer checks
 * the window again when that time comes, so the error only delays, never dials outside it.
 */
export function nextOpening(window: CallingWindow, zone: string, at: Date): Date {
  const { day, minute } = localTime(at, zone);
  const start = minutes(window.start);
  const base = at.getTime() - (at.getTime() % 60_000);
  for (let d = 0; d <= 7; d++) {
    const wait = d * 1440 + start - minute;
    if (wait > 0 && window.days.includes(DAYS[(day + d) % 7]!)) return new Date(base + wait * 60_000);
  }
  return new Date(base + 24 * 60 * 60_000);
}
