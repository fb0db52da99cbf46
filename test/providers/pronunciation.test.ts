import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyPronunciationGuide, type PronunciationRule } from '../../src/providers/tts/pronunciation.js';

const cases: { name: string; text: string; guide: PronunciationRule[]; expected: string }[] = [
  {
    name: 'replaces a whole word, ignoring case by default',
    text: 'Ask about SQL, sql and Sql.',
    guide: [{ word: 'sql', pronunciation: 'sequel' }],
    expected: 'Ask about sequel, sequel and sequel.',
  },
  {
    name: 'case_sensitive true replaces only the exact case',
    text: 'US customers, us included.',
    guide: [{ word: 'US', pronunciation: 'United States', case_sensitive: true }],
    expected: 'United States customers, us included.',
  },
  {
    name: 'spaced (default true) leaves the word inside longer words alone',
    text: 'The API and the APIs of RAPID.',
    guide: [{ word: 'API', pronunciation: 'A P I' }],
    expected: 'The A P I and the APIs of RAPID.',
  },
  {
    name: 'spaced false replaces substrings too',
    text: 'The API and the APIs of RAPID.',
    guide: [{ word: 'API', pronunciation: 'A P I', spaced: false }],
    expected: 'The A P I and the A P Is of RA P ID.',
  },
  {
    name: 'spaced false with case_sensitive true',
    text: 'Openline and openline',
    guide: [{ word: 'line', pronunciation: 'lane', spaced: false, case_sensitive: true }],
    expected: 'Openlane and openlane',
  },
  {
    name: 'a word with punctuation and symbols matches literally',
    text: 'We use C++ and Dr. Smith (not C) at 3.5% interest.',
    guide: [
      { word: 'C++', pronunciation: 'C plus plus' },
      { word: 'Dr.', pronunciation: 'Doctor' },
      { word: '3.5%', pronunciation: 'three and a half percent' },
    ],
    expected: 'We use C plus plus and Doctor Smith (not C) at three and a half percent interest.',
  },
  {
    name: 'word boundaries hold for letters of any script',
    text: 'café cafés Café',
    guide: [{ word: 'café', pronunciation: 'kafay' }],
    expected: 'kafay cafés kafay',
  },
  {
    name: 'a digit or underscore next to the word is not a boundary',
    text: 'id id2 my_id id',
    guide: [{ word: 'id', pronunciation: 'I D' }],
    expected: 'I D id2 my_id I D',
  },
  {
    name: 'replacements are not rewritten by later rules',
    text: 'We love SQL.',
    guide: [
      { word: 'SQL', pronunciation: 'sequel' },
      { word: 'sequel', pronunciation: 'the next movie' },
    ],
    expected: 'We love sequel.',
  },
  {
    name: 'the longest of overlapping matches wins, whatever the rule order',
    text: 'Flights to New York and York.',
    guide: [
      { word: 'York', pronunciation: 'Yorck' },
      { word: 'New York', pronunciation: 'Noo Yawk' },
    ],
    expected: 'Flights to Noo Yawk and Yorck.',
  },
  {
    name: 'the first rule wins between equal matches',
    text: 'Call Anna.',
    guide: [
      { word: 'anna', pronunciation: 'Ah-na' },
      { word: 'Anna', pronunciation: 'Ann-a', case_sensitive: true },
    ],
    expected: 'Call Ah-na.',
  },
  {
    name: 'special characters of a pronunciation are kept as written',
    text: 'Price in USD',
    guide: [{ word: 'USD', pronunciation: '$& dollars $1' }],
    expected: 'Price in $& dollars $1',
  },
  { name: 'an empty guide changes nothing', text: 'Hello there.', guide: [], expected: 'Hello there.' },
  {
    name: 'an empty word is ignored',
    text: 'Hello',
    guide: [{ word: '', pronunciation: 'x', spaced: false }],
    expected: 'Hello',
  },
];

for (const c of cases) {
  test(`pronunciation guide: ${c.name}`, () => {
    assert.equal(applyPronunciationGuide(c.text, c.guide), c.expected);
  });
}

test('pronunciation guide: null or undefined guide returns the text', () => {
  assert.equal(applyPronunciationGuide('Hi', null), 'Hi');
  assert.equal(applyPronunciationGuide('Hi', undefined), 'Hi');
});

test('pronunciation guide: the same guide applies to many sentences alike', () => {
  const guide: PronunciationRule[] = [{ word: 'Acme', pronunciation: 'Ack-me' }];
  assert.equal(applyPronunciationGuide('Acme here.', guide), 'Ack-me here.');
  assert.equal(applyPronunciationGuide('Thanks for calling acme!', guide), 'Thanks for calling Ack-me!');
});
