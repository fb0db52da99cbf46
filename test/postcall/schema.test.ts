import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { coerce, schemaForType, schemaFromHints } from '../../src/postcall/schema.js';
import { parseJsonObject } from '../../src/postcall/summary.js';

describe('analysis schema derived from analysis_schema hints', () => {
  it('maps type words, formats, descriptions, arrays and objects; every field required and nullable', () => {
    const schema = schemaFromHints({
      confirmed: 'boolean',
      seats: 'integer',
      budget: 'number',
      name: 'string',
      day: 'YYYY-MM-DD',
      at: 'datetime',
      notes: 'What the customer asked for, in their words',
      agreed: 'boolean - whether they agreed to a follow-up',
      tags: ['string'],
      scores: 'number[]',
      address: { city: 'string', zip: 'string' },
      odd: 'uuid-ish',
    });
    const p = schema.properties as Record<string, Record<string, unknown>>;
    assert.deepEqual(p.confirmed, { type: ['boolean', 'null'] });
    assert.deepEqual(p.seats, { type: ['integer', 'null'] });
    assert.deepEqual(p.budget, { type: ['number', 'null'] });
    assert.deepEqual(p.name, { type: ['string', 'null'] });
    assert.equal(p.day!.format, 'date');
    assert.equal(p.at!.format, 'date-time');
    assert.deepEqual(p.notes, { type: ['string', 'null'], description: 'What the customer asked for, in their words' });
    assert.deepEqual(p.agreed, { type: ['boolean', 'null'], description: 'whether they agreed to a follow-up' });
    assert.deepEqual(p.tags, { type: ['array', 'null'], items: { type: ['string', 'null'] } });
    assert.deepEqual(p.scores, { type: ['array', 'null'], items: { type: 'number' } });
    assert.equal((p.address!.type as string[])[0], 'object');
    assert.deepEqual(p.address!.required, ['city', 'zip']);
    assert.deepEqual(p.odd, { type: ['string', 'null'], description: 'uuid-ish' });
    assert.equal(schema.additionalProperties, false);
    assert.equal((schema.required as string[]).length, 12);
  });

  it('coerces analyze answers to the asked type', () => {
    assert.equal(coerce('Yes.', schemaForType('boolean')), true);
    assert.equal(coerce('no', schemaForType('boolean')), false);
    assert.equal(coerce('maybe', schemaForType('boolean')), null);
    assert.equal(coerce('3 seats', schemaForType('number')), 3);
    assert.equal(coerce(2.6, schemaForType('integer')), 3);
    assert.equal(coerce('n/a', schemaForType('number')), null);
    assert.equal(coerce('$1,200.50', schemaForType('number')), 1200.5);
    assert.equal(coerce(42, schemaForType('human or voicemail')), '42');
    assert.equal(coerce(null, schemaForType('string')), null);
    assert.deepEqual(coerce('a', schemaForType('string[]')), ['a']);
  });

  it('finds the JSON object in plain, fenced or chatty replies', () => {
    assert.deepEqual(parseJsonObject('{"a":1}'), { a: 1 });
    assert.deepEqual(parseJsonObject('Here you go:\n```json\n{"a": true}\n```'), { a: true });
    assert.deepEqual(parseJsonObject('Sure! {"a": "x"} Hope that helps.'), { a: 'x' });
    assert.equal(parseJsonObject('no json here'), undefined);
    assert.equal(parseJsonObject('[1,2]'), undefined);
  });
});
