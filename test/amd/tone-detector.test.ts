import assert from 'node:assert/strict';
import { test } from 'node:test';

import { concatPcm, silence, tone } from '../../src/media/audio.js';
import { dtmfTones } from '../../src/media/dtmf.js';
import { ToneDetector, type DetectedTone, type ToneDetectorOptions } from '../../src/amd/tone-detector.js';
import { atLevel, hasEspeak, lineNoise, mix, noise, pcmFrames, speak } from '../media/signals.js';

/** Every tone the detector reports over a recording (including one still sounding at the end). */
function tones(pcm: Int16Array, options?: ToneDetectorOptions): DetectedTone[] {
  const detector = new ToneDetector(options);
  const found: DetectedTone[] = [];
  for (const frame of pcmFrames(pcm)) {
    const ended = detector.push(frame);
    if (ended) found.push(ended);
  }
  const last = detector.flush();
  if (last) found.push(last);
  return found;
}

/** A beep of `ms` at `hz` and -16 dBFS between silences. */
function beep(hz: number, ms: number): Int16Array {
  return concatPcm([silence(300), atLevel(tone([hz], ms), -16), silence(300)]);
}

test('beeps from 300 to 3400 Hz are reported with their frequency and duration', () => {
  for (const hz of [300, 350, 440, 620, 1000, 1400, 1850, 2100, 2600, 3000, 3400]) {
    const found = tones(beep(hz, 400));
    assert.equal(found.length, 1, `${hz} Hz: ${JSON.stringify(found)}`);
    assert.ok(Math.abs(found[0]!.frequencyHz - hz) <= 5, `${hz} Hz read as ${found[0]!.frequencyHz}`);
    assert.ok(Math.abs(found[0]!.durationMs - 400) <= 40, `${hz} Hz lasted ${found[0]!.durationMs} ms`);
  }
});

test('beeps are found in line noise down to about 7 dB SNR', () => {
  for (const hz of [400, 1000, 2000]) {
    for (const noiseDbfs of [-50, -30, -23]) {
      const pcm = mix(beep(hz, 500), lineNoise(8000 * 2, noiseDbfs, hz));
      const found = tones(pcm);
      assert.equal(found.length, 1, `${hz} Hz in ${noiseDbfs} dBFS noise: ${JSON.stringify(found)}`);
      assert.ok(Math.abs(found[0]!.frequencyHz - hz) <= 8);
    }
  }
});

test('a tone is reported when it ends, once, and only if it lasted 100 ms', () => {
  const detector = new ToneDetector();
  const frames = pcmFrames(beep(1000, 600));
  const reports: [DetectedTone, number][] = [];
  let sawCurrent = false;
  frames.forEach((frame, i) => {
    const ended = detector.push(frame);
    if (ended) reports.push([ended, i]);
    if (detector.current) sawCurrent = true;
  });
  assert.equal(reports.length, 1);
  // The beep runs from frame 15 to 45; the report comes within two frames of its end.
  assert.ok(reports[0]![1] >= 45 && reports[0]![1] <= 47, `reported at frame ${reports[0]![1]}`);
  assert.ok(sawCurrent, 'a long tone is visible while it sounds');
  assert.deepEqual(tones(beep(1000, 70)), []);
  assert.equal(tones(beep(1000, 110)).length, 1);
  assert.equal(tones(beep(1000, 180)).length, 1);
  assert.deepEqual(tones(beep(1000, 180), { minDurationMs: 300 }), []);
});

test('two beeps in a row at different pitches are two tones', () => {
  const pcm = concatPcm([atLevel(tone([800], 300), -16), atLevel(tone([1200], 300), -16), silence(100)]);
  const found = tones(pcm);
  assert.deepEqual(
    found.map((t) => Math.round(t.frequencyHz / 100) * 100),
    [800, 1200],
  );
});

test('three short tones in a row (100-150 ms each, with or without gaps) are three tones', () => {
  const rising = concatPcm([
    atLevel(tone([950], 120), -16),
    atLevel(tone([1400], 120), -16),
    atLevel(tone([1800], 120), -16),
    silence(200),
  ]);
  assert.deepEqual(
    tones(rising).map((t) => Math.round(t.frequencyHz / 50) * 50),
    [950, 1400, 1800],
  );
  const spaced = concatPcm([beep(2900, 110), beep(2900, 110), beep(2900, 110)]);
  assert.equal(tones(mix(spaced, lineNoise(spaced.length, -45))).length, 3);
});

test('out-of-band tones, quiet tones, DTMF, noise and silence are not beeps', () => {
  assert.deepEqual(tones(beep(220, 500)), [], 'below 300 Hz');
  assert.deepEqual(tones(beep(3700, 500)), [], 'above 3400 Hz');
  assert.deepEqual(tones(concatPcm([silence(100), tone([1000], 500, 100)])), [], 'under -45 dBFS');
  assert.deepEqual(tones(dtmfTones('0123456789*#ABCD', { toneMs: 400 })), [], 'DTMF pairs');
  assert.deepEqual(tones(lineNoise(8000 * 5, -30)), []);
  assert.deepEqual(tones(noise(8000 * 5, -15)), []);
  assert.deepEqual(tones(silence(2000)), []);
});

