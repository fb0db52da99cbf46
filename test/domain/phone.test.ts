import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { countryOf, nationalNumber, normalizePathNumber } from '../../src/domain/phone.js';

describe('nationalNumber: the number without its country code (short_from / short_to of seed 2.2)', () => {
  const rows: [string, string][] = [
    ['+14155550100', '4155550100'],
    ['+12125550123', '2125550123'],
    ['+14165550100', '4165550100'],
    ['+442071838750', '2071838750'],
    ['+390212345678', '0212345678'],
    ['+81312345678', '312345678'],
    ['+5511987654321', '11987654321'],
  ];
  for (const [e164, national] of rows) {
    it(`${e164} -> ${national}`, () => assert.equal(nationalNumber(e164), national));
  }

  it('text that is not a number loses only a leading +', () => {
    assert.equal(nationalNumber('+abc'), 'abc');
    assert.equal(nationalNumber('hello'), 'hello');
  });
});

describe('countryOf: the ISO country a number belongs to', () => {
  const rows: [string, string | undefined][] = [
    ['+14155550100', 'US'],
    ['+12125550123', 'US'],
    ['+14165550100', 'CA'],
    ['+442071838750', 'GB'],
    ['+390212345678', 'IT'],
    ['+81312345678', 'JP'],
    ['+5511987654321', 'BR'],
    ['not a number', undefined],
    ['', undefined],
  ];
  for (const [e164, country] of rows) {
    it(`${JSON.stringify(e164)} -> ${String(country)}`, () => assert.equal(countryOf(e164), country));
  }
});

describe('normalizePathNumber: the forms CONTRACT.md section 5 gives the inbound path all name one number', () => {
  const same: [string, string][] = [
    ['E.164 with +', '+14155550100'],
    ['the + already decoded from %2B', decodeURIComponent('%2B14155550100')],
    ['country code without +', '14155550100'],
    ['10 national US digits', '4155550100'],
    ['national with formatting', '(415) 555-0100'],
    ['E.164 with spaces and surrounding blanks', ' +1 415 555 0100 '],
    ['dashes', '1-415-555-0100'],
  ];
  for (const [form, input] of same) {
    it(`${form}: ${JSON.stringify(input)} -> +14155550100`, () =>
      assert.deepEqual(normalizePathNumber(input), { ok: true, e164: '+14155550100' }));
  }

  const other: [string, string, string][] = [
    ['a UK number with +', '+442071838750', '+442071838750'],
    ['a UK number with country code only', '442071838750', '+442071838750'],
  ];
  for (const [form, input, e164] of other) {
    it(`${form}: ${input} -> ${e164}`, () => assert.deepEqual(normalizePathNumber(input), { ok: true, e164 }));
  }

  const invalid: [string, string][] = [
    ['empty', ''],
    ['letters', 'abc'],
    ['9 digits', '415555010'],
    ['an extension', '+14155550100x12'],
    ['+ with no digits', '+'],
    ['16 digits', '1234567890123456'],
    ['a number no country has', '+19995550100'],
    ['still percent-encoded', '%2B14155550100'],
  ];
  for (const [what, input] of invalid) {
    it(`${what} (${JSON.stringify(input)}) is refused with a reason`, () => {
      const r = normalizePathNumber(input);
      assert.equal(r.ok, false);
      assert.ok(!r.ok && r.reason.length > 0);
    });
  }
});
