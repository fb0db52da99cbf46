import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encodeMulaw } from '../../src/media/audio.js';
import { wavToPcm8k } from '../../src/media/wav.js';

/** The media benchmarks' caller: one question (or `text`) spoken by espeak-ng, as 8 kHz mu-law. */
export function callerUtterance(text = 'Hello, I would like to know your opening hours please.'): Buffer {
  const file = path.join(os.tmpdir(), `openline-bench-media-${process.pid}.wav`);
  const result = spawnSync('espeak-ng', ['-v', 'en-us', '-s', '170', '-w', file, text]);
  if (result.status !== 0) throw new Error('espeak-ng is needed for the caller speech');
  const pcm = wavToPcm8k(fs.readFileSync(file));
  fs.rmSync(file, { force: true });
  return encodeMulaw(pcm);
}
