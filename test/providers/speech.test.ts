import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { concatPcm } from '../../src/media/audio.js';
import { createSpeech } from '../../src/providers/speech.js';
import { DeepgramStt } from '../../src/providers/stt/deepgram.js';
import { ElevenLabsTts } from '../../src/providers/tts/elevenlabs.js';
import { EspeakTts } from '../../src/providers/tts/espeak.js';
import { OpenAiTts } from '../../src/providers/tts/openai.js';
import { FakeDeepgram } from '../../src/testing/fake-deepgram.js';
import { FakeTts } from '../../src/testing/fake-tts.js';
import { CachedTts } from '../../src/providers/tts/cache.js';
import type { TtsProvider } from '../../src/providers/tts/types.js';

/** The vendor behind the process's TTS cache. */
const vendor = (tts: TtsProvider) => (tts instanceof CachedTts ? tts.provider : tts);

describe('speech configuration', () => {
  it('defaults to espeak-ng and no streaming STT', () => {
    const { speech } = loadConfig({});
    assert.equal(speech.tts, 'espeak');
    assert.equal(speech.deepgram, undefined);
    assert.equal(speech.openai.model, 'gpt-4o-mini-tts');
    assert.equal(speech.elevenlabs.model, 'eleven_flash_v2_5');
    assert.equal(speech.elevenlabs.outputFormat, 'pcm_16000');
    const built = createSpeech({ speech });
    assert.ok(vendor(built.tts) instanceof EspeakTts);
    assert.equal(built.stt, null);
  });

  it('reads every speech variable', () => {
    const { speech } = loadConfig({
      OPENLINE_TTS: 'elevenlabs',
      ELEVENLABS_API_KEY: 'xi-key',
      OPENLINE_ELEVENLABS_URL: 'https://eu.elevenlabs.example/',
      OPENLINE_ELEVENLABS_MODEL: 'eleven_turbo_v2_5',
      OPENLINE_ELEVENLABS_FORMAT: 'ulaw_8000',
      OPENAI_API_KEY: 'sk-1',
      OPENLINE_TTS_BASE_URL: 'http://localhost:8880/v1',
      OPENLINE_TTS_MODEL: 'tts-1',
      DEEPGRAM_API_KEY: 'dg-1',
      OPENLINE_DEEPGRAM_URL: 'wss://dg.example.com',
      OPENLINE_DEEPGRAM_MODEL: 'nova-3',
    });
    assert.deepEqual(speech, {
      tts: 'elevenlabs',
      openai: { apiKey: 'sk-1', baseUrl: 'http://localhost:8880/v1', model: 'tts-1' },
      elevenlabs: {
        apiKey: 'xi-key',
        baseUrl: 'https://eu.elevenlabs.example',
        model: 'eleven_turbo_v2_5',
        outputFormat: 'ulaw_8000',
      },
      deepgram: { apiKey: 'dg-1', baseUrl: 'wss://dg.example.com', model: 'nova-3' },
    });
  });

  it('builds the chosen providers', () => {
    const openai = createSpeech(loadConfig({ OPENLINE_TTS: 'openai', OPENAI_API_KEY: 'sk-1', DEEPGRAM_API_KEY: 'k' }));
    assert.ok(vendor(openai.tts) instanceof OpenAiTts);
    assert.ok(openai.stt instanceof DeepgramStt);
    const local = createSpeech(
      loadConfig({ OPENLINE_TTS: 'openai', OPENLINE_TTS_BASE_URL: 'http://localhost:8880/v1' }),
    );
    assert.ok(vendor(local.tts) instanceof OpenAiTts);
    const eleven = createSpeech(loadConfig({ OPENLINE_TTS: 'elevenlabs', ELEVENLABS_API_KEY: 'xi' }));
    assert.ok(vendor(eleven.tts) instanceof ElevenLabsTts);
    // A self-hosted Deepgram may need no key.
    assert.ok(createSpeech(loadConfig({ OPENLINE_DEEPGRAM_URL: 'ws://localhost:8080' })).stt instanceof DeepgramStt);
  });

  const bad: [Record<string, string>, string, RegExp][] = [
    [{ OPENLINE_TTS: 'polly' }, 'OPENLINE_TTS', /must be one of espeak, openai, elevenlabs, got "polly"/],
    [{ OPENLINE_TTS: 'openai' }, 'OPENAI_API_KEY', /is required when OPENLINE_TTS=openai/],
    [{ OPENLINE_TTS: 'elevenlabs' }, 'ELEVENLABS_API_KEY', /is required when OPENLINE_TTS=elevenlabs/],
    [{ OPENLINE_TTS_BASE_URL: 'localhost:8880' }, 'OPENLINE_TTS_BASE_URL', /must start with http:\/\//],
    [{ OPENLINE_TTS_MODEL: 'tts 1' }, 'OPENLINE_TTS_MODEL', /without spaces/],
    [{ OPENLINE_ELEVENLABS_URL: 'ftp://x' }, 'OPENLINE_ELEVENLABS_URL', /must start with http/],
    [{ OPENLINE_ELEVENLABS_FORMAT: 'mp3_44100_128' }, 'OPENLINE_ELEVENLABS_FORMAT', /must be one of pcm_8000/],
    [{ OPENLINE_DEEPGRAM_URL: 'ftp://dg' }, 'OPENLINE_DEEPGRAM_URL', /must start with wss:\/\/ or ws:\/\//],
    [{ OPENLINE_DEEPGRAM_MODEL: 'nova 2' }, 'OPENLINE_DEEPGRAM_MODEL', /without spaces/],
  ];
  for (const [env, variable, message] of bad) {
    it(`refuses ${JSON.stringify(env)} naming ${variable}`, () => {
      assert.throws(
        () => loadConfig(env),
        (error) => {
          assert.ok(error instanceof ConfigError);
          assert.equal(error.variable, variable);
          assert.match(error.message, message);
          assert.ok(error.message.startsWith(variable));
          return true;
        },
      );
    });
  }
});

describe('ttsVoiceFor', () => {
  it('gives each vendor its own voice for the call', () => {
    const espeak = createSpeech(loadConfig({}));
    const openai = createSpeech(loadConfig({ OPENLINE_TTS: 'openai', OPENAI_API_KEY: 'sk' }));
    const eleven = createSpeech(loadConfig({ OPENLINE_TTS: 'elevenlabs', ELEVENLABS_API_KEY: 'xi' }));
    assert.equal(espeak.ttsVoiceFor({ voice: 'maya', language: 'en-US' }), 'en-us+f3');
    assert.equal(espeak.ttsVoiceFor({ voice: 'maya', language: 'es' }), 'es+f3');
    assert.equal(espeak.ttsVoiceFor({ voice: 'HQ6' }), 'en-gb+f1');
    assert.equal(openai.ttsVoiceFor({ voice: 'maya', language: 'es' }), 'nova');
    assert.equal(openai.ttsVoiceFor({ voice: 'RL2' }), 'onyx');
    assert.equal(eleven.ttsVoiceFor({ voice: '1ee98e55-8fb4-4d5a-9fe1-dbfa0c2a7de2' }), 'nPczCjzI2devNBz1zQrb');
    // Unknown or absent: the vendor's default voice (the default preset's).
    assert.equal(eleven.ttsVoiceFor({ voice: 'someone-else' }), 'nPczCjzI2devNBz1zQrb');
    assert.equal(openai.ttsVoiceFor({}), 'echo');
    assert.equal(espeak.ttsVoiceFor({ voice: null, language: null }), 'en-us+m3');
  });
});

describe('createSpeech end to end against the fakes', () => {
  let tts: FakeTts;
  let dg: FakeDeepgram;
  before(async () => {
    tts = await FakeTts.start({ apiKey: 'xi-e2e' });
    dg = await FakeDeepgram.start({ apiKey: 'dg-e2e', transcripts: ['Yes please'] });
  });
  after(async () => {
    await tts.close();
    await dg.close();
  });

  it('speaks through the configured ElevenLabs voice and listens through Deepgram', async () => {
    const speech = createSpeech(
      loadConfig({
        OPENLINE_TTS: 'elevenlabs',
        ELEVENLABS_API_KEY: 'xi-e2e',
        OPENLINE_ELEVENLABS_URL: tts.url,
        DEEPGRAM_API_KEY: 'dg-e2e',
        OPENLINE_DEEPGRAM_URL: dg.url,
      }),
    );
    const voice = speech.ttsVoiceFor({ voice: 'evelyn', language: 'en-GB' });
    const chunks = [];
    for await (const chunk of speech.tts.synthesize({ text: 'Good morning.', voice, language: 'en-GB' }))
      chunks.push(chunk);
    assert.ok(concatPcm(chunks.map((c) => c.pcm)).length > 0);
    assert.equal(tts.requests.at(-1)!.path, '/v1/text-to-speech/Xb7hH8MSUJpSbSDYk0k2/stream');

    const stream = await speech.stt!.open({
      language: 'en-GB',
      keywords: ['Openline'],
      encoding: 'mulaw',
      sampleRate: 8000,
    });
    await stream.close();
    const query = dg.connections.at(-1)!.query;
    assert.equal(query.get('model'), 'nova-2-phonecall');
    assert.deepEqual(query.getAll('keywords'), ['Openline:2']);
  });
});
