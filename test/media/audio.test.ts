import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  FRAME_SAMPLES,
  MULAW_SILENCE,
  allocPcm,
  dbfs,
  decodeMulaw,
  encodeMulaw,
  goertzel,
  linearToMulaw,
  mulawToLinear,
  resample,
  seededRandom,
  silence,
  StreamResampler,
  toFrames,
  tone,
} from '../../src/media/audio.js';

test('mu-law round trip keeps every sample within the quantisation step of its segment', () => {
  for (let s = -32768; s <= 32767; s += 7) {
    const back = mulawToLinear(linearToMulaw(s));
    const step = Math.max(8, Math.abs(s) / 16);
    assert.ok(Math.abs(back - Math.max(-32635, Math.min(32635, s))) <= step, `${s} -> ${back}`);
  }
  assert.equal(linearToMulaw(0), MULAW_SILENCE);
  // Known G.711 code points.
  assert.equal(linearToMulaw(-32768), 0x00);
  assert.equal(linearToMulaw(32767), 0x80);
  assert.equal(mulawToLinear(0xff), 0);
});

test('table codecs agree with the per-sample functions', () => {
  const pcm = tone([440], 100, 12000);
  const bytes = encodeMulaw(pcm);
  for (let i = 0; i < pcm.length; i++) assert.equal(bytes[i], linearToMulaw(pcm[i]!));
  const decoded = decodeMulaw(bytes);
  for (let i = 0; i < bytes.length; i++) assert.equal(decoded[i], mulawToLinear(bytes[i]!));
});

test('pooled PCM frames never share samples, keep their values and say where they sit in their buffer', () => {
  const frames: Int16Array[] = [];
  // Enough frames to fill several slabs.
  for (let i = 0; i < 500; i++) {
    const frame = allocPcm(FRAME_SAMPLES);
    assert.equal(frame.length, FRAME_SAMPLES);
    frame.fill(i);
    frames.push(frame);
  }
  frames.forEach((frame, i) =>
    assert.ok(
      frame.every((v) => v === i),
      `frame ${i} was overwritten`,
    ),
  );
  assert.ok(new Set(frames.map((f) => f.buffer)).size > 1, 'a new slab once one is full');
  const bytes = Buffer.from(frames[7]!.buffer, frames[7]!.byteOffset, frames[7]!.byteLength);
  assert.equal(bytes.readInt16LE(0), 7);
  // Larger blocks get an array of their own.
  const big = allocPcm(8000);
  assert.equal(big.length, 8000);
  assert.equal(big.byteOffset, 0);
  assert.equal(big.buffer.byteLength, 16000);
});

test('frames are 160 bytes of mu-law, the last padded with silence', () => {
  const frames = toFrames(silence(50));
  assert.equal(frames.length, 3);
  for (const f of frames) assert.equal(f.length, FRAME_SAMPLES);
  assert.equal(frames[2]![FRAME_SAMPLES - 1], MULAW_SILENCE);
});

test('goertzel finds the tone it is tuned to and not its neighbours', () => {
  const beep = tone([1000], 20);
  assert.ok(goertzel(beep, 1000) > 0.8);
  assert.ok(goertzel(beep, 1400) < 0.05);
  const dtmf5 = tone([770, 1336], 40);
  assert.ok(goertzel(dtmf5, 770) > 0.3 && goertzel(dtmf5, 1336) > 0.3);
  assert.ok(goertzel(dtmf5, 697) < 0.1);
  assert.equal(goertzel(silence(20), 1000), 0);
});

test('resampling 22.05 kHz to 8 kHz keeps a speech-band tone and its length', () => {
  const src = tone([500], 1000, 10000, 22050);
  const out = resample(src, 22050, 8000);
  assert.ok(Math.abs(out.length - 8000) <= 1);
  assert.ok(goertzel(out.subarray(0, 800), 500) > 0.8);
  assert.ok(dbfs(out) > -15 && dbfs(silence(20)) < -80);
});

test('a stream resampled in pieces of any size gives what the whole gives, with no drift at the joins', () => {
  const random = seededRandom(11);
  for (const [from, to] of [
    [44_100, 8000],
    [8000, 44_100],
    [24_000, 8000],
    [8000, 16_000],
    [11_025, 8000],
  ] as const) {
    const src = tone([440], 2000, 8000, from);
    const resampler = new StreamResampler(from, to);
    const pieces: Int16Array[] = [];
    for (let at = 0; at < src.length;) {
      const size = 1 + Math.floor(random() * 3000);
      pieces.push(resampler.push(src.subarray(at, at + size)));
      at += size;
    }
    const out = new Int16Array(pieces.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of pieces) {
      out.set(p, at);
      at += p.length;
    }
    // As many samples as the duration gives at the new rate: nothing lost or added at the joins.
    assert.ok(Math.abs(out.length - (src.length * to) / from) <= 1, `${from} -> ${to}: ${out.length}`);
    // The same samples as the whole pushed at once, whatever the pieces (rounding aside).
    const whole = new StreamResampler(from, to).push(src);
    assert.ok(Math.abs(whole.length - out.length) <= 1);
    let worst = 0;
    for (let i = 0; i < Math.min(out.length, whole.length); i++) worst = Math.max(worst, Math.abs(out[i]! - whole[i]!));
    assert.ok(worst <= 1, `${from} -> ${to}: differs by ${worst}`);
    assert.ok(goertzel(out.subarray(to / 10, to / 10 + to / 10), 440, to) > 0.8, `${from} -> ${to}: the tone`);
  }
});

test('resampling by a whole ratio (16 and 24 kHz to 8 kHz) gives what smoothing then interpolating gives', () => {
  // resample's general path, written out: a moving average over the ratio, then linear interpolation.
  const reference = (pcm: Int16Array, ratio: number) => {
    const smoothed = new Float32Array(pcm.length);
    let sum = 0;
    for (let i = 0; i < pcm.length; i++) {
      sum += pcm[i]!;
      if (i >= ratio) sum -= pcm[i - ratio]!;
      smoothed[i] = sum / Math.min(i + 1, ratio);
    }
    const out = new Int16Array(Math.floor(pcm.length / ratio));
    for (let i = 0; i < out.length; i++) {
      const left = i * ratio;
      const right = Math.min(left + 1, pcm.length - 1);
      out[i] = Math.round(smoothed[left]! * 1 + smoothed[right]! * 0);
    }
    return out;
  };
  const random = seededRandom(7);
  for (const rate of [16000, 24000]) {
    for (const length of [1, 2, 3, 1600, 2401]) {
      const pcm = Int16Array.from({ length }, () => Math.round((random() * 2 - 1) * 32767));
      assert.deepEqual(resample(pcm, rate, 8000), reference(pcm, rate / 8000), `${rate} Hz, ${length} samples`);
    }
  }
});
