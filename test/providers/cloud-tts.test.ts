import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { concatPcm, decodeMulaw, encodeMulaw, tone } from '../../src/media/audio.js';
import { ElevenLabsTts } from '../../src/providers/tts/elevenlabs.js';
import { OpenAiTts } from '../../src/providers/tts/openai.js';
import { TtsError, type PcmChunk, type TtsProvider } from '../../src/providers/tts/types.js';
import { FakeTts, type FakeTtsRequest } from '../../src/testing/fake-tts.js';

const TEXT = 'Thanks for calling, how can I help?';

async function collect(iterable: AsyncIterable<PcmChunk>): Promise<PcmChunk[]> {
  const chunks: PcmChunk[] = [];
  for await (const chunk of iterable) chunks.push(chunk);
  return chunks;
}

/** Waits until the fake has seen the client go (its close event follows the client's abort). */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(condition(), what);
}

/** The fake's tone for TEXT: 60 ms a character. */
function expectedTone(rate: number): Int16Array {
  return tone([440], Math.min(4000, Math.max(300, TEXT.length * 60)), 8000, rate);
}

const vendors: {
  name: string;
  rate: number;
  make: (fake: FakeTts, options?: { key?: string; timeoutMs?: number }) => TtsProvider;
  voice: string;
  keyHint: RegExp;
}[] = [
  {
    name: 'ElevenLabs',
    rate: 16000,
    voice: 'nPczCjzI2devNBz1zQrb',
    make: (fake, { key = fake.options.apiKey, timeoutMs } = {}) =>
      new ElevenLabsTts({ apiKey: key, baseUrl: fake.url, timeoutMs }),
    keyHint: /ElevenLabs answered 401 \(check ELEVENLABS_API_KEY\): invalid_api_key: Invalid API key/,
  },
  {
    name: 'OpenAI',
    rate: 24000,
    voice: 'echo',
    make: (fake, { key = fake.options.apiKey, timeoutMs } = {}) =>
      new OpenAiTts({ apiKey: key, baseUrl: `${fake.url}/v1`, model: 'gpt-4o-mini-tts', maxRetries: 0, timeoutMs }),
    keyHint: /OpenAI speech answered 401 \(check OPENAI_API_KEY\): .*Incorrect API key provided/,
  },
];

