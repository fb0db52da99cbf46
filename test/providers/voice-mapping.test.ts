import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_VOICE, TTS_VENDORS, VOICES, providerVoiceId } from '../../src/domain/voices.js';
import { espeakVoiceFor } from '../../src/providers/tts/espeak.js';

const OPENAI_VOICES = ['alloy', 'echo', 'fable', 'onyx', 'nova', 'shimmer'];

test('every curated voice has a voice at every vendor', () => {
  for (const voice of VOICES) {
    assert.match(voice.espeak, /^[a-z]{2,3}(-[a-z]+)?\+[mf]\d$/, voice.name);
    assert.ok(OPENAI_VOICES.includes(voice.openai), `${voice.name}: ${voice.openai}`);
    assert.match(voice.elevenlabs, /^[A-Za-z0-9]{20}$/, voice.name);
  }
  // Distinct presets stay distinct where the vendor has enough voices.
  assert.equal(new Set(VOICES.map((v) => v.elevenlabs)).size, VOICES.length);
});

const forms: { name: string; voice: string; expected: string }[] = [
  { name: 'curated name', voice: 'maya', expected: 'maya' },
  { name: 'name in another case, with spaces', voice: '  Evelyn ', expected: 'evelyn' },
  { name: 'voice id', voice: '37b3f1c8-a01e-4d70-b251-294733f08371', expected: 'ryan' },
  { name: 'RL legacy form', voice: 'RL3', expected: 'adriana' },
  { name: 'HQ legacy form', voice: 'hq4', expected: 'tina' },
  { name: 'unknown name: the default voice', voice: 'nobody', expected: DEFAULT_VOICE },
  { name: 'unknown legacy number: the default voice', voice: 'RL99', expected: DEFAULT_VOICE },
  { name: 'empty: the default voice', voice: '', expected: DEFAULT_VOICE },
];

for (const vendor of TTS_VENDORS) {
  for (const form of forms) {
    test(`${vendor} voice for a ${form.name}`, () => {
      const preset = VOICES.find((v) => v.name === form.expected)!;
      assert.equal(providerVoiceId(vendor, form.voice), preset[vendor]);
    });
  }
  test(`${vendor} voice when the call has none`, () => {
    const preset = VOICES.find((v) => v.name === DEFAULT_VOICE)!;
    assert.equal(providerVoiceId(vendor, undefined), preset[vendor]);
    assert.equal(providerVoiceId(vendor, null), preset[vendor]);
  });
}

test('the mapping is the documented one', () => {
  assert.deepEqual(Object.fromEntries(VOICES.map((v) => [v.name, [v.openai, v.elevenlabs]])), {
    maya: ['nova', 'cgSgspJ2msm6clMCkdW9'],
    mason: ['echo', 'nPczCjzI2devNBz1zQrb'],
    ryan: ['onyx', 'cjVigY5qzO86Huf0OWal'],
    adriana: ['alloy', 'EXAVITQu4vr4xnSDxMaL'],
    tina: ['shimmer', 'FGY2WhTYpPnrIDTdsKH5'],
    matt: ['echo', 'TX3LPaxmHKxFdv7VOQHJ'],
    evelyn: ['fable', 'Xb7hH8MSUJpSbSDYk0k2'],
  });
});

const languages: [string, string, string][] = [
  ['en-us+f3', 'en-US', 'en-us+f3'],
  ['en-gb+f1', 'en', 'en-gb+f1'],
  ['en-us+m3', 'en-GB', 'en-us+m3'],
  ['en-us+f3', 'es', 'es+f3'],
  ['en-us+m1', 'fr', 'fr-fr+m1'],
  ['en-us+f2', 'zh-TW', 'cmn+f2'],
  ['en-us+f2', 'zh-Hans', 'cmn+f2'],
  ['en-us+m2', 'de', 'de+m2'],
  ['en-us', 'ja', 'ja'],
];
for (const [voice, language, expected] of languages) {
  test(`espeak-ng voice for ${voice} on a ${language} call is ${expected}`, () => {
    assert.equal(espeakVoiceFor(voice, language), expected);
  });
}
