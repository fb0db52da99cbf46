// Opus CPU per web call (`npm run bench:opus`): what one call's codec costs the server, on this
// machine, for real speech (espeak-ng). A web call decodes the browser's packets (48 kHz Opus as
// Chromium sends it: mono, 32 kbit/s, 20 ms) to the pipeline's 8 kHz, and encodes the agent's 8 kHz
// frames as Opus for the browser: 50 packets a second each way. Figures: microseconds of CPU per
// 20 ms packet (encode, decode, and the concealment of a lost packet), and the share of one core
// a call's Opus takes, for the encoder's settings a web call uses and for the alternatives.
// Usage: npm run bench:opus [-- --seconds 60]
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { FRAME_SAMPLES, resample } from '../../src/media/audio.js';
import { OpusCodec, type OpusOptions } from '../../src/media/opus.js';
import { parseWav } from '../../src/media/wav.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '60' } } });
const seconds = Number(values.seconds);

/** espeak-ng speech, repeated to `seconds`, at `rate`. */
function speech(rate: number): Int16Array {
  const said = spawnSync('espeak-ng', [
    '-v',
    'en-us',
    '--stdout',
    'Hello, I would like to book a table for two at eight tonight, by the window if you have one.',
  ]);
  if (said.status !== 0) throw new Error('espeak-ng must be installed');
  const { samples, sampleRate } = parseWav(said.stdout);
  const one = resample(samples, sampleRate, rate);
  const out = new Int16Array(seconds * rate);
  for (let at = 0; at < out.length; at += one.length) out.set(one.subarray(0, out.length - at), at);
  return out;
}

/** The browser's side: Chromium's Opus encoder at 48 kHz (opusscript's own wrapper; one instance). */
interface BrowserEncoder {
  encode(pcm: Buffer, frameSize: number): Buffer;
  setBitrate(bitrate: number): void;
  delete(): void;
}
const require = createRequire(import.meta.url);
const OpusScript = require('opusscript') as {
  new (rate: number, channels: number, application: number): BrowserEncoder;
};
const browser = new OpusScript(48_000, 1, 2048);
browser.setBitrate(32_000);
const fullband = speech(48_000);
const packets: Buffer[] = [];
for (let at = 0; at + 960 <= fullband.length; at += 960) {
  const pcm = fullband.subarray(at, at + 960);
  packets.push(browser.encode(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength), 960));
}
browser.delete();
const narrowband = speech(8000);
const frames = Math.min(packets.length, narrowband.length / FRAME_SAMPLES);

/** CPU microseconds (user + system) of `work`. */
function cpuUs(work: () => void): number {
  const before = process.cpuUsage();
  work();
  const used = process.cpuUsage(before);
  return used.user + used.system;
}

function measure(label: string, options: OpusOptions): void {
  const codec = new OpusCodec(options);
  let sent = 0;
  // A warm-up, so that the figures are the compiled code's.
  for (let i = 0; i < 100; i++) codec.decode(packets[i]!);
  for (let i = 0; i < 100; i++) codec.encode(narrowband.subarray(i * FRAME_SAMPLES, (i + 1) * FRAME_SAMPLES));
  const encodeUs = cpuUs(() => {
    for (let i = 0; i < frames; i++)
      sent += codec.encode(narrowband.subarray(i * FRAME_SAMPLES, (i + 1) * FRAME_SAMPLES)).length;
  });
  const decodeUs = cpuUs(() => {
    for (let i = 0; i < frames; i++) codec.decode(packets[i]!);
  });
  const losses = 200;
  const concealUs = cpuUs(() => {
    for (let i = 0; i < losses; i++) {
      codec.conceal(FRAME_SAMPLES);
      codec.decode(packets[i]!);
    }
  });
  codec.close();
  const perFrame = (us: number) => us / frames;
  const share = ((perFrame(encodeUs) + perFrame(decodeUs)) * 50) / 1e4;
  console.log(
    `${label.padEnd(34)} encode ${perFrame(encodeUs).toFixed(0).padStart(4)} µs  decode ${perFrame(decodeUs)
      .toFixed(0)
      .padStart(4)} µs  lost packet ${(concealUs / losses - perFrame(decodeUs)).toFixed(0).padStart(5)} µs  ` +
      `sent ${((sent * 8) / (frames * 20)).toFixed(1)} kbit/s  per call ${share.toFixed(2)} % of a core`,
  );
}

console.log(
  `Opus per web call, ${frames} packets each way (${seconds} s of espeak-ng speech), browser packets ` +
    `${((packets.reduce((n, p) => n + p.length, 0) * 8) / (packets.length * 20)).toFixed(1)} kbit/s:`,
);
measure('web call (complexity 5, FEC)', { fec: true });
measure('complexity 5, no FEC', {});
measure('complexity 10, FEC', { fec: true, complexity: 10 });
measure('complexity 0, FEC', { fec: true, complexity: 0 });
