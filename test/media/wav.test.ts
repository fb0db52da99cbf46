import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { FRAME_SAMPLES, encodeMulaw, goertzel, tone } from '../../src/media/audio.js';
import {
  CallRecorder,
  WAVE_FORMAT_MULAW,
  encodeMulawWav,
  encodeWav,
  parseWav,
  wavHeader,
  wavToPcm8k,
} from '../../src/media/wav.js';
import { hasEspeak, speak } from './signals.js';

test('PCM16 mono and stereo WAV round-trip through the parser', () => {
  const mono = tone([440], 100, 10000);
  const parsed = parseWav(encodeWav(mono));
  assert.equal(parsed.format, 1);
  assert.equal(parsed.channels, 1);
  assert.equal(parsed.sampleRate, 8000);
  assert.equal(parsed.bitsPerSample, 16);
  assert.deepEqual(parsed.samples, mono);
  assert.equal(parsed.durationMs, 100);

  const stereo = new Int16Array([1, -1, 2, -2, 32767, -32768]);
  const file = encodeWav(stereo, { channels: 2, sampleRate: 16000 });
  assert.equal(file.length, 44 + 12);
  assert.equal(file.readUInt32LE(4), 36 + 12);
  const back = parseWav(file);
  assert.equal(back.channels, 2);
  assert.equal(back.sampleRate, 16000);
  assert.deepEqual(back.samples, stereo);
  assert.throws(() => encodeWav(new Int16Array(3), { channels: 2 }), /multiple of the channels/);
});

test('mu-law WAV (format 7) carries the fact chunk and decodes to PCM', () => {
  const pcm = tone([1000], 40, 12000);
  const file = encodeMulawWav(encodeMulaw(pcm));
  assert.equal(file.toString('latin1', 38, 42), 'fact');
  const parsed = parseWav(file);
  assert.equal(parsed.format, WAVE_FORMAT_MULAW);
  assert.equal(parsed.bitsPerSample, 8);
  assert.equal(parsed.samples.length, pcm.length);
  for (let i = 0; i < pcm.length; i++) assert.ok(Math.abs(parsed.samples[i]! - pcm[i]!) <= 400);
});

test('the parser skips unknown chunks, honours odd-size padding and rejects what it cannot read', () => {
  const pcm = new Int16Array([10, 20, 30]);
  const plain = encodeWav(pcm);
  const list = Buffer.concat([Buffer.from('LIST'), Buffer.from([3, 0, 0, 0]), Buffer.from('abc'), Buffer.alloc(1)]);
  const withList = Buffer.concat([plain.subarray(0, 36), list, plain.subarray(36)]);
  assert.deepEqual(parseWav(withList).samples, pcm);

  assert.throws(() => parseWav(Buffer.from('not a wav file at all')), /RIFF/);
  const float = Buffer.from(plain);
  float.writeUInt16LE(3, 20); // IEEE float
  assert.throws(() => parseWav(float), /unsupported WAV encoding/);
  assert.throws(() => parseWav(plain.subarray(0, 36)), /no data chunk/);
});

test('streamed headers (sizes unknown when written) are read to the end of the file', () => {
  const pcm = tone([500], 60, 8000);
  for (const placeholder of [0x7ffff000, 0xffffffff, 0]) {
    const file = encodeWav(pcm);
    file.writeUInt32LE(placeholder, 4);
    file.writeUInt32LE(placeholder, 40);
    assert.deepEqual(parseWav(file).samples, pcm, `size ${placeholder}`);
  }
  assert.equal(wavHeader({ format: 1, channels: 1, sampleRate: 8000 }, 0x7ffff000).readUInt32LE(40), 0x7ffff000);
});

test('espeak-ng output on stdout parses and comes down to 8 kHz', { skip: !hasEspeak() }, () => {
  const pcm = speak('testing one two three');
  assert.ok(pcm.length > 8000 * 0.8, `got ${pcm.length} samples`);
  let peak = 0;
  for (const s of pcm) peak = Math.max(peak, Math.abs(s));
  assert.ok(peak > 3000);
});

test('wavToPcm8k averages stereo to mono and resamples', () => {
  const left = tone([500], 100, 8000, 16000);
  const stereo = new Int16Array(left.length * 2);
  for (let i = 0; i < left.length; i++) stereo[2 * i] = stereo[2 * i + 1] = left[i]!;
  const pcm = wavToPcm8k(encodeWav(stereo, { channels: 2, sampleRate: 16000 }));
  assert.equal(pcm.length, 800);
  assert.ok(goertzel(pcm, 500) > 0.8);
});

