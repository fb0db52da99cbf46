import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { freeUdpPort } from '../../src/testing/ports.js';

/** An Openline of a SIP test file: the app, its data directory and the loopback UDP port its SIP listens on. */
export interface SipTestApp {
  t: TestApp;
  dir: string;
  ourPort: number;
  /** Stops the app and removes its data directory. */
  close(): Promise<void>;
}

/**
 * Starts an Openline for a SIP test file: a data directory of its own (`openline-NAME-...`), SIP on
 * a free loopback UDP port, `env` on top (the trunk, the RTP ports, speech providers), T1 of `t1Ms`
 * when given (64 T1 is then the wait for a PRACK or an ACK), an RTP timeout of `rtpTimeoutMs` when
 * given; its workers run.
 */
export async function startSipApp(
  name: string,
  env: Record<string, string>,
  t1Ms?: number,
  /** How long a call's RTP may stay silent before the call ends (default 30 s). */
  rtpTimeoutMs?: number,
): Promise<SipTestApp> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `openline-${name}-`));
  const ourPort = await freeUdpPort();
  const full = { DATA_DIR: dir, OPENLINE_SIP_LISTEN: `127.0.0.1:${ourPort}`, ...env };
  const t = await createTestApp({
    env: full,
    ...(t1Ms === undefined && rtpTimeoutMs === undefined
      ? {}
      : {
          config: {
            sip: {
              ...loadConfig(full).sip,
              ...(t1Ms !== undefined && { t1Ms }),
              ...(rtpTimeoutMs !== undefined && { rtpTimeoutMs }),
            },
          },
        }),
  });
  await t.services.startWorkers();
  return {
    t,
    dir,
    ourPort,
    close: async () => {
      await t.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
