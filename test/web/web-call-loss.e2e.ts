import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { ensureDashboardBuilt, fakeMicrophoneArgs, launchChromium } from '../../src/testing/browser.js';
import { startServerProcess, type ServerProcess } from '../../src/testing/server-process.js';

const KEY = 'web-call-loss-key-0123456789';

/**
 * A web call whose server dies mid-call, in Chromium: the page hears no more heartbeats on the
 * data channel and ends the call itself, saying the connection was lost, instead of waiting the
 * 15 s and more ICE takes to give up. The page's clock is Playwright's, so that the seconds
 * without a heartbeat pass at once.
 */
describe('a web call whose server is lost', () => {
  let dir: string;
  let server: ServerProcess;
  let origin: string;
  let browser: Browser;

  before(async () => {
    ensureDashboardBuilt();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-webcall-loss-'));
    server = await startServerProcess({
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dir,
      OPENLINE_API_KEY: KEY,
      OPENLINE_SIP_LISTEN: 'off',
    });
    origin = new URL(server.baseUrl).origin;
    browser = await launchChromium(fakeMicrophoneArgs(dir, 'Hello'));
  });
  after(async () => {
    await browser?.close();
    if (server?.child.exitCode === null) server.child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function api(pathname: string, body: unknown): Promise<Record<string, unknown>> {
    const response = await fetch(`${origin}/v1${pathname}`, {
      method: 'POST',
      headers: { authorization: KEY, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return (await response.json()) as Record<string, unknown>;
  }

  it('the widget ends the call and says the connection was lost, without waiting for ICE', async () => {
    const agent = await api('/agents', { prompt: 'You answer questions.', first_sentence: 'Hello there.' });
    const agentId = (agent.agent as { agent_id: string }).agent_id;
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    // The customer's page (on the server's origin, a secure context) and its token route.
    await page.route(`${origin}/customer`, (route) =>
      route.fulfill({
        contentType: 'text/html',
        body: `<!doctype html><title>Shop</title><h1>Shop</h1>
          <script type="module" src="${origin}/client/widget.js" data-token-url="/openline-token"></script>`,
      }),
    );
    await page.route(`${origin}/openline-token`, async (route) =>
      route.fulfill({ json: { token: (await api(`/agents/${agentId}/authorize`, {})).token } }),
    );
    // Counts the server's heartbeats on the page's data channels.
    await page.addInitScript({
      content: `window.__heartbeats = 0;
        const create = RTCPeerConnection.prototype.createDataChannel;
        RTCPeerConnection.prototype.createDataChannel = function (...args) {
          const channel = create.apply(this, args);
          channel.addEventListener('message', (event) => {
            if (String(event.data).includes('"heartbeat"')) window.__heartbeats++;
          });
          return channel;
        };`,
    });
    await page.clock.install();
    await page.goto(`${origin}/customer`);
    await page.getByRole('button', { name: 'Talk to us' }).click();
    await page.getByRole('button', { name: 'End call' }).waitFor({ timeout: 20_000 });
    await page.waitForFunction('window.__heartbeats > 0', undefined, { timeout: 20_000 });

    server.child.kill('SIGKILL');
    await new Promise((resolve) => server.child.once('exit', resolve));
    // Seconds pass on the page with nothing from the server.
    await page.clock.runFor(5000);
    await page.getByText('The call ended: the connection to the server was lost.').waitFor({ timeout: 10_000 });
    await page.getByRole('button', { name: 'Talk to us' }).waitFor({ timeout: 10_000 });
    assert.deepEqual(errors, []);
    await page.close();
  });
});
