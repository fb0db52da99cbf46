import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  MAX_INSERTED_CHARS,
  readPath,
  renderDeep,
  renderJsonTemplate,
  renderSpoken,
  renderTemplate,
  systemVariables,
} from '../../src/domain/template.js';

const VARS: Record<string, unknown> = {
  name: 'Ada',
  count: 3,
  price: 19.5,
  zero: 0,
  yes: true,
  no: false,
  nothing: null,
  customer: { first: 'Grace', address: { city: 'Arlington', zip: '22201' } },
  items: ['chair', 'table'],
  'first-name': 'Dash',
  $cost: 7,
};

describe('renderTemplate', () => {
  const rows: [string, string, string][] = [
    ['a plain {{name}}', 'Hello {{name}}!', 'Hello Ada!'],
    ['spaces inside the braces', 'Hello {{ name }}!', 'Hello Ada!'],
    ['tabs and several spaces inside the braces', 'Hello {{\t name  }}!', 'Hello Ada!'],
    ['a dotted path {{a.b.c}}', 'City: {{customer.address.city}}', 'City: Arlington'],
    ['a dotted path of two', '{{customer.first}}', 'Grace'],
    ['an unknown variable becomes empty', 'Hi {{missing}}.', 'Hi .'],
    ['an unknown nested path becomes empty', 'Hi {{customer.middle.name}}.', 'Hi .'],
    ['a path through a string becomes empty', '{{name.length}}', ''],
    ['names of inherited properties are unknown', '[{{constructor}}{{toString}}{{customer.constructor}}]', '[]'],
    ['an array has its length', '{{items.length}}', '2'],
    ['null becomes empty', '[{{nothing}}]', '[]'],
    ['an integer is written as digits', '{{count}} items', '3 items'],
    ['a decimal number', '${{price}}', '$19.5'],
    ['zero is not empty', '{{zero}}', '0'],
    ['booleans', '{{yes}}/{{no}}', 'true/false'],
    ['an object is written as JSON', '{{customer.address}}', '{"city":"Arlington","zip":"22201"}'],
    ['an array is written as JSON', '{{items}}', '["chair","table"]'],
    ['an array element by index', '{{items.1}}', 'table'],
    ['names with dashes and $', '{{first-name}} {{$cost}}', 'Dash 7'],
    ['several variables in one text', '{{name}} has {{count}}', 'Ada has 3'],
    ['the same variable twice', '{{name}} {{name}}', 'Ada Ada'],
    ['single braces stay as they are', '{name}', '{name}'],
    ['braces around a non-name stay as they are', '{{ not a name }}', '{{ not a name }}'],
    ['text without variables is unchanged', 'Nothing to do.', 'Nothing to do.'],
  ];
  for (const [what, text, expected] of rows) {
    it(`${what}: ${JSON.stringify(text)} -> ${JSON.stringify(expected)}`, () =>
      assert.equal(renderTemplate(text, VARS), expected));
  }

  it('a value containing braces is not rendered again', () => {
    assert.equal(renderTemplate('{{a}}', { a: '{{b}}', b: 'x' }), '{{b}}');
  });
});

describe('renderSpoken', () => {
  it('drops the space before a variable with no value, keeping every other space', () => {
    const vars = { name: 'Dana', none: '' };
    assert.equal(
      renderSpoken('Hi {{missing}}, this is Bright Smile Dental.', vars),
      'Hi, this is Bright Smile Dental.',
    );
    assert.equal(renderSpoken('Thanks {{none}} for calling!', vars), 'Thanks for calling!');
    assert.equal(renderSpoken('Hi {{name}}, welcome {{missing}}!', vars), 'Hi Dana, welcome!');
    assert.equal(renderSpoken('Hi {{name}}, {{missing}} {{none}} bye.', vars), 'Hi Dana, bye.');
  });
});