for (const vendor of vendors) {
  describe(`${vendor.name} text-to-speech against its fake`, () => {
    let fake: FakeTts;
    let tts: TtsProvider;
    before(async () => {
      fake = await FakeTts.start();
      tts = vendor.make(fake);
    });
    after(() => fake.close());

    it('streams the whole audio, sample for sample, at the vendor rate, though chunks split samples', async () => {
      fake.options.chunks = 7;
      const chunks = await collect(tts.synthesize({ text: TEXT, voice: vendor.voice, language: 'en-US' }));
      assert.ok(chunks.length >= 2, `${chunks.length} chunks`);
      for (const chunk of chunks) assert.equal(chunk.sampleRate, vendor.rate);
      assert.deepEqual(concatPcm(chunks.map((c) => c.pcm)), expectedTone(vendor.rate));
    });

    it('yields the first chunk before the server has sent the last', async () => {
      fake.options.chunks = 4;
      fake.options.chunkIntervalMs = 100;
      let request: FakeTtsRequest | undefined;
      let completedAtFirstChunk: boolean | undefined;
      for await (const _ of tts.synthesize({ text: TEXT, voice: vendor.voice, language: 'en-US' })) {
        request ??= fake.requests.at(-1);
        completedAtFirstChunk ??= request!.completed;
      }
      assert.equal(completedAtFirstChunk, false);
      assert.equal(request!.completed, true);
      fake.options.chunkIntervalMs = 10;
    });

    it('sends what the vendor expects', async () => {
      await collect(tts.synthesize({ text: TEXT, voice: vendor.voice, language: 'en-US' }));
      const request = fake.requests.at(-1)!;
      if (vendor.name === 'ElevenLabs') {
        assert.equal(request.path, `/v1/text-to-speech/${vendor.voice}/stream`);
        assert.equal(request.query.get('output_format'), 'pcm_16000');
        assert.equal(request.credential, fake.options.apiKey);
        assert.deepEqual(request.body, { text: TEXT, model_id: 'eleven_flash_v2_5' });
      } else {
        assert.equal(request.path, '/v1/audio/speech');
        assert.equal(request.credential, `Bearer ${fake.options.apiKey}`);
        assert.deepEqual(request.body, {
          model: 'gpt-4o-mini-tts',
          input: TEXT,
          voice: vendor.voice,
          response_format: 'pcm',
        });
      }
    });

    it('stops at once on abort: the iteration ends and the connection is dropped', async () => {
      fake.options.chunks = 10;
      fake.options.chunkIntervalMs = 50;
      const controller = new AbortController();
      let chunks = 0;
      for await (const _ of tts.synthesize({
        text: TEXT,
        voice: vendor.voice,
        language: 'en-US',
        signal: controller.signal,
      })) {
        chunks++;
        controller.abort();
      }
      assert.equal(chunks, 1);
      const request = fake.requests.at(-1)!;
      await until(() => request.disconnectedEarly, 'the server saw the client leave');
      assert.ok(request.chunksSent < 10);
      fake.options.chunkIntervalMs = 10;
    });

    it('an abort while waiting for the first audio ends the iteration quietly', async () => {
      fake.options.firstChunkDelayMs = 300;
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 20);
      const chunks = await collect(
        tts.synthesize({ text: TEXT, voice: vendor.voice, language: 'en-US', signal: controller.signal }),
      );
      assert.equal(chunks.length, 0);
      fake.options.firstChunkDelayMs = 0;
    });

    it('a wrong key is a clear, non-retryable error naming the variable', async () => {
      const bad = vendor.make(fake, { key: 'wrong-key' });
      await assert.rejects(collect(bad.synthesize({ text: TEXT, voice: vendor.voice, language: 'en-US' })), (error) => {
        assert.ok(error instanceof TtsError);
        assert.equal(error.status, 401);
        assert.equal(error.retryable, false);
        assert.match(error.message, vendor.keyHint);
        assert.doesNotMatch(error.message, /wrong-key/);
        return true;
      });
    });

    it("a 429 or 503 is retryable and keeps the vendor's Retry-After; audio that breaks off is retryable", async () => {
      for (const status of [429, 503]) {
        fake.fail({ status, retryAfterS: 2 });
        await assert.rejects(
          collect(tts.synthesize({ text: TEXT, voice: vendor.voice, language: 'en-US' })),
          (error) => {
            assert.ok(error instanceof TtsError);
            assert.equal(error.status, status);
            assert.equal(error.retryable, true);
            assert.equal(error.retryAfterMs, 2000);
            assert.match(error.message, /Scripted failure/);
            return true;
          },
        );
      }
      fake.fail({ cutAfterChunks: 2 });
      const chunks: PcmChunk[] = [];
      await assert.rejects(
        async () => {
          for await (const chunk of tts.synthesize({ text: TEXT, voice: vendor.voice, language: 'en-US' }))
            chunks.push(chunk);
        },
        (error) => {
          assert.ok(error instanceof TtsError);
          assert.equal(error.retryable, true);
          assert.match(error.message, /stopped sending audio/);
          return true;
        },
      );
      assert.ok(chunks.length > 0, 'the audio before the break came through');
    });

    it('an unreachable server is a retryable error', async () => {
      const gone = await FakeTts.start();
      const dead = vendor.make(gone);
      await gone.close();
      await assert.rejects(
        collect(dead.synthesize({ text: TEXT, voice: vendor.voice, language: 'en-US' })),
        (error) => {
          assert.ok(error instanceof TtsError);
          assert.equal(error.retryable, true);
          return true;
        },
      );
    });
  });
}

describe('OpenAI-compatible speech servers that answer in WAV whatever was asked', () => {
  it('are read as WAV at the rate its header names, header left out of the audio', async () => {
    const fake = await FakeTts.start({ openAiAudio: 'wav' });
    try {
      const tts = new OpenAiTts({ apiKey: fake.options.apiKey, baseUrl: `${fake.url}/v1`, model: 'kokoro' });
      const chunks = await collect(tts.synthesize({ text: TEXT, voice: 'echo', language: 'en-US' }));
      assert.ok(chunks.length > 0 && chunks.every((c) => c.sampleRate === 22050));
      assert.deepEqual(concatPcm(chunks.map((c) => c.pcm)), expectedTone(22050));
    } finally {
      await fake.close();
    }
  });
});

