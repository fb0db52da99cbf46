import fs from 'node:fs';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bestMatch, type Candidate } from '../../src/pathways/offline.js';

/** The edges leaving one node of an example pathway, as the offline model matches them. */
function edgesOf(file: string, source: string): Candidate[] {
  const pathway = JSON.parse(fs.readFileSync(`examples/pathways/${file}.json`, 'utf8')) as {
    edges: { id: string; source: string; label?: string; description?: string }[];
  };
  return pathway.edges
    .filter((e) => e.source === source)
    .map((e) => ({ id: e.id, text: [e.label, e.description].filter(Boolean).join(' ') }));
}

const renewals: Candidate[] = [
  { id: 'e1', text: 'wants to renew' },
  { id: 'e2', text: 'not interested' },
];
const followUp: Candidate[] = [
  { id: 'yes', text: 'agrees to the offer' },
  { id: 'later', text: 'call back later' },
  { id: 'no', text: 'declines' },
  { id: 'wrong', text: 'wrong person' },
];

// Everyday ways of saying yes, no, later, wrong person: each must reach the edge whose meaning fits.
const cases: [string, Candidate[], string, string | undefined][] = [
  ['docs example', renewals, 'Yes, that works for me.', 'e1'],
  ['docs example', renewals, 'Sure, go ahead.', 'e1'],
  ['docs example', renewals, "I'd like that.", 'e1'],
  ['docs example', renewals, "No thanks, I'm not interested.", 'e2'],
  ['docs example', renewals, "I don't want it.", 'e2'],
  ['docs example', renewals, 'Nope.', 'e2'],
  ['follow-up', followUp, 'Yeah, sounds good.', 'yes'],
  ['follow-up', followUp, 'No problem, happy to.', 'yes'],
  ['follow-up', followUp, "Not now, I'm busy. Call me back next week.", 'later'],
  ['follow-up', followUp, 'Can we do this some other time?', 'later'],
  ['follow-up', followUp, 'You have the wrong number.', 'wrong'],
  ['follow-up', followUp, 'Who is this? There is no one here by that name.', 'wrong'],
  ['follow-up', followUp, 'No, I am not interested at all.', 'no'],
  ['appointment', edgesOf('appointment-booking', 'greet'), 'Yes please, I would like to come in.', 'wants'],
  ['appointment', edgesOf('appointment-booking', 'greet'), "No, I don't need an appointment.", 'not_now'],
  ['appointment', edgesOf('appointment-booking', 'confirm'), 'Sure, text me.', 'send_text'],
  ['appointment', edgesOf('appointment-booking', 'confirm'), "No, that's fine, I don't need a text.", 'no_text'],
  ['leads', edgesOf('lead-qualification', 'greet'), 'Yes, I own it.', 'owner'],
  ['leads', edgesOf('lead-qualification', 'greet'), "No, I'm renting.", 'renter'],
  ['support', edgesOf('support-triage', 'troubleshoot'), 'Yeah, I already did that.', 'already'],
  ['support', edgesOf('support-triage', 'troubleshoot'), "No, I haven't tried that yet.", 'not_yet'],
  ['support', edgesOf('support-triage', 'restart'), 'It works now, thank you.', 'fixed'],
  ['support', edgesOf('support-triage', 'restart'), 'Still not working.', 'still_broken'],
];

for (const [group, edges, heard, expected] of cases) {
  test(`${group}: "${heard}" takes ${expected ?? 'no edge'}`, () => {
    assert.equal(bestMatch(heard, edges)?.id, expected, JSON.stringify(bestMatch(heard, edges)));
  });
}

test('a bare yes does not make a topic: the intent words alone never carry a global node', async () => {
  const { INTENT_WORDS, sharedWords } = await import('../../src/pathways/offline.js');
  const matched = sharedWords('Yes, sure.', 'wants to speak to a person');
  assert.deepEqual(matched, ['yes'], 'the label wants a yes');
  assert.ok(
    matched.every((w) => INTENT_WORDS.has(w)),
    'but only intent words: not a topic',
  );
  assert.ok(sharedWords('Can I speak to a person?', 'wants to speak to a person').some((w) => !INTENT_WORDS.has(w)));
});
