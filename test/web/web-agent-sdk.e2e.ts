import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { build } from 'esbuild';
import type { Browser } from 'playwright-core';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { fakeMicrophoneArgs, launchChromium } from '../../src/testing/browser.js';
import { FakeDeepgram } from '../../src/testing/fake-deepgram.js';
import { waitFor } from '../../src/testing/wait.js';

type Json = Record<string, unknown>;

/** The hosted API's published browser SDK (npm `bland-client-js-sdk`), bundled for a page as its users do. */
async function sdkBundle(): Promise<string> {
  const entry = createRequire(import.meta.url).resolve('bland-client-js-sdk/dist/lib/es5/index.js');
  const bundled = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'iife',
    globalName: 'BlandSdk',
    platform: 'browser',
    write: false,
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  return bundled.outputFiles[0]!.text;
}

/**
 * A customer's existing page built on the hosted API's web-agent SDK, unchanged but for the
 * endpoint it is pointed at, talks to an Openline agent in Debian's Chromium with a fake
 * microphone: its back end gets a token from authorize, the SDK's BlandWebClient streams the
 * microphone as PCM over the websocket and plays the agent's voice, and its `transcripts` events
 * carry both sides' words.
 */
describe('the hosted web-agent SDK against Openline, in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let deepgram: FakeDeepgram;
  let dir: string;
  let customer: http.Server;
  let agentId: string;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-websdk-'));
    deepgram = await FakeDeepgram.start({ transcripts: Array<string>(30).fill('I would like to book a table.') });
    t = await createTestApp({
      env: { DEEPGRAM_API_KEY: deepgram.apiKey, OPENLINE_DEEPGRAM_URL: deepgram.url, DATA_DIR: dir },
    });
    await t.services.startWorkers();
    const origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const agent = await t.request('POST', '/v1/agents', {
      prompt: 'You take table bookings for Luigi’s restaurant.',
      first_sentence: 'Luigi’s, how can I help?',
      max_duration: 2,
    });
    agentId = (agent.body.agent as Json).agent_id as string;
    const sdk = await sdkBundle();
    const endpoint = `${origin.replace('http', 'ws')}/ws/connect/blandshared`;

    customer = http.createServer((req, res) => {
      if (req.url === '/session' && req.method === 'POST') {
        void t.request('POST', `/v1/agents/${agentId}/authorize`, { request_data: { name: 'Ada' } }).then((r) => {
          res.writeHead(r.status, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ token: r.body.token }));
        });
        return;
      }
      if (req.url === '/sdk.js') {
        res.writeHead(200, { 'content-type': 'text/javascript' });
        res.end(sdk);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><html><head><title>Luigi's</title><script src="/sdk.js"></script></head><body>
        <button id="talk">Talk</button>
        <script>
          window.seen = { started: 0, ended: null, transcripts: [], errors: [], loud: 0 };
          document.getElementById('talk').onclick = async () => {
            const { token } = await (await fetch('/session', { method: 'POST' })).json();
            const client = new BlandSdk.BlandWebClient(${JSON.stringify(agentId)}, token, {
              customEndpoint: ${JSON.stringify(endpoint)},
            });
            window.client = client;
            client.on('conversationStarted', () => window.seen.started++);
            client.on('transcripts', (t) => window.seen.transcripts.push(t));
            client.on('conversationEnded', (e) => (window.seen.ended = e));
            client.on('Error', (e) => window.seen.errors.push(String(e)));
            // What the SDK plays, 128 samples at a time: count the pieces with the agent's voice in them.
            client.on('audio', (bytes) => {
              const pcm = new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1);
              if (pcm.some((x) => Math.abs(x) > 3000)) window.seen.loud++;
            });
            await client.initConversation({ sampleRate: 44100 });
          };
        </script></body></html>`);
    });
    await new Promise<void>((resolve) => customer.listen(0, '127.0.0.1', resolve));

    browser = await launchChromium(fakeMicrophoneArgs(dir, 'I would like to book a table'));
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await deepgram?.close();
    customer?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a BlandWebClient page talks to the agent and hangs up', async () => {
    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`http://localhost:${(customer.address() as AddressInfo).port}/`);
    await page.getByRole('button', { name: 'Talk' }).click();
    type Seen = { started: number; ended: Json | null; transcripts: Json[]; errors: string[]; loud: number };
    const seen = () => page.evaluate<Seen>('window.seen');
    const said = (s: Seen) => s.transcripts.map((x) => `${x.type as string}: ${x.text as string}`);
    await waitFor(
      'the caller’s words and the agent’s answer on the page',
      async () => {
        const s = await seen();
        const lines = said(s);
        return lines.includes('human: I would like to book a table.') && lines.length >= 3 && s;
      },
      40_000,
    ).catch(async (error: Error) => {
      // What the page saw, and the call's own record, say why.
      const s = await seen();
      const calls = await t.request('GET', '/v1/calls');
      throw new Error(`${error.message}: page saw ${JSON.stringify(s)}; calls ${JSON.stringify(calls.body)}`);
    });
    await page.evaluate('window.client.stopConversation()');
    await waitFor('the SDK’s end of the conversation', async () => (await seen()).ended);
    const s = await seen();
    assert.equal(s.started, 1);
    assert.deepEqual(s.errors, []);
    assert.equal(said(s)[0], 'assistant: Luigi’s, how can I help?');
    // The agent's voice played: over a second of 128-sample pieces at 44.1 kHz (344 a second).
    assert.ok(s.loud > 344, `${s.loud} voiced pieces played`);
    await page.close();

    const calls = ((await t.request('GET', '/v1/calls?inbound=true')).body.calls as Json[]).filter(
      (c) => c.to === agentId,
    );
    assert.equal(calls.length, 1);
    const call = await waitForCall(t, calls[0]!.call_id as string);
    assert.equal(call.carrier, 'web');
    assert.equal(call.call_ended_by, 'USER');
    assert.equal(((call.request_data as Json).request_data as Json).name, 'Ada');
    const lines = (call.transcripts as Json[]).map((l) => `${l.user as string}: ${l.text as string}`);
    assert.ok(lines.includes('user: I would like to book a table.'), lines.join('\n'));
    // The caller's microphone reached the recogniser as telephone audio: 8 kHz mu-law, about 8 KB a second.
    const heard = deepgram.connections.reduce((n, c) => n + c.bytes, 0);
    assert.ok(heard > 16_000, `${heard} bytes heard`);
    assert.deepEqual(pageErrors, []);
  });
});