describe('readPath', () => {
  it('reads nested values and is undefined past a missing step', () => {
    assert.equal(readPath(VARS, 'customer.address.zip'), '22201');
    assert.equal(readPath(VARS, 'customer.nope.zip'), undefined);
    assert.equal(readPath(VARS, 'nothing.x'), undefined);
  });
});

describe('renderDeep', () => {
  it('renders every string of nested objects and arrays, keeping other values and keys', () => {
    const input = {
      url: 'https://api.example.com/{{customer.first}}',
      headers: { 'X-Name': '{{name}}', '{{name}}': 'keys are not rendered' },
      body: { list: ['{{items.0}}', 2, { deep: '{{count}}' }, null], flag: true, n: 5 },
      empty: [],
    };
    assert.deepEqual(renderDeep(input, VARS), {
      url: 'https://api.example.com/Grace',
      headers: { 'X-Name': 'Ada', '{{name}}': 'keys are not rendered' },
      body: { list: ['chair', 2, { deep: '3' }, null], flag: true, n: 5 },
      empty: [],
    });
  });

  it('does not change its input', () => {
    const input = { a: ['{{name}}'] };
    renderDeep(input, VARS);
    assert.deepEqual(input, { a: ['{{name}}'] });
  });

  const scalars: [string, unknown][] = [
    ['a number', 42],
    ['a boolean', false],
    ['null', null],
    ['undefined', undefined],
  ];
  for (const [what, value] of scalars) {
    it(`returns ${what} unchanged`, () => assert.equal(renderDeep(value, VARS), value));
  }

  it('renders a top-level string and array', () => {
    assert.equal(renderDeep('{{name}}', VARS), 'Ada');
    assert.deepEqual(renderDeep(['{{name}}', '{{count}}'], VARS), ['Ada', '3']);
  });
});

/** ICU versions differ in the space before AM/PM (U+202F or U+0020). */
function oneSpaced(text: unknown): string {
  return String(text).replace(/\s/g, ' ');
}