/** A frame of PCM whose every sample is `value`. */
function flat(value: number): Int16Array {
  return new Int16Array(FRAME_SAMPLES).fill(value);
}

/** The left and right sample at the middle of slot `slot`. */
function slotValues(samples: Int16Array, slot: number): [number, number] {
  const at = (slot * FRAME_SAMPLES + FRAME_SAMPLES / 2) * 2;
  return [samples[at]!, samples[at + 1]!];
}

test('the call recorder writes both directions time-aligned into a stereo file', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'openline-rec-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  let now = 5000;
  const file = path.join(dir, 'call.wav');
  const recorder = new CallRecorder(file, { now: () => now, flushMs: 100, holdMs: 100 });
  // 0-1 s: the caller talks (inbound 100), the agent is silent.
  for (let slot = 0; slot < 50; slot++) {
    now = 5000 + slot * 20 + 3;
    recorder.inbound(flat(100));
  }
  // 1-2 s: both talk; the agent's frames are mu-law as the pacer sends them.
  for (let slot = 50; slot < 100; slot++) {
    now = 5000 + slot * 20 + 5;
    recorder.inbound(flat(200));
    recorder.outbound(encodeMulaw(flat(1000)));
  }
  // 2-3 s: the caller's stream pauses; the agent goes on.
  for (let slot = 100; slot < 150; slot++) {
    now = 5000 + slot * 20 + 9;
    recorder.outbound(flat(-300));
  }
  // 3 s: the caller resumes; the call ends at 3.2 s.
  now = 5000 + 150 * 20 + 2;
  recorder.inbound(flat(400));
  now = 5000 + 160 * 20;
  const info = await recorder.close();

  const wav = parseWav(await readFile(file));
  assert.equal(wav.channels, 2);
  assert.equal(wav.sampleRate, 8000);
  assert.equal(wav.bitsPerSample, 16);
  assert.equal(wav.durationMs, 3200);
  assert.equal(info.durationMs, 3200);
  assert.equal(info.bytes, (await readFile(file)).length);
  const mulaw1000 = Math.round(slotValues(wav.samples, 60)[1]);
  assert.ok(Math.abs(mulaw1000 - 1000) < 40, `mu-law 1000 decoded as ${mulaw1000}`);
  assert.deepEqual(slotValues(wav.samples, 0), [100, 0]);
  assert.deepEqual(slotValues(wav.samples, 49), [100, 0]);
  assert.deepEqual(slotValues(wav.samples, 50), [200, mulaw1000]);
  assert.deepEqual(slotValues(wav.samples, 99), [200, mulaw1000]);
  assert.deepEqual(slotValues(wav.samples, 100), [0, -300]);
  assert.deepEqual(slotValues(wav.samples, 149), [0, -300]);
  assert.deepEqual(slotValues(wav.samples, 150), [400, 0], 'the caller resumes at the clock, not at its last slot');
  assert.deepEqual(slotValues(wav.samples, 159), [0, 0]);
});

test('jittered frames keep their order and the file is readable before close', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'openline-rec-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  let now = 0;
  const file = path.join(dir, 'jitter.wav');
  const recorder = new CallRecorder(file, { now: () => now, flushMs: 200, holdMs: 200 });
  // Inbound frames 0..99 arrive in bursts of five every 100 ms (network jitter).
  for (let burst = 0; burst < 20; burst++) {
    now = burst * 100 + 99;
    for (let k = 0; k < 5; k++) recorder.inbound(flat(burst * 5 + k + 1));
  }
  // Streamed header: readable as it grows (the file is opened and written asynchronously: on a
  // loaded machine it may not even exist yet, or exist with its header still to be written).
  const durationSoFar = async () => {
    const bytes = await readFile(file).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    return bytes && bytes.length >= 44 ? parseWav(bytes).durationMs : 0;
  };
  let partialMs = await durationSoFar();
  for (let waited = 0; partialMs < 1000 && waited < 5000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    partialMs = await durationSoFar();
  }
  assert.ok(partialMs >= 1000, `partial file holds ${partialMs} ms`);
  now = 2100;
  await recorder.close();
  const wav = parseWav(await readFile(file));
  for (let slot = 0; slot < 100; slot++) assert.equal(slotValues(wav.samples, slot)[0], slot + 1, `slot ${slot}`);
});

test('a recorder that cannot open its file reports it on close', async () => {
  const recorder = new CallRecorder('/nonexistent-dir/openline/call.wav');
  recorder.inbound(flat(1));
  await assert.rejects(recorder.close(), /ENOENT/);
});
