import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AnsweringMachineDetector, BeepDetector, detectAnsweringMachine, toneFrequency } from '../../src/media/amd.js';
import { evaluateAmd, generateAmdDataset, seededRandom } from '../../src/media/amd-dataset.js';
import { FRAME_SAMPLES, concatPcm, decodeMulaw, silence, tone, toFrames } from '../../src/media/audio.js';

/** Speech-like sound without a synthesiser: noise shaped into syllables of 200 ms. */
function babble(durationMs: number, seed = 7, amplitude = 4000): Int16Array {
  const random = seededRandom(seed);
  const out = new Int16Array(Math.round(durationMs * 8));
  for (let i = 0; i < out.length; i++) {
    const envelope = 0.35 + 0.65 * Math.abs(Math.sin((Math.PI * i) / 1600));
    out[i] = Math.round((random() - 0.5) * 2 * amplitude * envelope);
  }
  return out;
}

function hiss(durationMs: number, amplitude: number, seed = 3): Int16Array {
  const random = seededRandom(seed);
  return Int16Array.from({ length: Math.round(durationMs * 8) }, () => Math.round((random() - 0.5) * 2 * amplitude));
}

test('a beep after a greeting-less answer is found: machine, with its frequency and length', () => {
  const result = detectAnsweringMachine(concatPcm([silence(700), tone([1000], 500, 6000), silence(3000)]));
  assert.equal(result.decision, 'machine');
  assert.equal(result.reason, 'beep');
  assert.ok(result.features.beep);
  assert.ok(Math.abs(result.features.beep.frequencyHz - 1000) <= 10, `${result.features.beep.frequencyHz} Hz`);
  assert.ok(Math.abs(result.features.beep.durationMs - 500) <= 40, `${result.features.beep.durationMs} ms`);
  assert.ok(result.atMs >= 1200 && result.atMs <= 1300, `decided at ${result.atMs} ms`);
});

test('beeps across the band are found through mu-law; clicks, DTMF pairs and long tones are not beeps', () => {
  const heard = (pcm: Int16Array) => {
    const beeps = new BeepDetector();
    const found = [];
    // Through the telephone: mu-law frames decoded again.
    for (const frame of toFrames(pcm)) {
      const beep = beeps.push(decodeMulaw(frame));
      if (beep) found.push(beep);
    }
    const last = beeps.flush();
    if (last) found.push(last);
    return found;
  };
  for (const hz of [420, 850, 1400, 1950]) {
    const found = heard(concatPcm([silence(200), tone([hz], 300, 3000), silence(200)]));
    assert.equal(found.length, 1, `${hz} Hz`);
    assert.ok(Math.abs(found[0]!.frequencyHz - hz) <= hz * 0.01, `${hz} Hz heard as ${found[0]!.frequencyHz}`);
  }
  assert.deepEqual(heard(concatPcm([silence(200), tone([1000], 100, 6000), silence(200)])), [], 'too short');
  assert.deepEqual(heard(concatPcm([tone([1000], 2500, 6000)])), [], 'too long');
  assert.deepEqual(heard(tone([770, 1336], 600, 8000)), [], 'a DTMF pair is two tones');
  assert.deepEqual(heard(tone([300], 600, 8000)), [], 'below the band');
  assert.deepEqual(heard(babble(2000)), [], 'noise-like speech');
});

test('toneFrequency: a loud sine gives its frequency, noise and quiet frames give none', () => {
  const f = toneFrequency(tone([1234], 20, 8000), 380, 2100);
  assert.ok(f !== undefined && Math.abs(f - 1234) < 10, String(f));
  assert.equal(toneFrequency(hiss(20, 8000), 380, 2100), undefined);
  assert.equal(toneFrequency(tone([1000], 20, 100), 380, 2100), undefined);
});

