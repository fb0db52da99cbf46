// A server for the API benchmark, run in a child process so that the load generator does not
// share its event loop: `hello` is a bare Fastify hello-world, `openline` the full app on SQLite.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { loadConfig } from '../../src/config.js';
import { buildServices } from '../../src/services.js';
import { buildApp } from '../../src/app.js';

const kind = process.argv[2];

if (kind === 'hello') {
  const app = Fastify();
  app.get('/', async () => ({ hello: 'world' }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  process.stdout.write(JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 }) + '\n');
} else {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-bench-'));
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
  const services = await buildServices(config);
  const { key } = await services.accounts.create('bench');
  const app = await buildApp(services);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const created = await app.inject({
    method: 'POST',
    url: '/v1/calls',
    headers: { authorization: key },
    payload: { phone_number: '+14155550100', task: 'Benchmark call', start_time: '2099-01-01 00:00:00' },
  });
  const callId = (JSON.parse(created.body) as { call_id: string }).call_id;
  process.stdout.write(
    JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0, key, callId }) + '\n',
  );
  process.on('SIGTERM', () => {
    void app
      .close()
      .then(() => services.close())
      .then(() => {
        fs.rmSync(dataDir, { recursive: true, force: true });
        process.exit(0);
      });
  });
}
