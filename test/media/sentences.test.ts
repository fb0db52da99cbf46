import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sentenceEnd, sentencesOf, textOf } from '../../src/media/sentences.js';

async function* pieces(...parts: string[]): AsyncGenerator<string> {
  for (const part of parts) yield part;
}

async function collect(source: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const s of source) out.push(s);
  return out;
}

test('a streamed reply is split into sentences as soon as each is complete', async () => {
  const got = await collect(
    sentencesOf(
      pieces('Hi Ada', '! This is Dr. Smith', "'s office. Your visit is on Friday at 3.30", ' pm. See you then.'),
    ),
  );
  assert.deepEqual(got, [
    'Hi Ada!',
    "This is Dr. Smith's office.",
    'Your visit is on Friday at 3.30 pm.',
    'See you then.',
  ]);
});

test('a whole string stays one piece; a long sentence is cut at a clause', async () => {
  assert.deepEqual(await collect(sentencesOf('One. Two.')), ['One. Two.']);
  const long =
    'I looked at every appointment we have next week for you and your husband, and the only time that works for both is Tuesday. ';
  const got = await collect(sentencesOf(pieces(long)));
  assert.deepEqual(got, [
    'I looked at every appointment we have next week for you and your husband,',
    'and the only time that works for both is Tuesday.',
  ]);
  assert.equal(sentenceEnd('Short, no end yet'), -1);
  assert.equal(await textOf(pieces('a', 'b')), 'ab');
});