test('dead air and line hiss: unknown after the five seconds', () => {
  for (const pcm of [silence(6000), hiss(6000, 300)]) {
    const result = detectAnsweringMachine(pcm);
    assert.equal(result.decision, 'unknown');
    assert.equal(result.reason, 'silence');
    assert.equal(result.atMs, 5000);
    assert.equal(result.features.words, 0);
  }
});

test('a short greeting then silence is a person; a long greeting is a machine', () => {
  const person = detectAnsweringMachine(concatPcm([silence(500), babble(500), silence(4000)]));
  assert.equal(person.decision, 'human');
  assert.equal(person.reason, 'short-greeting');
  assert.equal(person.features.words, 1);
  assert.ok(person.features.initialSilenceMs >= 400 && person.features.initialSilenceMs <= 600);
  // Up to 1 s of voice: 0.6 s of silence after it decides.
  assert.ok(person.features.afterGreetingSilenceMs >= 600 && person.features.afterGreetingSilenceMs < 700);
  assert.ok(person.atMs < 2000, `decided at ${person.atMs} ms`);

  const twoWords = detectAnsweringMachine(
    concatPcm([silence(300), babble(600), silence(300), babble(500), silence(4000)]),
  );
  assert.equal(twoWords.decision, 'human');
  assert.equal(twoWords.reason, 'greeting');
  assert.equal(twoWords.features.words, 2);
  // More than 1 s of voice: it takes 0.7 s of silence.
  assert.ok(twoWords.features.greetingMs > 1000);
  assert.ok(twoWords.features.afterGreetingSilenceMs >= 700 && twoWords.features.afterGreetingSilenceMs < 800);

  // Line clicks (a single loud frame every 300 ms) do not break the silence after a greeting.
  const click = Int16Array.from({ length: FRAME_SAMPLES }, (_, i) => (i < 20 ? (i % 2 ? 8000 : -8000) : 0));
  const clicks = Array.from({ length: 12 }, () => concatPcm([click, silence(280)]));
  const clicked = detectAnsweringMachine(concatPcm([silence(500), babble(500), ...clicks, silence(1000)]));
  assert.equal(clicked.decision, 'human');
  assert.equal(clicked.features.words, 1);

  const machine = detectAnsweringMachine(concatPcm([silence(300), babble(4000), silence(2000)]));
  assert.equal(machine.decision, 'machine');
  assert.equal(machine.reason, 'long-one-word-greeting');
  assert.ok(machine.features.greetingMs > 1400);
});

test('how much voice makes a machine depends on the words it came in', () => {
  // One unbroken word of 1.5 s (one breath, no pause): more than a person says that way.
  const oneWord = detectAnsweringMachine(concatPcm([silence(300), babble(1500), silence(3000)]));
  assert.equal(oneWord.decision, 'machine');
  assert.equal(oneWord.reason, 'long-one-word-greeting');
  assert.equal(oneWord.features.words, 1);
  // The same voice in two words ("Hello, | Dana speaking") is still a person's greeting...
  const twoWords = detectAnsweringMachine(
    concatPcm([silence(300), babble(400), silence(300), babble(1040), silence(3000)]),
  );
  assert.equal(twoWords.decision, 'human');
  assert.equal(twoWords.features.words, 2);
  assert.ok(twoWords.features.greetingMs > 1400 && twoWords.features.greetingMs <= 1500);
  // ...up to 1.5 s of voice.
  const longTwoWords = detectAnsweringMachine(
    concatPcm([silence(300), babble(600), silence(300), babble(1000), silence(3000)]),
  );
  assert.equal(longTwoWords.decision, 'machine');
  assert.equal(longTwoWords.reason, 'long-greeting');
  // Three words with 1.3 s of voice: a person's three-word greeting is three short words.
  const threeWords = detectAnsweringMachine(
    concatPcm([silence(300), babble(400), silence(300), babble(400), silence(300), babble(500), silence(3000)]),
  );
  assert.equal(threeWords.decision, 'machine');
  assert.equal(threeWords.reason, 'long-many-word-greeting');
  assert.equal(threeWords.features.words, 3);
  // Three short words (0.9 s of voice) then silence: a person.
  const threeShort = detectAnsweringMachine(
    concatPcm([silence(300), babble(300), silence(300), babble(300), silence(300), babble(300), silence(3000)]),
  );
  assert.equal(threeShort.decision, 'human');
  assert.equal(threeShort.features.words, 3);
  // Four words: a machine at the fourth, however short.
  const fourWords = detectAnsweringMachine(
    concatPcm([
      silence(300),
      ...Array.from({ length: 4 }, (_, i) => concatPcm([babble(200, 7 + i), silence(300)])),
      silence(3000),
    ]),
  );
  assert.equal(fourWords.decision, 'machine');
  assert.equal(fourWords.reason, 'many-words');
});

