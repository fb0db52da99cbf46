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

test('Chinese and Japanese replies, whose full stops take no space after them, are split as they stream', async () => {
  const chinese = await collect(
    sentencesOf(pieces('你好。我是', '预约助手。请问您想订', '几点的位子？真的吗？', '！好的')),
  );
  assert.deepEqual(chinese, ['你好。', '我是预约助手。', '请问您想订几点的位子？', '真的吗？！', '好的']);
  const japanese = await collect(sentencesOf(pieces('はい、承知しました。「少々お待ちください。」', 'ありがとう')));
  assert.deepEqual(japanese, ['はい、承知しました。', '「少々お待ちください。」', 'ありがとう']);
  // A stop at the end of what came so far may be followed by another ("？！"): not a sentence yet.
  assert.equal(sentenceEnd('真的吗？'), -1);
  // A long sentence is cut at an ideographic comma too.
  const long = `${'我们看了下周所有的时间'.repeat(5)}，${'只有星期二下午三点对两位都合适'.repeat(5)}。再见。`;
  const parts = await collect(sentencesOf(pieces(long)));
  assert.equal(parts.length, 3, JSON.stringify(parts));
  assert.ok(parts[0]!.endsWith('，'));
  // Hindi's danda ends a sentence as a full stop does.
  assert.deepEqual(await collect(sentencesOf(pieces('नमस्ते। आप कैसे हैं?'))), ['नमस्ते।', 'आप कैसे हैं?']);
});