describe('systemVariables', () => {
  const now = new Date('2026-03-04T17:05:06Z');

  it('outbound US call: phone_number is the called number; country, state and city from its area code', () => {
    const v = systemVariables({
      id: 'call-1',
      from: '+14155550100',
      to: '+12125550123',
      inbound: false,
      timezone: 'America/New_York',
      now,
    });
    assert.deepEqual(
      { ...v, now: oneSpaced(v.now) },
      {
        now: 'Wednesday, March 4, 2026 at 12:05:06 PM EST',
        now_utc: '2026-03-04T17:05:06.000Z',
        from: '+14155550100',
        to: '+12125550123',
        short_from: '4155550100',
        short_to: '2125550123',
        call_id: 'call-1',
        phone_number: '+12125550123',
        country: 'US',
        state: 'NY',
        city: 'New York',
        zip: '',
      },
    );
  });

  it('inbound call: phone_number, country, state and city are the caller', () => {
    const v = systemVariables({
      id: 'call-2',
      from: '+13125550100',
      to: '+14155550199',
      inbound: true,
      timezone: 'America/Los_Angeles',
      now,
    });
    assert.equal(v.phone_number, '+13125550100');
    assert.equal(v.from, '+13125550100');
    assert.equal(v.to, '+14155550199');
    assert.equal(v.country, 'US');
    assert.equal(v.state, 'IL');
    assert.equal(v.city, 'Chicago');
    assert.equal(oneSpaced(v.now), 'Wednesday, March 4, 2026 at 9:05:06 AM PST');
  });

  it('a non-US number: its country, no state or city; short form without the country code', () => {
    const v = systemVariables({
      id: 'call-3',
      from: '+14155550100',
      to: '+442071838750',
      inbound: false,
      timezone: 'Europe/London',
      now,
    });
    assert.equal(v.phone_number, '+442071838750');
    assert.equal(v.country, 'GB');
    assert.equal(v.state, '');
    assert.equal(v.city, '');
    assert.equal(v.short_to, '2071838750');
    assert.equal(v.short_from, '4155550100');
  });

  it('a Canadian +1 number: country CA and its province', () => {
    const v = systemVariables({ id: 'c', from: null, to: '+14165550100', inbound: false, timezone: 'UTC', now });
    assert.equal(v.country, 'CA');
    assert.equal(v.state, 'ON');
    assert.equal(v.city, 'Toronto');
  });

  it('a US area code missing from the table: country US, empty state and city', () => {
    const v = systemVariables({ id: 'c', from: null, to: '+15595550100', inbound: false, timezone: 'UTC', now });
    assert.equal(v.country, 'US');
    assert.equal(v.state, '');
    assert.equal(v.city, '');
  });

  it('no caller number: from, short_from are empty, and inbound phone_number is empty', () => {
    const v = systemVariables({ id: 'c', from: null, to: '+14155550199', inbound: true, timezone: 'UTC', now });
    assert.equal(v.from, '');
    assert.equal(v.short_from, '');
    assert.equal(v.phone_number, '');
    assert.equal(v.country, '');
  });

  it('an unknown timezone falls back to UTC for now; now_utc is always ISO 8601 UTC', () => {
    const v = systemVariables({ id: 'c', from: null, to: '+14155550199', inbound: false, timezone: 'Mars/Base', now });
    assert.equal(v.now, 'Wed, 04 Mar 2026 17:05:06 GMT');
    assert.equal(v.now_utc, '2026-03-04T17:05:06.000Z');
  });

  it('names every system variable of seed 2.3 except input', () => {
    const v = systemVariables({ id: 'c', from: null, to: '+14155550199', inbound: false, timezone: 'UTC', now });
    for (const name of [
      'now',
      'now_utc',
      'short_from',
      'short_to',
      'from',
      'to',
      'call_id',
      'phone_number',
      'city',
      'country',
      'state',
      'zip',
    ])
      assert.ok(name in v, name);
  });

  it('feeds renderTemplate: the dynamic_data placeholders of seed 2.2 are replaced', () => {
    const v = systemVariables({
      id: 'call-9',
      from: '+14155550100',
      to: '+12125550123',
      inbound: false,
      timezone: 'UTC',
      now,
    });
    assert.equal(
      renderTemplate('{{from}} {{to}} {{short_from}} {{short_to}} {{call_id}}', v),
      '+14155550100 +12125550123 4155550100 2125550123 call-9',
    );
  });
});

describe('a template that names a large variable many times', () => {
  const big = 'x'.repeat(20_000);
  const template = '{{doc}}'.repeat(2000);

  it('renderTemplate inserts at most MAX_INSERTED_CHARS of values, then renders the rest empty', () => {
    const out = renderTemplate(`${template} {{name}}`, { doc: big, name: 'Ada' });
    assert.ok(out.length <= MAX_INSERTED_CHARS + template.length, `${out.length} characters`);
    assert.ok(out.startsWith(big + big), 'the values that fit are inserted');
    assert.ok(out.endsWith(' '), 'a value past the bound is empty');
  });

  it('renderSpoken and renderJsonTemplate keep to the same bound', () => {
    assert.ok(renderSpoken(template, { doc: big }).length <= MAX_INSERTED_CHARS + template.length);
    const json = `{"a":"${template}"}`;
    assert.ok(renderJsonTemplate(json, { doc: big }).length <= MAX_INSERTED_CHARS + json.length);
  });

  it('renderDeep counts every string of one value against one bound', () => {
    const strings = Array.from({ length: 100 }, () => '{{doc}}'.repeat(100));
    const out = renderDeep({ strings }, { doc: big });
    const total = out.strings.reduce((sum, s) => sum + s.length, 0);
    assert.ok(total <= MAX_INSERTED_CHARS + 100 * 700, `${total} characters`);
  });
});
