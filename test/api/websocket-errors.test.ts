import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { WebSocket } from 'ws';
import { loadConfig } from '../../src/config.js';
import { buildServices } from '../../src/services.js';
import { buildApp } from '../../src/app.js';
import type { Api } from '../../src/api/types.js';
import type { Services } from '../../src/services.js';

describe('websocket peers that break the protocol', () => {
  const lines: { level: number; msg: string }[] = [];
  let services: Services;
  let app: Api;
  let origin: string;
  before(async () => {
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    services = await buildServices(
      { ...loadConfig({ DATA_DIR: ':memory:', OPENLINE_SIP_LISTEN: 'off' }), dataDir: ':memory:' },
      { logger },
    );
    app = await buildApp(services, { logger });
    origin = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await app.close();
    await services.close();
  });

  it('a frame over the limit closes the socket with 1009, logged as the peer’s warning, not an error', async () => {
    const socket = new WebSocket(`${origin.replace('http', 'ws')}/twilio/media`);
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    socket.send('x'.repeat(70 * 1024));
    assert.equal(await closed, 1009);
    const about = lines.filter((l) => /payload|websocket/i.test(l.msg));
    assert.ok(
      about.some((l) => l.level === 40 && l.msg === 'websocket peer error'),
      JSON.stringify(about),
    );
    assert.deepEqual(
      lines.filter((l) => l.level >= 50),
      [],
    );
  });
});