test('a pause decides a person after 0.6 s or 0.7 s depending on the voice before it', () => {
  // 1.1 s of voice, then 0.76 s of silence, then the greeting goes on: the pause already said person.
  const person = detectAnsweringMachine(concatPcm([silence(300), babble(1100), silence(760), babble(2000)]));
  assert.equal(person.decision, 'human');
  assert.equal(person.reason, 'greeting');
  // The same voice with a 0.66 s pause (a sentence break) is not enough: the greeting talks on.
  const machine = detectAnsweringMachine(concatPcm([silence(300), babble(1100), silence(660), babble(2000)]));
  assert.equal(machine.decision, 'machine');
  // A short "Hello?" and a 0.66 s pause: a person.
  const hello = detectAnsweringMachine(concatPcm([silence(300), babble(500), silence(660), babble(2000)]));
  assert.equal(hello.decision, 'human');
  assert.equal(hello.reason, 'short-greeting');
});

test('the streaming detector decides once and keeps its result; finish decides on a short input', () => {
  const detector = new AnsweringMachineDetector();
  const pcm = concatPcm([silence(300), babble(400), silence(1500)]);
  const decisions = [];
  for (let at = 0; at + FRAME_SAMPLES <= pcm.length; at += FRAME_SAMPLES) {
    const d = detector.push(pcm.subarray(at, at + FRAME_SAMPLES));
    if (d) decisions.push(d);
  }
  assert.equal(decisions.length, 1);
  assert.equal(detector.result, decisions[0]);
  assert.equal(detector.finish(), decisions[0]);

  const cut = new AnsweringMachineDetector();
  for (let i = 0; i < 10; i++) cut.push(new Int16Array(FRAME_SAMPLES));
  assert.equal(cut.finish().decision, 'unknown');
});

test('the labelled set is reproducible and the detector meets the accuracy targets on 40 clips', async () => {
  const clips = await generateAmdDataset({ count: 40, seed: 11 });
  assert.equal(clips.length, 40);
  for (const label of ['human', 'machine', 'unknown'] as const) {
    assert.ok(
      clips.some((c) => c.label === label),
      `some ${label} clips`,
    );
  }
  assert.ok(clips.some((c) => c.kind === 'voicemail-beep') && clips.some((c) => c.kind === 'screener'));
  const again = await generateAmdDataset({ count: 3, seed: 11 });
  const first = await generateAmdDataset({ count: 3, seed: 11 });
  assert.deepEqual(
    again.map((c) => [c.id, c.text, c.pcm.length]),
    first.map((c) => [c.id, c.text, c.pcm.length]),
  );
  assert.deepEqual(again[0]!.pcm, first[0]!.pcm);

  const result = evaluateAmd(clips);
  const wrong = result.outcomes.filter((o) => o.decision !== o.clip.label);
  const report = wrong.map((o) => `${o.clip.id} ${o.clip.label}->${o.decision}: ${o.clip.description}`).join('\n');
  assert.ok(result.accuracy >= 0.97, `accuracy ${result.accuracy}\n${report}`);
  assert.ok(
    result.humansAsMachines / result.humans <= 0.01,
    `humans as machines ${result.humansAsMachines}\n${report}`,
  );
});
