import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { ensureDashboardBuilt, fakeMicrophoneArgs, launchChromium } from '../../src/testing/browser.js';

type Json = Record<string, unknown>;

/**
 * The widget with a `data-token` written into a static page, in Chromium: a reusable token from
 * authorize lets the page call again after a reload, and lets a second visitor call, while a page
 * of another origin cannot use it.
 */
describe('the widget with a reusable data-token', () => {
  let t: TestApp;
  let origin: string;
  let browser: Browser;
  let dir: string;
  /** The shop's static page with the widget and its token, and a site that copied it, on origins of their own. */
  let token = '';
  const sites: http.Server[] = [];
  let shop: string;
  let copier: string;
  async function site(): Promise<string> {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><title>Shop</title><h1>Shop</h1>
        <script type="module" src="${origin}/client/widget.js" data-token="${token}"></script>`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    sites.push(server);
    return `http://localhost:${(server.address() as AddressInfo).port}`;
  }

  before(async () => {
    ensureDashboardBuilt();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-widget-token-'));
    t = await createTestApp();
    await t.services.startWorkers();
    origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
    browser = await launchChromium(fakeMicrophoneArgs(dir, 'Hello'));
    shop = await site();
    copier = await site();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    for (const server of sites) server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A new visitor of `site`. */
  async function visit(site: string): Promise<Page> {
    const page = await browser.newPage();
    await page.goto(`${site}/`);
    return page;
  }

  /** Presses the widget's button and hangs up once the call runs. */
  async function call(page: Page): Promise<void> {
    await page.getByRole('button', { name: 'Talk to us' }).click();
    await page.getByRole('button', { name: 'End call' }).waitFor({ timeout: 20_000 });
    await page.getByRole('button', { name: 'End call' }).click();
    await page.getByRole('button', { name: 'Talk to us' }).waitFor();
  }

  it('calls after a reload and from a second visitor, and not from another site', async () => {
    const agent = await t.request('POST', '/v1/agents', { prompt: 'You answer questions.', first_sentence: 'Hi.' });
    const agentId = (agent.body.agent as Json).agent_id as string;
    const auth = await t.request('POST', `/v1/agents/${agentId}/authorize`, {
      reusable: true,
      expires_in: 86_400,
      allowed_origins: [shop],
    });
    assert.equal(auth.status, 200, JSON.stringify(auth.body));
    token = auth.body.token as string;

    const page = await visit(shop);
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await call(page);
    await call(page);
    await page.reload();
    await call(page);
    const second = await visit(shop);
    await call(second);

    // Another site that copied the token is refused, and its page says why.
    const copied = await visit(copier);
    await copied.getByRole('button', { name: 'Talk to us' }).click();
    await copied.getByText(`token is not valid on pages of ${copier}: see its allowed_origins`).waitFor();

    const calls = ((await t.request('GET', '/v1/calls?inbound=true')).body.calls as Json[]).filter(
      (c) => c.to === agentId,
    );
    assert.equal(calls.length, 4);
    for (const c of calls) assert.equal((await waitForCall(t, c.call_id as string)).carrier, 'web');
    assert.deepEqual(errors, []);
    await Promise.all([page.close(), second.close(), copied.close()]);
  });
});
