import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { chromium, type Browser } from 'playwright-core';
import { DASHBOARD_DIR } from '../web.js';
import { encodeWav, parseWav } from '../media/wav.js';

/** Debian's Chromium (`apt-get install chromium`); CHROMIUM_PATH points elsewhere. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Headless Chromium as the dashboard's tests and screenshot script drive it, with `extraArgs` (a fake microphone). */
export function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--no-first-run',
      '--disable-component-update',
      ...extraArgs,
    ],
  });
}

/** Builds the dashboard when `npm install` has not (a checkout without its prepare step). */
export function ensureDashboardBuilt(): void {
  if (fs.existsSync(`${DASHBOARD_DIR}/index.html`)) return;
  const result = spawnSync('npm', ['run', 'build:web'], { stdio: 'inherit' });
  if (result.status !== 0) throw new Error('npm run build:web failed');
}

/**
 * Chromium's flags for a fake microphone that says `sentence` (espeak-ng) after 4 s of quiet, then
 * is quiet for 8 s (Chromium loops the file), written under `dir`; with the microphone allowed and
 * audio playing without a gesture.
 */
export function fakeMicrophoneArgs(dir: string, sentence: string): string[] {
  const result = spawnSync('espeak-ng', ['-v', 'en-us', '-s', '150', '--stdout', sentence]);
  if (result.status !== 0) throw new Error('espeak-ng must be installed');
  const { samples, sampleRate } = parseWav(result.stdout);
  const padded = new Int16Array(samples.length + sampleRate * 12);
  padded.set(samples, sampleRate * 4);
  const file = path.join(dir, 'microphone.wav');
  fs.writeFileSync(file, encodeWav(padded, { sampleRate }));
  return [
    '--use-fake-ui-for-media-stream',
    '--use-fake-device-for-media-stream',
    `--use-file-for-fake-audio-capture=${file}`,
    '--autoplay-policy=no-user-gesture-required',
  ];
}
