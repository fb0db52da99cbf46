import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { isStorageUnavailable } from '../../src/store/db.js';
import { createTestDatabase, postgresAvailable } from '../../src/testing/postgres.js';

const available = await postgresAvailable();

/**
 * A TCP relay to PostgreSQL that can be cut and restored: what the service sees when its database
 * server stops (connections reset, new ones refused) and comes back on the same address.
 */
class Relay {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async open(): Promise<void> {
    if (this.server) return;
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => server?.close(resolve));
  }
}

describe('the PostgreSQL server going away', { skip: available ? false : 'no PostgreSQL' }, () => {
  let t: TestApp;
  let relay: Relay;
  let drop: () => Promise<void>;
  before(async () => {
    const database = await createTestDatabase();
    drop = database.drop;
    const url = new URL(database.url);
    relay = new Relay({ host: url.hostname, port: Number(url.port || 5432) });
    await relay.open();
    url.hostname = '127.0.0.1';
    url.port = String(relay.port);
    t = await createTestApp({ config: { databaseUrl: url.toString() } });
  });
  after(async () => {
    await relay?.open();
    await t?.close();
    await relay?.cut();
    await drop?.();
  });

  it('fails a query under way when the connection is cut, and the process lives on', async () => {
    const crashes: unknown[] = [];
    const onCrash = (error: unknown) => crashes.push(error);
    process.on('uncaughtException', onCrash);
    try {
      // A query holds its connection (checked out of the pool) when the server goes away.
      const query = sql`select pg_sleep(5)`.execute(t.services.storage.db);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await relay.cut();
      await assert.rejects(query, (error) => isStorageUnavailable(error));
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.deepEqual(crashes.map(String), []);
    } finally {
      process.off('uncaughtException', onCrash);
      await relay.open();
    }
  });

  it('makes requests a 503 the client may retry, and they succeed again once it is back', async () => {
    const created = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Confirm the visit.',
      start_time: '2099-01-01 00:00:00',
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));

    await relay.cut();
    for (const [method, url] of [
      ['GET', '/v1/calls'],
      ['GET', `/v1/calls/${String(created.body.call_id)}`],
      ['POST', '/v1/calls'],
    ] as const) {
      const r = await t.request(
        method,
        url,
        method === 'POST' ? { phone_number: '+14155550100', task: 'Hi' } : undefined,
      );
      assert.equal(r.status, 503, `${method} ${url}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, 'STORAGE_UNAVAILABLE');
      assert.equal(r.body.status, 'error');
      assert.match(String(r.body.message), /database is unavailable/);
      assert.equal(r.headers['retry-after'], '5');
    }
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(ready.statusCode, 503);

    await relay.open();
    const listed = await t.request('GET', '/v1/calls');
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.deepEqual(
      (listed.body.calls as { call_id: string }[]).map((c) => c.call_id),
      [created.body.call_id],
    );
  });
});
