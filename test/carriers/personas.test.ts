import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScaledClock } from '../../src/clock.js';
import { SandboxNetwork } from '../../src/carriers/sandbox/network.js';
import {
  PersonaFileError,
  loadPersonas,
  parsePersona,
  readPersonaDir,
} from '../../src/carriers/sandbox/persona-format.js';
import { ruleMatches } from '../../src/carriers/sandbox/persona.js';
import { ScriptedAgent } from './scripted-agent.js';

const scratch = mkdtempSync(join(tmpdir(), 'openline-personas-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

let dirCount = 0;
function personaDir(files: Record<string, unknown>): string {
  const dir = join(scratch, `dir-${++dirCount}`);
  mkdirSync(dir);
  for (const [name, content] of Object.entries(files)) {
    writeFileSync(join(dir, name), typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  }
  return dir;
}

const valid = {
  id: 'receptionist',
  number: '0150',
  name: 'Robin at the front desk',
  description: 'Answers with the company name and offers to take a message.',
  ring: { kind: 'answer', afterMs: 1000 },
  start: 'greet',
  states: {
    greet: [
      { say: 'Good morning, Acme, Robin speaking.' },
      {
        listen: {
          timeoutMs: 10000,
          on: [{ keywords: ['message'], do: [{ say: 'Of course, go ahead.' }, { goto: 'take' }] }],
          otherwise: [{ say: 'Would you like to leave a message?' }, { goto: 'greet' }],
        },
      },
    ],
    take: [{ record: { silenceTimeoutMs: 5000 } }, { say: 'Thanks, I will pass it on. Bye.' }, { hangup: true }],
  },
};

function errorOf(json: unknown): string {
  try {
    parsePersona(json, 'my-persona.json');
  } catch (error) {
    assert.ok(error instanceof PersonaFileError);
    return error.message;
  }
  assert.fail('expected the persona to be rejected');
}

describe('personas: the built-in set', () => {
  const personas = loadPersonas();

  it('covers 555-0100 to 555-0112 of CONTRACT.md section 6, for any area code', () => {
    const numbers = new Set(personas.list().map((p) => p.number ?? 'none'));
    for (let i = 0; i <= 12; i++) assert.ok(numbers.has(`01${String(i).padStart(2, '0')}`), `01${i}`);
    // The example pathways' callers (0140-0144) come on top; every number is in 0100-0199.
    for (const n of numbers) assert.match(n, /^01\d\d$/);
    assert.equal(personas.forNumber('+12125550103').id, 'ivr');
    assert.equal(personas.forNumber('+1 (907) 555-0105').id, 'busy');
  });

  it('gives every other number the person of 0100', () => {
    for (const number of ['+12125550199', '+12125551234', '+442071838750', '+14155550', 'not a number']) {
      assert.equal(personas.forNumber(number).id, 'person', number);
    }
  });
});

describe('personas: validation names the file and the field', () => {
  it('accepts a valid persona', () => {
    assert.equal(parsePersona(valid, 'ok.json').id, 'receptionist');
  });

  const cases: [string, unknown, RegExp][] = [
    ['not an object', [1, 2], /my-persona\.json: a persona file holds one JSON object/],
    ['missing name', { ...valid, name: undefined }, /my-persona\.json: \/name: /],
    ['unknown field', { ...valid, colour: 'blue' }, /my-persona\.json: \/colour: /],
    ['bad number', { ...valid, number: '150' }, /my-persona\.json: \/number: /],
    ['unknown ring kind', { ...valid, ring: { kind: 'maybe' } }, /\/ring\/kind: must be one of answer, no-answer/],
    ['ring without its time', { ...valid, ring: { kind: 'answer' } }, /\/ring\/afterMs: /],
    ['start state missing', { ...valid, start: 'hello' }, /\/start: no state named "hello"/],
    ['answering without states', { ...valid, states: undefined, start: undefined }, /\/start: a persona that answers/],
    [
      'unknown step',
      { ...valid, states: { greet: [{ sing: 'la' }] } },
      /\/states\/greet\/0: a step is an object with one of: say, pause/,
    ],
    [
      'wrong step field type',
      { ...valid, states: { greet: [{ say: 'hi' }, { pause: 'long' }] } },
      /\/states\/greet\/1\/pause: /,
    ],
    [
      'goto to nowhere, deep in a rule',
      { ...valid, states: { greet: [{ listen: { on: [{ any: true, do: [{ goto: 'nowhere' }] }] } }] } },
      /\/states\/greet\/0\/listen\/on\/0\/do\/0\/goto: no state named "nowhere"/,
    ],
    [
      'rule without a trigger',
      { ...valid, states: { greet: [{ listen: { on: [{ do: [] }] } }] } },
      /\/states\/greet\/0\/listen\/on\/0: a rule needs one of/,
    ],
    [
      'bad regex',
      { ...valid, states: { greet: [{ listen: { on: [{ regex: '(unclosed', do: [] }] } }] } },
      /\/states\/greet\/0\/listen\/on\/0\/regex: /,
    ],
    [
      'tone without frequency',
      { ...valid, states: { greet: [{ tone: { durationMs: 500 } }] } },
      /\/states\/greet\/0\/tone\/frequencyHz: /,
    ],
    [
      'repeat with a bad inner step',
      { ...valid, states: { greet: [{ repeat: { times: 2, steps: [{ hangup: false }] } }] } },
      /\/states\/greet\/0\/repeat\/steps\/0\/hangup: /,
    ],
  ];
  for (const [name, json, expected] of cases) {
    it(name, () => assert.match(errorOf(json), expected));
  }

  it('reports invalid JSON with the file name', () => {
    const dir = personaDir({ 'broken.json': '{ "id": "x", ' });
    assert.throws(() => readPersonaDir(dir), /Invalid persona file .*broken\.json: not valid JSON/);
  });

  it('reports a become of an unknown persona with the file name', () => {
    const dir = personaDir({
      'lost.json': { ...valid, states: { greet: [{ become: 'ghost' }] } },
    });
    assert.throws(() => loadPersonas([dir]), /lost\.json: becomes unknown persona "ghost"/);
  });

  it('rejects two personas with one id in a directory', () => {
    const dir = personaDir({ 'a.json': valid, 'b.json': valid });
    assert.throws(() => readPersonaDir(dir), /b\.json: \/id: "receptionist" is also the id of a\.json/);
  });
});

describe('personas: rules', () => {
  const at = new Date();
  it('match keywords as whole words, case-insensitively', () => {
    const rule = { keywords: ['bye', 'see you'], do: [] };
    assert.equal(ruleMatches(rule, { type: 'speech', text: 'OK, BYE now', at, durationMs: 1 }, 1), true);
    assert.equal(ruleMatches(rule, { type: 'speech', text: 'See you soon', at, durationMs: 1 }, 1), true);
    assert.equal(ruleMatches(rule, { type: 'speech', text: 'the byelaw says', at, durationMs: 1 }, 1), false);
    assert.equal(ruleMatches(rule, { type: 'dtmf', digit: '1', at }, 1), false);
  });

  it('combine speech triggers, and keep digits and speech starts apart', () => {
    const late = { any: true as const, exchangesAtLeast: 3, do: [] };
    assert.equal(ruleMatches(late, { type: 'speech', text: 'hi', at, durationMs: 1 }, 2), false);
    assert.equal(ruleMatches(late, { type: 'speech', text: 'hi', at, durationMs: 1 }, 3), true);
    const keys = { digits: '12', do: [] };
    assert.equal(ruleMatches(keys, { type: 'dtmf', digit: '2', at }, 0), true);
    assert.equal(ruleMatches(keys, { type: 'dtmf', digit: '3', at }, 0), false);
    assert.equal(ruleMatches({ speechStart: true, do: [] }, { type: 'speech_start', at }, 0), true);
  });
});

describe('personas: a user directory', () => {
  it('adds personas on new numbers and overrides built-in ones', async () => {
    const dir = personaDir({
      'receptionist.json': valid,
      'quiet.json': {
        id: 'silent',
        number: '0108',
        name: 'Someone who whispers',
        description: 'Replaces the built-in silent persona.',
        ring: { kind: 'answer', afterMs: 500 },
        start: 's',
        states: { s: [{ say: 'psst' }] },
      },
      'README.txt': 'not a persona',
    });
    const clock = new ScaledClock(50);
    const network = new SandboxNetwork({ clock, personaDirs: [dir] });
    try {
      assert.equal(network.personas.forNumber('+13035550108').name, 'Someone who whispers');
      assert.equal(network.personas.forNumber('+13035550100').id, 'person', 'built-ins are still there');

      const result = await network.dial({
        callId: 'desk',
        to: '+13035550150',
        from: null,
        ringTimeoutMs: 30_000,
        signal: new AbortController().signal,
      });
      assert.equal(result.status, 'answered');
      if (result.status !== 'answered') return;
      const agent = new ScriptedAgent(result.leg, clock);
      await agent.hear(/Robin speaking/);
      await agent.say('Could I leave a message for Sam?');
      await agent.hear(/go ahead/);
      await agent.say('Please call Jordan back about the contract.');
      await agent.hear(/pass it on/);
      await agent.next('hangup');
      assert.deepEqual(network.call('desk')?.remote?.recording, ['Please call Jordan back about the contract.']);
    } finally {
      network.close();
    }
  });

  it('can load only the user directory, as long as it has a 0100 persona', () => {
    const dir = personaDir({ 'r.json': valid });
    assert.throws(() => loadPersonas([dir], { builtins: false }), /must include one for number 0100/);
    const withDefault = personaDir({ 'r.json': { ...valid, number: '0100' } });
    assert.equal(loadPersonas([withDefault], { builtins: false }).forNumber('+1').id, 'receptionist');
  });
});
