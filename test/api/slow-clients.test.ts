import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { WebSocket } from 'ws';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { waitFor } from '../../src/testing/wait.js';

/** What a client that sends `start`, then one more byte of `drip` every 50 ms, gets back, and when. */
function slowClient(port: number, start: string, drip: string): Promise<{ answer: string; ms: number }> {
  return new Promise((resolve) => {
    const began = Date.now();
    let answer = '';
    const socket = net.connect(port, '127.0.0.1', () => socket.write(start));
    const dripping = setInterval(() => {
      if (socket.writable) socket.write(drip);
    }, 50);
    socket.on('data', (chunk) => (answer += String(chunk)));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(dripping);
      resolve({ answer, ms: Date.now() - began });
    });
  });
}

/**
 * A client that sends its headers or its body a byte at a time (slowloris) is answered 408 and
 * disconnected once the request takes longer than the request timeout, instead of holding a
 * connection (and a file descriptor) for as long as it likes. Websockets and event streams,
 * whose requests are complete once they are open, are not cut.
 */
describe('slow clients', () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    t = await createTestApp({ config: { requestTimeoutMs: 1500, headersTimeoutMs: 600 } });
    // A websocket that stays open until its client closes it, as a call's media stream does.
    t.app.get('/test/quiet-socket', { websocket: true }, () => undefined);
    const origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = Number(new URL(origin).port);
  });
  after(() => t.close());

  function assertTimedOut(answer: string): void {
    assert.match(answer, /^HTTP\/1\.1 408 /);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
    assert.equal(body.status, 'error');
    assert.equal(body.code, 'REQUEST_TIMEOUT');
    assert.match(String(body.message), /request took too long/i);
  }

  it('answers headers that never end with 408 and closes the connection', async () => {
    const { answer } = await slowClient(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n', 'X');
    assertTimedOut(answer);
  });

  it('answers a body that never ends with 408 and closes the connection, a websocket opened before stays open', async () => {
    const socket = new WebSocket(`ws://127.0.0.1:${port}/test/quiet-socket`);
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    const head =
      `POST /v1/calls HTTP/1.1\r\nHost: x\r\nauthorization: ${t.key}\r\n` +
      'content-type: application/json\r\ncontent-length: 100000\r\n\r\n{';
    const { answer } = await slowClient(port, head, ' ');
    assertTimedOut(answer);
    assert.equal(socket.readyState, WebSocket.OPEN, 'the websocket outlived the request timeout');
    socket.close();
  });

  it('lets go of a slow client that never reads its answer nor closes', async () => {
    const open = () =>
      new Promise<number>((resolve, reject) =>
        t.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
      );
    const socket = net.connect(port, '127.0.0.1', () => socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'));
    socket.pause();
    socket.on('error', () => undefined);
    await waitFor('the connection to be counted', async () => (await open()) === 1);
    await waitFor('the server to close its end', async () => (await open()) === 0, 30_000);
    socket.destroy();
  });

  it('still answers a request that is sent at once', async () => {
    const r = await fetch(`http://127.0.0.1:${port}/healthz`);
    assert.equal(r.status, 200);
  });
});
