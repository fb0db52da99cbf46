import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import { chromium, type Browser } from 'playwright-core';
import { DASHBOARD_DIR } from '../web.js';

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