test('speech is not a beep', { skip: !hasEspeak() }, () => {
  const phrases = [
    'Hi, you have reached the voicemail of John. Please leave a message after the tone.',
    'Hellooooo? Is anybody there? Hiiii',
    'Mmmm ooooh aaaah eeee, la la la la',
    'The quick brown fox jumps over the lazy dog',
  ];
  for (const voice of ['en-us', 'en+f4', 'de']) {
    for (const [i, text] of phrases.entries()) {
      const pcm = speak(text, voice, ['-s', String(80 + 40 * i), '-p', String(20 + 20 * i)]);
      assert.deepEqual(tones(atLevel(pcm, -18)), [], `${voice}: ${text}`);
    }
  }
});

test('a voicemail greeting followed by its beep gives exactly the beep', { skip: !hasEspeak() }, () => {
  const greeting = atLevel(speak('You have reached five five five, zero one zero one. Please leave a message.'), -20);
  const pcm = concatPcm([greeting, silence(200), atLevel(tone([1000], 500), -14), silence(500)]);
  const found = tones(mix(pcm, lineNoise(pcm.length, -45)));
  assert.equal(found.length, 1, JSON.stringify(found));
  assert.ok(Math.abs(found[0]!.frequencyHz - 1000) <= 5);
});

/** `ms` of a signal built sample by sample, scaled to -16 dBFS, between silences. */
function synthetic(ms: number, sample: (t: number) => number): Int16Array {
  const pcm = new Int16Array(Math.round((8000 * ms) / 1000));
  for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(8000 * sample(i / 8000));
  return concatPcm([silence(300), atLevel(pcm, -16), silence(300)]);
}

test('a tone that is not steady as a sinusoid is not a beep', () => {
  // A held vowel on one pitch: 400 Hz with its 2nd and 3rd harmonics 15 and 20 dB down.
  const vowel = synthetic(400, (t) =>
    [1, 0.18, 0.1].reduce((sum, a, k) => sum + a * Math.sin(2 * Math.PI * 400 * (k + 1) * t), 0),
  );
  assert.deepEqual(tones(vowel), [], 'a harmonic series');
  assert.equal(tones(vowel, { strict: false }).length, 1, 'which the looser test takes');
  // A pitch gliding by 1.6 % over 400 ms (16 Hz at 1000 Hz): each frame is a clean peak, each
  // within 1 % of the mean, so the looser test takes it as one tone.
  const glide = synthetic(400, (t) => Math.sin(2 * Math.PI * (1000 * t + ((16 / 0.4) * (t * t)) / 2)));
  assert.equal(tones(glide, { strict: false }).length, 1, 'one tone to the looser test');
  assert.deepEqual(tones(glide), [], 'a gliding pitch');
  // A syllable's swell and fade at a steady pitch.
  const swell = synthetic(400, (t) => Math.sin(Math.PI * (t / 0.4)) * Math.sin(2 * Math.PI * 700 * t));
  assert.deepEqual(tones(swell), [], 'a syllable envelope');
  // A beep played while the line's AGC turns the level up or down: 10 dB evenly over 800 ms (a
  // syllable's rise and fall is no straight line).
  const ramps: Array<[number, number]> = [
    [-10, 0],
    [0, -10],
  ];
  for (const [from, to] of ramps) {
    const ramped = synthetic(
      800,
      (t) => 10 ** ((from + ((to - from) * t) / 0.8) / 20) * Math.sin(2 * Math.PI * 1400 * t),
    );
    const found = tones(ramped);
    assert.equal(found.length, 1, `a beep whose level goes from ${from} to ${to} dB`);
    assert.ok(Math.abs(found[0]!.durationMs - 800) <= 60, `${found[0]!.durationMs} ms`);
  }
  // A long beep while the AGC swings the level up and down by 7 dB over 2 s: it bends over the
  // beep, but evenly over any fraction of a second (a syllable's envelope does not).
  const swung = synthetic(
    1500,
    (t) => 10 ** ((7 * Math.sin((2 * Math.PI * t) / 2)) / 20) * Math.sin(2 * Math.PI * 2100 * t),
  );
  const found = tones(swung);
  assert.equal(found.length, 1, 'a beep under a swinging AGC');
  assert.ok(Math.abs(found[0]!.durationMs - 1500) <= 60, `${found[0]!.durationMs} ms`);
  // A real beep with a click inside it is still one.
  const clicked = beep(1000, 600);
  clicked[2400 + 800] = 30000;
  assert.equal(tones(clicked).length, 1, 'a beep with a click');
});
