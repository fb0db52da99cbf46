import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CachedTts } from '../../src/providers/tts/cache.js';
import { TtsError, type PcmChunk, type TtsProvider, type TtsRequest } from '../../src/providers/tts/types.js';

/** A provider that counts its syntheses and yields three chunks with pauses, or fails. */
function counting(fail = false) {
  const calls: string[] = [];
  const provider: TtsProvider = {
    name: 'fake',
    async *synthesize(request: TtsRequest): AsyncGenerator<PcmChunk> {
      calls.push(request.text);
      for (let i = 0; i < 3; i++) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (fail && i === 1) throw new TtsError('vendor down', true);
        yield { pcm: new Int16Array(160).fill(i + 1), sampleRate: 8000 };
      }
    },
  };
  return { provider, calls };
}

/** What was said, as runs of equal samples: [1, 2, 3] for the fake's three chunks, however they are cut. */
async function say(tts: TtsProvider, text: string, signal?: AbortSignal, voice = 'a'): Promise<number[]> {
  const runs: number[] = [];
  for await (const chunk of tts.synthesize({ text, voice, language: 'en-US', ...(signal && { signal }) }))
    for (const sample of chunk.pcm) if (runs.at(-1) !== sample) runs.push(sample);
  return runs;
}

test('the same words are synthesised once, also when asked for at the same time', async () => {
  const { provider, calls } = counting();
  const tts = new CachedTts(provider);
  const [a, b] = await Promise.all([say(tts, 'Hello there.'), say(tts, 'Hello there.')]);
  assert.deepEqual(a, [1, 2, 3]);
  assert.deepEqual(b, [1, 2, 3]);
  assert.deepEqual(await say(tts, 'Hello there.'), [1, 2, 3]);
  assert.equal(calls.length, 1);
  await say(tts, 'Hello there.', undefined, 'b');
  assert.equal(calls.length, 2, 'another voice is other audio');
});

test('a caller cut off stops reading; the synthesis still completes and is kept', async () => {
  const { provider, calls } = counting();
  const tts = new CachedTts(provider);
  const cut = new AbortController();
  const heard: number[] = [];
  for await (const chunk of tts.synthesize({ text: 'Goodbye.', voice: 'a', language: 'en-US', signal: cut.signal })) {
    heard.push(chunk.pcm[0]!);
    cut.abort();
  }
  assert.deepEqual(heard, [1]);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(await say(tts, 'Goodbye.'), [1, 2, 3]);
  assert.equal(calls.length, 1);
});

test('a failure reaches every caller and nothing is kept', async () => {
  const { provider, calls } = counting(true);
  const tts = new CachedTts(provider);
  await assert.rejects(say(tts, 'Hi.'), TtsError);
  await assert.rejects(say(tts, 'Hi.'), TtsError);
  assert.equal(calls.length, 2);
});

test('beyond its size the least recently used words go first', async () => {
  const { provider, calls } = counting();
  const tts = new CachedTts(provider, { maxBytes: 2 * 3 * 320 });
  // Each synthesis is 3 x 160 samples of 2 bytes: two fit.
  await say(tts, 'one');
  await say(tts, 'two');
  await say(tts, 'one');
  await say(tts, 'three'); // drops "two"
  await say(tts, 'one');
  assert.deepEqual(calls, ['one', 'two', 'three']);
  await say(tts, 'two');
  assert.deepEqual(calls, ['one', 'two', 'three', 'two']);
});