describe('ElevenLabs output formats', () => {
  let fake: FakeTts;
  before(async () => {
    fake = await FakeTts.start();
  });
  after(() => fake.close());

  it('a base written with the API version (…/v1, as the API reference shows it) reaches the same endpoint', async () => {
    for (const base of [`${fake.url}/v1`, `${fake.url}/v1/`]) {
      const tts = new ElevenLabsTts({ apiKey: fake.options.apiKey, baseUrl: base });
      const chunks = await collect(tts.synthesize({ text: TEXT, voice: 'v1', language: 'en-US' }));
      assert.ok(chunks.length > 0, base);
      assert.equal(fake.requests.at(-1)!.path, '/v1/text-to-speech/v1/stream');
    }
  });

  it('ulaw_8000 arrives as telephone-rate PCM', async () => {
    const tts = new ElevenLabsTts({ apiKey: fake.options.apiKey, baseUrl: fake.url, outputFormat: 'ulaw_8000' });
    const chunks = await collect(tts.synthesize({ text: TEXT, voice: 'v1', language: 'en-US' }));
    assert.equal(fake.requests.at(-1)!.query.get('output_format'), 'ulaw_8000');
    for (const chunk of chunks) assert.equal(chunk.sampleRate, 8000);
    assert.deepEqual(concatPcm(chunks.map((c) => c.pcm)), decodeMulaw(encodeMulaw(expectedTone(8000))));
  });

  it('blank text sends no request and yields nothing', async () => {
    const tts = new ElevenLabsTts({ apiKey: fake.options.apiKey, baseUrl: fake.url });
    const before = fake.requests.length;
    assert.deepEqual(await collect(tts.synthesize({ text: '  ', voice: 'v1', language: 'en-US' })), []);
    assert.equal(fake.requests.length, before);
  });
});

describe('OpenAI speech with real speech from the fake', () => {
  let fake: FakeTts;
  before(async () => {
    fake = await FakeTts.start({ audio: 'espeak', chunks: 6 });
  });
  after(() => fake.close());

  it('streams espeak-ng speech resampled to 24 kHz', async () => {
    const tts = new OpenAiTts({ apiKey: fake.options.apiKey, baseUrl: `${fake.url}/v1`, model: 'tts-1' });
    const chunks = await collect(tts.synthesize({ text: 'Hello there.', voice: 'nova', language: 'en-US' }));
    const pcm = concatPcm(chunks.map((c) => c.pcm));
    assert.ok(chunks.length >= 2);
    assert.ok(pcm.length > 24000 * 0.5, `${pcm.length} samples`);
    assert.ok(pcm.some((s) => Math.abs(s) > 3000));
  });
});

describe('a vendor that stalls', () => {
  let fake: FakeTts;
  before(async () => {
    fake = await FakeTts.start({ chunks: 3 });
  });
  after(() => fake.close());

  for (const vendor of vendors) {
    it(`${vendor.name}: no audio for the timeout, after the first chunk, is a retryable error`, async () => {
      fake.options.firstChunkDelayMs = 0;
      fake.options.chunkIntervalMs = 2000;
      const tts = vendor.make(fake, { timeoutMs: 150 });
      let chunks = 0;
      await assert.rejects(
        (async () => {
          for await (const _ of tts.synthesize({ text: TEXT, voice: vendor.voice, language: 'en-US' })) chunks++;
        })(),
        (error) => {
          assert.ok(error instanceof TtsError);
          assert.equal(error.retryable, true);
          assert.match(error.message, /sent no audio for 150 ms/);
          return true;
        },
      );
      assert.equal(chunks, 1);
    });

    it(`${vendor.name}: no answer within the timeout is a retryable error`, async () => {
      fake.options.firstChunkDelayMs = 2000;
      const tts = vendor.make(fake, { timeoutMs: 150 });
      await assert.rejects(collect(tts.synthesize({ text: TEXT, voice: vendor.voice, language: 'en-US' })), (error) => {
        assert.ok(error instanceof TtsError);
        assert.equal(error.retryable, true);
        assert.match(error.message, /did not answer in time/);
        return true;
      });
    });

    it(`${vendor.name}: a consumer that holds a chunk longer than the timeout is not a stall`, async () => {
      fake.options.firstChunkDelayMs = 0;
      fake.options.chunkIntervalMs = 5;
      const tts = vendor.make(fake, { timeoutMs: 100 });
      const pcm: Int16Array[] = [];
      for await (const chunk of tts.synthesize({ text: TEXT, voice: vendor.voice, language: 'en-US' })) {
        pcm.push(chunk.pcm);
        await new Promise((r) => setTimeout(r, 250));
      }
      assert.deepEqual(concatPcm(pcm), expectedTone(vendor.rate));
    });
  }
});
