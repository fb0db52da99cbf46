// Time to first audio of the local TTS: from synthesize() to the first PCM chunk of espeak-ng
// (process start, voice load, WAV header, first samples), one sentence at a time, as a call's
// agent turn would ask for it. Prints median, p90, min and max over the runs, after one warm-up.
// Usage: npx tsx bench/media/tts-first-audio.ts [--runs 20] [--voice en-us+m3] [--text "..."]
import { parseArgs } from 'node:util';
import { EspeakTts } from '../../src/providers/tts/espeak.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    voice: { type: 'string', default: 'en-us+m3' },
    text: { type: 'string', default: 'Thanks for calling Acme Dental, this is Mason. How can I help you today?' },
  },
});
const runs = Number(values.runs);
const tts = new EspeakTts();

async function once(): Promise<{ firstMs: number; lastMs: number; audioMs: number }> {
  const started = performance.now();
  let firstMs = 0;
  let samples = 0;
  let rate = 0;
  for await (const chunk of tts.synthesize({ text: values.text, voice: values.voice, language: 'en-US' })) {
    if (samples === 0) firstMs = performance.now() - started;
    samples += chunk.pcm.length;
    rate = chunk.sampleRate;
  }
  return { firstMs, lastMs: performance.now() - started, audioMs: (samples / rate) * 1000 };
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

await once(); // warm-up: the first spawn loads espeak-ng's data into the page cache
const results = [];
for (let i = 0; i < runs; i++) results.push(await once());
const first = results.map((r) => r.firstMs).sort((a, b) => a - b);
const last = results.map((r) => r.lastMs).sort((a, b) => a - b);
const fmt = (ms: number): string => `${ms.toFixed(1)} ms`;
console.log(`espeak-ng time to first audio, ${runs} runs, voice ${values.voice}`);
console.log(`text: "${values.text}" (${results[0]!.audioMs.toFixed(0)} ms of audio)`);
console.log(
  `first chunk: median ${fmt(quantile(first, 0.5))}, p90 ${fmt(quantile(first, 0.9))}, min ${fmt(first[0]!)}, max ${fmt(first.at(-1)!)}`,
);
console.log(`whole sentence: median ${fmt(quantile(last, 0.5))}, max ${fmt(last.at(-1)!)}`);
