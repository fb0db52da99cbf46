import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** The sipp scenarios of the SIP tests. */
export const SCENARIOS = path.resolve('test/sip/scenarios');
export const HAS_SIPP = spawnSync('sipp', ['-v']).error === undefined;

export interface Sipp {
  child: ChildProcess;
  exit: Promise<number | null>;
  log: string;
}

/** Runs sipp for `calls` calls (one by default) with `args`; its message trace goes to a file for failure reports. */
export function sipp(args: string[], dir: string, name: string, calls = 1): Sipp {
  const log = path.join(dir, `${name}.log`);
  const child = spawn(
    'sipp',
    [
      ...args,
      '-m',
      String(calls),
      '-nostdin',
      '-timeout',
      '60s',
      '-trace_msg',
      '-message_file',
      log,
      '-trace_err',
      '-error_file',
      `${log}.err`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exit, log };
}

/** sipp's message trace (and its error log), for assertions and failure reports. */
export const trace = (s: Sipp): string =>
  (fs.existsSync(s.log) ? fs.readFileSync(s.log, 'utf8') : '(no trace)') +
  (fs.existsSync(`${s.log}.err`) ? fs.readFileSync(`${s.log}.err`, 'utf8') : '');

/** Waits until `test` holds, polling every 100 ms; throws naming `what` after `ms`. */
export async function until(what: string, test: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await test()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}
