import assert from 'node:assert/strict';
import { test } from 'node:test';

import { concatPcm, goertzel, silence, tone } from '../../src/media/audio.js';
import { DtmfDetector, detectDtmf, dtmfTones, isDtmfString } from '../../src/media/dtmf.js';
import { atLevel, hasEspeak, lineNoise, mix, noise, pcmFrames, speak } from './signals.js';

const ALL = '0123456789*#ABCD';

test('generated keys are 100 ms of the row and column tones then 60 ms of silence; w pauses 500 ms', () => {
  const five = dtmfTones('5');
  assert.equal(five.length, 160 * 8);
  const body = five.subarray(80, 720);
  assert.ok(goertzel(body, 770) > 0.3 && goertzel(body, 1336) > 0.3);
  assert.ok(goertzel(body, 697) < 0.05 && goertzel(body, 1209) < 0.05);
  assert.ok(five.subarray(800).every((s) => s === 0));
  assert.equal(dtmfTones('1w2').length, 2 * 1280 + 4000);
  assert.equal(dtmfTones('W').length, 8000);
  assert.equal(dtmfTones('a').length, dtmfTones('A').length);
  assert.throws(() => dtmfTones('12x'), /invalid DTMF digit "x"/);
  assert.ok(isDtmfString('ww12*#') && !isDtmfString('1-2'));
});

test('every key is detected at levels from -10 to -35 dBFS with noise down to 6 dB SNR', () => {
  for (const level of [-10, -20, -30, -35]) {
    for (const snr of [30, 15, 6]) {
      const clean = atLevel(dtmfTones(ALL), level);
      const noisy = mix(clean, noise(clean.length, level - snr, level * 7 + snr));
      assert.equal(detectDtmf(noisy), ALL, `level ${level} dBFS, SNR ${snr} dB`);
    }
  }
});

test('frames of 20 ms report each digit once, in the frame that completes 40 ms of tone', () => {
  const detector = new DtmfDetector();
  const pcm = concatPcm([silence(100), dtmfTones('7'), dtmfTones('7'), dtmfTones('9', { toneMs: 1000 })]);
  const found: [string, number][] = [];
  pcmFrames(pcm).forEach((frame, i) => {
    const digits = detector.push(frame);
    if (digits) found.push([digits, i]);
  });
  assert.deepEqual(
    found.map(([d]) => d),
    ['7', '7', '9'],
    'a repeated key is two presses; a long press is one',
  );
  // The first 7 starts at 100 ms (frame 5): reported by frame 7, 40-60 ms in.
  assert.ok(found[0]![1] >= 6 && found[0]![1] <= 7, `reported in frame ${found[0]![1]}`);
});

test('presses shorter than 40 ms are ignored; 40 ms presses with 40 ms gaps are all read', () => {
  assert.equal(detectDtmf(dtmfTones('1234567890', { toneMs: 40, gapMs: 40 })), '1234567890');
  assert.equal(detectDtmf(dtmfTones('1234567890', { toneMs: 25, gapMs: 40 })), '');
});

test('tones off by 1.5 % are accepted; twist beyond the limits is refused', () => {
  const skewed = concatPcm([tone([697 * 1.015, 1209 * 0.985], 100, 12000), silence(60)]);
  assert.equal(detectDtmf(skewed), '1');
  const lowOnly = 6000;
  const twisted = (highDb: number) => {
    const high = lowOnly * 10 ** (highDb / 20);
    const pcm = new Int16Array(1600);
    for (let i = 0; i < pcm.length; i++) {
      pcm[i] = Math.round(
        lowOnly * Math.sin((2 * Math.PI * 852 * i) / 8000) + high * Math.sin((2 * Math.PI * 1477 * i) / 8000),
      );
    }
    return detectDtmf(pcm);
  };
  assert.equal(twisted(0), '9');
  assert.equal(twisted(-6), '9');
  assert.equal(twisted(-12), '', 'high tone 12 dB weaker');
  assert.equal(twisted(9), '', 'high tone 9 dB stronger');
});

test('single tones, line noise and silence give no digits', () => {
  for (let f = 300; f <= 2200; f += 10) assert.equal(detectDtmf(tone([f], 300, 16000)), '', `${f} Hz`);
  assert.equal(detectDtmf(lineNoise(8000 * 5, -30)), '');
  assert.equal(detectDtmf(noise(8000 * 5, -10)), '');
  assert.equal(detectDtmf(silence(1000)), '');
});

test('speech gives no false digits', { skip: !hasEspeak() }, () => {
  const phrases = [
    'Hello, thank you for calling. Please listen carefully as our menu options have changed.',
    'Hi, you have reached the voicemail of John. Please leave a message after the tone.',
    'one two three four five six seven eight nine zero star pound',
    'Mmmm ooooh aaaah eeee, la la la la',
  ];
  let seconds = 0;
  for (const voice of ['en-us', 'en+f3', 'fr']) {
    for (const [i, text] of phrases.entries()) {
      const pcm = speak(text, voice, ['-s', String(130 + 40 * i), '-p', String(30 + 15 * i)]);
      seconds += pcm.length / 8000;
      assert.equal(detectDtmf(atLevel(pcm, -15)), '', `${voice}: ${text}`);
    }
  }
  assert.ok(seconds > 40, `${seconds} s of speech`);
});

test('a key pressed while someone talks quietly is still read', { skip: !hasEspeak() }, () => {
  const talk = atLevel(speak('I am pressing the key now, one moment please'), -32);
  const keys = atLevel(concatPcm([silence(500), dtmfTones('3'), silence(300), dtmfTones('#')]), -14);
  assert.equal(detectDtmf(mix(talk, keys)), '3#');
});
