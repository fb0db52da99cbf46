import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';

/** A server (`src/main.ts`) in a child process, once it says it is ready. */
export interface ServerProcess {
  child: ChildProcess;
  /** The API's base URL it printed, e.g. http://127.0.0.1:41234/v1. */
  baseUrl: string;
}

/**
 * Starts `src/main.ts` as `npm start` runs it, with `env` over this process's environment, and
 * resolves once its log says "Openline ready" (rejects if it exits first). Its stderr is inherited.
 */
export function startServerProcess(
  env: NodeJS.ProcessEnv,
  options: { nodeArgs?: string[] } = {},
): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = readline.createInterface({ input: child.stdout! });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the server exited with ${code} before it was ready`)));
    lines.on('line', (line) => {
      if (!line.includes('Openline ready')) return;
      resolve({ child, baseUrl: (JSON.parse(line) as { base_url: string }).base_url });
    });
  });
}
