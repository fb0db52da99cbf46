/** Test signals for the media detectors: espeak-ng speech, seeded noise, levels. */
import { execFileSync } from 'node:child_process';

import { FRAME_SAMPLES, rms, seededRandom } from '../../src/media/audio.js';
import { wavToPcm8k } from '../../src/media/wav.js';

let espeakAvailable: boolean | undefined;

/** Whether espeak-ng is installed (CI installs it; tests that need it skip without it). */
export function hasEspeak(): boolean {
  if (espeakAvailable === undefined) {
    try {
      execFileSync('espeak-ng', ['--version'], { stdio: 'ignore' });
      espeakAvailable = true;
    } catch {
      espeakAvailable = false;
    }
  }
  return espeakAvailable;
}

/** Speech from espeak-ng as 8 kHz PCM. */
export function speak(text: string, voice = 'en-us', extra: string[] = []): Int16Array {
  const wav = execFileSync('espeak-ng', ['--stdout', '-v', voice, ...extra, text], { maxBuffer: 64 << 20 });
  return wavToPcm8k(wav);
}

/** Gaussian white noise at an RMS level in dBFS. */
export function noise(samples: number, levelDbfs: number, seed = 1): Int16Array {
  const next = seededRandom(seed);
  const sigma = 32768 * 10 ** (levelDbfs / 20);
  const out = new Int16Array(samples);
  for (let i = 0; i < samples; i++) {
    const g = Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
    out[i] = Math.max(-32768, Math.min(32767, Math.round(g * sigma)));
  }
  return out;
}

/**
 * Speech-like sound without a synthesiser: a voice's harmonics (its pitch between 100 and 220 Hz,
 * set by `seed`, wavering as a voice does) with a little breath, shaped into syllables of 200 ms,
 * about as loud as uniform noise of `amplitude`.
 */
export function syllables(durationMs: number, seed = 7, amplitude = 4000): Int16Array {
  const random = seededRandom(seed);
  const pitch = 100 + ((seed * 37) % 120);
  const out = new Int16Array(Math.round(durationMs * 8));
  let phase = 0;
  for (let i = 0; i < out.length; i++) {
    const t = i / 8000;
    phase += (2 * Math.PI * pitch * (1 + 0.06 * Math.sin(2 * Math.PI * 3 * t))) / 8000;
    let harmonics = 0;
    for (let k = 1; k <= 10; k++) harmonics += Math.sin(k * phase) / k;
    const envelope = 0.35 + 0.65 * Math.abs(Math.sin((Math.PI * i) / 1600));
    out[i] = Math.round(amplitude * envelope * (0.62 * harmonics + 0.2 * (random() - 0.5)));
  }
  return out;
}

/** Line noise: hiss plus 60 Hz hum and its harmonics, at about `levelDbfs`. */
export function lineNoise(samples: number, levelDbfs: number, seed = 7): Int16Array {
  const hiss = noise(samples, levelDbfs - 2, seed);
  const hum = 32768 * 10 ** ((levelDbfs - 6) / 20);
  for (let i = 0; i < samples; i++) {
    const t = i / 8000;
    const v = hiss[i]! + hum * (Math.sin(2 * Math.PI * 60 * t) + 0.5 * Math.sin(2 * Math.PI * 180 * t));
    hiss[i] = Math.max(-32768, Math.min(32767, Math.round(v)));
  }
  return hiss;
}

/** `pcm` scaled so that its RMS is `levelDbfs`. */
export function atLevel(pcm: Int16Array, levelDbfs: number): Int16Array {
  const gain = (32768 * 10 ** (levelDbfs / 20)) / Math.max(1, rms(pcm));
  return pcm.map((s) => Math.max(-32768, Math.min(32767, Math.round(s * gain))));
}

/** Sample-wise sum of two signals (the longer one's length), saturated. */
export function mix(a: Int16Array, b: Int16Array): Int16Array {
  const out = new Int16Array(Math.max(a.length, b.length));
  for (let i = 0; i < out.length; i++) out[i] = Math.max(-32768, Math.min(32767, (a[i] ?? 0) + (b[i] ?? 0)));
  return out;
}

/** Cuts PCM into 20 ms frames (the last padded with silence). */
export function pcmFrames(pcm: Int16Array): Int16Array[] {
  const frames: Int16Array[] = [];
  for (let at = 0; at < pcm.length; at += FRAME_SAMPLES) {
    const frame = new Int16Array(FRAME_SAMPLES);
    frame.set(pcm.subarray(at, at + FRAME_SAMPLES));
    frames.push(frame);
  }
  return frames;
}
