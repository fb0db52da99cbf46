import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isValidTimezone, parseStartTime } from '../../src/domain/start-time.js';

describe('parseStartTime: the seed 2.1 form YYYY-MM-DD HH:MM:SS -HH:MM, offset optional and UTC when absent', () => {
  const rows: [string, string, string][] = [
    ['no offset is UTC', '2026-05-01 09:30:00', '2026-05-01T09:30:00.000Z'],
    ['a negative offset', '2026-05-01 09:30:00 -07:00', '2026-05-01T16:30:00.000Z'],
    ['a positive offset', '2026-05-01 09:30:00 +02:00', '2026-05-01T07:30:00.000Z'],
    ['a half-hour offset', '2026-05-01 09:30:00 +05:30', '2026-05-01T04:00:00.000Z'],
    ['a 45-minute offset', '2026-05-01 09:30:00 +05:45', '2026-05-01T03:45:00.000Z'],
    ['an offset without colon', '2026-05-01 09:30:00 -0700', '2026-05-01T16:30:00.000Z'],
    ['an offset with no space before it', '2026-05-01 09:30:00-07:00', '2026-05-01T16:30:00.000Z'],
    ['offset zero', '2026-05-01 09:30:00 +00:00', '2026-05-01T09:30:00.000Z'],
    ['the extreme offset +14:00', '2026-05-01 09:30:00 +14:00', '2026-04-30T19:30:00.000Z'],
    ['an offset crossing midnight', '2026-12-31 22:00:00 -05:00', '2027-01-01T03:00:00.000Z'],
    ['ISO 8601 with Z', '2026-05-01T09:30:00Z', '2026-05-01T09:30:00.000Z'],
    ['ISO 8601 with offset', '2026-05-01T09:30:00-07:00', '2026-05-01T16:30:00.000Z'],
    ['ISO 8601 without zone is UTC', '2026-05-01T09:30:00', '2026-05-01T09:30:00.000Z'],
    ['fractional seconds are dropped', '2026-05-01T09:30:00.123Z', '2026-05-01T09:30:00.000Z'],
    ['a space before Z', '2026-05-01 09:30:00 Z', '2026-05-01T09:30:00.000Z'],
    ['surrounding blanks', '  2026-05-01 09:30:00  ', '2026-05-01T09:30:00.000Z'],
    ['29 February of a leap year', '2028-02-29 12:00:00', '2028-02-29T12:00:00.000Z'],
    ['the last second of a day', '2026-05-01 23:59:59', '2026-05-01T23:59:59.000Z'],
    ['a past time still parses (it is sent at once)', '2001-01-01 00:00:00', '2001-01-01T00:00:00.000Z'],
  ];
  for (const [what, text, iso] of rows) {
    it(`${what}: ${JSON.stringify(text)} -> ${iso}`, () => assert.equal(parseStartTime(text)?.toISOString(), iso));
  }

  const invalid: [string, string][] = [
    ['31 February', '2026-02-31 10:00:00'],
    ['29 February of a common year', '2026-02-29 10:00:00'],
    ['31 April', '2026-04-31 10:00:00'],
    ['month 13', '2026-13-01 10:00:00'],
    ['month 0', '2026-00-10 10:00:00'],
    ['day 0', '2026-05-00 10:00:00'],
    ['hour 24', '2026-05-01 24:00:00'],
    ['minute 60', '2026-05-01 10:60:00'],
    ['second 60', '2026-05-01 10:00:60'],
    ['an offset over 14 hours', '2026-05-01 10:00:00 +15:00'],
    ['offset minutes over 59', '2026-05-01 10:00:00 +05:60'],
    ['a date without time', '2026-05-01'],
    ['no seconds', '2026-05-01 10:00'],
    ['a single-digit month', '2026-5-01 10:00:00'],
    ['a zone name', '2026-05-01 10:00:00 PST'],
    ['words', 'tomorrow at noon'],
    ['empty', ''],
    ['US date order', '05/01/2026 10:00:00'],
  ];
  for (const [what, text] of invalid) {
    it(`${what} (${JSON.stringify(text)}) is not a start time`, () => assert.equal(parseStartTime(text), undefined));
  }
});

describe('isValidTimezone', () => {
  const rows: [string, boolean][] = [
    ['America/Los_Angeles', true],
    ['America/New_York', true],
    ['Europe/London', true],
    ['Asia/Kolkata', true],
    ['UTC', true],
    ['Etc/GMT+5', true],
    ['Mars/Olympus_Mons', false],
    ['PST8PDT and more', false],
    ['', false],
    ['+05:00 not a name', false],
  ];
  for (const [name, valid] of rows) {
    it(`${JSON.stringify(name)} is ${valid ? 'a' : 'not a'} TZ identifier`, () =>
      assert.equal(isValidTimezone(name), valid));
  }
});
