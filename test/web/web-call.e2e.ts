import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { ensureDashboardBuilt, fakeMicrophoneArgs, launchChromium } from '../../src/testing/browser.js';
import { FakeDeepgram } from '../../src/testing/fake-deepgram.js';
import { rms } from '../../src/media/audio.js';
import { parseWav } from '../../src/media/wav.js';

type Json = Record<string, unknown>;

/**
 * Web calls end to end in Debian's Chromium with a fake microphone (a WAV of espeak-ng speech):
 * a customer's page on another origin embeds the widget with a token from authorize, the browser
 * talks to the agent over WebRTC (ICE, DTLS-SRTP, Opus), the Deepgram emulator hears the caller,
 * the agent answers, and the call's record has it all; the dashboard's "Talk to this agent" too.
 */
describe('web calls in Chromium', () => {
  let t: TestApp;
  let origin: string;
  let browser: Browser;
  let deepgram: FakeDeepgram;
  let dir: string;
  let customer: http.Server;
  let customerOrigin: string;
  let agentId: string;
  const pageErrors: string[] = [];

  before(async () => {
    ensureDashboardBuilt();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-webcall-'));
    // Every time the (looping) microphone speaks, the recogniser hears the sentence it says.
    deepgram = await FakeDeepgram.start({
      transcripts: Array<string>(30).fill('I would like to book a table for two.'),
    });
    t = await createTestApp({
      env: { DEEPGRAM_API_KEY: deepgram.apiKey, OPENLINE_DEEPGRAM_URL: deepgram.url, DATA_DIR: dir },
    });
    await t.services.startWorkers();
    origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const agent = await t.request('POST', '/v1/agents', {
      prompt: 'You take table bookings for Luigi’s restaurant.',
      first_sentence: 'Luigi’s, how can I help?',
      max_duration: 2,
    });
    agentId = (agent.body.agent as Json).agent_id as string;

    // The customer's own site: its back end asks Openline for a token with the API key, its page
    // embeds the widget from Openline's origin.
    customer = http.createServer((req, res) => {
      if (req.url === '/openline-token' && req.method === 'POST') {
        void t.request('POST', `/v1/agents/${agentId}/authorize`, { request_data: { name: 'Ada' } }).then((r) => {
          res.writeHead(r.status, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ token: r.body.token }));
        });
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><html><head><title>Luigi's</title></head><body><h1>Luigi's</h1>
        <script type="module" src="${origin}/client/widget.js" data-token-url="/openline-token"></script></body></html>`);
    });
    await new Promise<void>((resolve) => customer.listen(0, '127.0.0.1', resolve));
    customerOrigin = `http://localhost:${(customer.address() as AddressInfo).port}`;

    browser = await launchChromium(fakeMicrophoneArgs(dir, 'I would like to book a table for two'));
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await deepgram?.close();
    customer?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function newPage(): Promise<Page> {
    const page = await browser.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    return page;
  }

  /** Packets and audio energy the page received from the agent, from WebRTC's own stats. */
  function inboundAudio(page: Page): Promise<{ packets: number; energy: number }> {
    return page.evaluate(`(async () => {
      const found = { packets: 0, energy: 0 };
      for (const pc of window.__openlinePeers ?? [])
        (await pc.getStats()).forEach((report) => {
          if (report.type !== 'inbound-rtp') return;
          found.packets += report.packetsReceived ?? 0;
          found.energy += report.totalAudioEnergy ?? 0;
        });
      return found;
    })()`);
  }

  /** Keeps every RTCPeerConnection the page makes, for the stats above. */
  const trackPeers = (page: Page) =>
    page.addInitScript({
      content: `window.__openlinePeers = [];
        const Original = window.RTCPeerConnection;
        window.RTCPeerConnection = class extends Original {
          constructor(config) { super(config); window.__openlinePeers.push(this); }
        };`,
    });

  it('a page on another origin talks to the agent through the widget, with a token from authorize', async () => {
    const page = await newPage();
    await trackPeers(page);
    const started = Date.now();
    await page.goto(customerOrigin);
    await page.getByRole('button', { name: 'Talk to us' }).click();
    await page.getByRole('button', { name: 'End call' }).waitFor();
    // The agent greets, the caller asks, the agent answers: all on the page as it happens.
    await page.getByText('Agent: Luigi’s, how can I help?').waitFor({ timeout: 15_000 });
    const firstWords = Date.now() - started;
    await page.getByText('You: I would like to book a table for two.').waitFor({ timeout: 20_000 });
    await page.locator('.openline-lines p').nth(2).waitFor({ timeout: 20_000 });
    const audio = await inboundAudio(page);
    assert.ok(audio.packets > 50, `agent audio packets in the browser: ${audio.packets}`);
    assert.ok(audio.energy > 0, 'the agent’s audio is not silence');
    await page.getByRole('button', { name: 'End call' }).click();
    await page.getByRole('button', { name: 'Talk to us' }).waitFor();
    await page.close();

    const list = await t.request('GET', '/v1/calls?inbound=true');
    const calls = (list.body.calls as Json[]).filter((c) => c.to === agentId);
    assert.equal(calls.length, 1);
    const call = await waitForCall(t, calls[0]!.call_id as string);
    assert.equal(call.inbound, true);
    assert.equal(call.carrier, 'web');
    assert.equal(call.from, null);
    assert.equal(call.call_ended_by, 'USER');
    assert.equal(((call.request_data as Json).request_data as Json).name, 'Ada', 'the token’s request_data');
    const lines = (call.transcripts as Json[]).map((l) => `${l.user as string}: ${l.text as string}`);
    assert.equal(lines[0], 'assistant: Luigi’s, how can I help?');
    assert.ok(lines.includes('user: I would like to book a table for two.'), lines.join('\n'));
    assert.ok(deepgram.connections.length >= 1, 'the caller was heard through the speech recogniser');
    console.log(`web call: first agent words on the page ${firstWords} ms after the page loaded`);
    assert.deepEqual(pageErrors, []);
  });

  it('closing the tab ends the call within seconds', async () => {
    const page = await newPage();
    await page.goto(customerOrigin);
    await page.getByRole('button', { name: 'Talk to us' }).click();
    await page.getByRole('button', { name: 'End call' }).waitFor();
    // Talking: the media flows both ways.
    await page.getByText('Agent: Luigi’s, how can I help?').waitFor({ timeout: 15_000 });
    const live = (await t.request('GET', '/v1/calls?inbound=true')).body.calls as Json[];
    const callId = live.find((c) => !c.completed)?.call_id as string;
    assert.ok(callId, 'the call runs');
    const closed = Date.now();
    await page.close();
    const call = await waitForCall(t, callId);
    const took = Date.now() - closed;
    console.log(`web call: the call ended ${took} ms after its tab closed`);
    assert.ok(took < 10_000, `ended after ${took} ms`);
    assert.equal(call.call_ended_by, 'USER');
  });

  it('a token works once; a wrong or used one is refused with 401', async () => {
    const auth = await t.request('POST', `/v1/agents/${agentId}/authorize`, {});
    const token = auth.body.token as string;
    const bad = await t.request('POST', '/v1/web-calls', { token: 'wct_nope', sdp: 'v=0' }, { as: null });
    assert.equal(bad.status, 401);
    assert.match(String(bad.body.message), /token/);
    // A malformed offer is a 400 naming sdp, and leaves the token good: it starts no call.
    for (let i = 0; i < 2; i++) {
      const offer = await t.request('POST', '/v1/web-calls', { token, sdp: 'v=0\r\n' }, { as: null });
      assert.equal(offer.status, 400);
      assert.match(JSON.stringify(offer.body), /sdp/);
    }
    // Once a call took it, it is used up.
    await t.services.webCallTokens.spend(token, {}, () => Promise.resolve('a call'));
    const again = await t.request('POST', '/v1/web-calls', { token, sdp: 'v=0\r\n' }, { as: null });
    assert.equal(again.status, 401);
    // Another account's agent cannot be authorized, nor called with the key.
    const foreign = await t.request('POST', `/v1/agents/${agentId}/authorize`, {}, { as: t.otherKey });
    assert.equal(foreign.status, 404);
    const keyed = await t.request('POST', '/v1/web-calls', { agent_id: agentId, sdp: 'v=0' }, { as: t.otherKey });
    assert.equal(keyed.status, 404);
  });

  it('the caller cuts in over a long greeting: the agent stops, the transcript keeps what was played, the agent answers', async () => {
    const long = await t.request('POST', '/v1/agents', {
      prompt: 'You are the front desk of a busy clinic.',
      first_sentence:
        'Thank you for calling the clinic. Please listen carefully, as our opening hours and our services have changed recently, and we want to make sure you reach the right person for your question today.',
    });
    const longId = (long.body.agent as Json).agent_id as string;
    const page = await newPage();
    await page.goto(`${origin}/healthz`);
    // The library from the server, with the API key, as an internal tool would use it.
    const result = (await page.evaluate(`(async () => {
      const { startWebCall } = await import('${origin}/client/openline.js');
      const clicked = performance.now();
      const call = await startWebCall({ apiKey: '${t.key}', agentId: '${longId}' });
      let firstAudioMs = null;
      call.on('agent_start_talking', () => (firstAudioMs ??= performance.now() - clicked));
      const lines = [];
      await new Promise((resolve) => {
        call.on('transcript', (line) => {
          lines.push(line);
          if (lines.length === 3) resolve();
        });
        setTimeout(resolve, 25000);
      });
      call.stop();
      return { lines, firstAudioMs };
    })()`)) as { lines: { role: string; text: string }[]; firstAudioMs: number | null };
    const lines = result.lines;
    console.log(
      `web call: first agent audio played ${Math.round(result.firstAudioMs ?? NaN)} ms after the start (Chromium)`,
    );
    assert.ok(result.firstAudioMs !== null, 'the agent was heard in the page');
    await page.close();
    assert.equal(lines[0]?.role, 'assistant');
    assert.ok(lines[0]!.text.length < 120, `the greeting was cut where the caller spoke: ${lines[0]!.text}`);
    assert.ok(lines[0]!.text.startsWith('Thank you for calling the clinic'));
    assert.deepEqual(
      lines.slice(1).map((l) => l.role),
      ['user', 'assistant'],
    );
    assert.equal(lines[1]!.text, 'I would like to book a table for two.');
  });

  it('a browser call carries Opus both ways: negotiated, heard by the server, recorded, played in the page', async () => {
    // An inbound number's agent, which records its calls.
    const bought = await t.request('POST', '/v1/inbound/purchase', {
      area_code: '415',
      prompt: 'You take table bookings for Luigi’s restaurant.',
    });
    const number = String(bought.body.phone_number);
    const updated = await t.request('POST', `/v1/inbound/${encodeURIComponent(number)}`, { record: true });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    const page = await newPage();
    await trackPeers(page);
    await page.goto(`${origin}/healthz`);
    const result = (await page.evaluate(`(async () => {
      const { startWebCall } = await import('${origin}/client/openline.js');
      const call = await startWebCall({ apiKey: '${t.key}', phoneNumber: '${number}' });
      let callId = null;
      call.on('started', (event) => (callId = event.callId));
      const lines = [];
      // The caller speaks (the fake microphone), the agent answers.
      await new Promise((resolve) => {
        call.on('transcript', (line) => {
          lines.push(line);
          if (line.role === 'assistant' && lines.some((l) => l.role === 'user')) resolve();
        });
        setTimeout(resolve, 30000);
      });
      // What each direction's RTP carries, as the browser's WebRTC reports it.
      const stats = {};
      for (const pc of window.__openlinePeers) {
        const reports = [...(await pc.getStats()).values()];
        for (const report of reports) {
          if ((report.type !== 'inbound-rtp' && report.type !== 'outbound-rtp') || report.kind !== 'audio') continue;
          const codec = reports.find((r) => r.id === report.codecId);
          stats[report.type] = {
            mimeType: codec?.mimeType,
            clockRate: codec?.clockRate,
            sdpFmtpLine: codec?.sdpFmtpLine,
            packets: report.packetsReceived ?? report.packetsSent,
            energy: report.totalAudioEnergy,
          };
        }
      }
      call.stop();
      return { callId, lines, stats };
    })()`)) as {
      callId: string | null;
      lines: { role: string; text: string }[];
      stats: Record<
        'inbound-rtp' | 'outbound-rtp',
        { mimeType: string; clockRate: number; sdpFmtpLine?: string; packets: number; energy?: number }
      >;
    };
    await page.close();
    const { stats } = result;
    // Both directions are Opus at 48 kHz, with the answer's format parameters.
    assert.equal(stats['outbound-rtp']?.mimeType, 'audio/opus', JSON.stringify(stats));
    assert.equal(stats['inbound-rtp']?.mimeType, 'audio/opus', JSON.stringify(stats));
    assert.equal(stats['inbound-rtp'].clockRate, 48000);
    // What the page sends follows the answer's parameters: no in-band FEC the server cannot use.
    assert.equal(stats['outbound-rtp'].sdpFmtpLine, 'minptime=10', JSON.stringify(stats));
    // The agent's voice reached the page and played; the page's microphone reached the server.
    assert.ok(stats['inbound-rtp'].packets > 50, `agent packets in the page: ${stats['inbound-rtp'].packets}`);
    assert.ok((stats['inbound-rtp'].energy ?? 0) > 0, 'the agent is heard, not silence');
    assert.ok(stats['outbound-rtp'].packets > 50, `microphone packets sent: ${stats['outbound-rtp'].packets}`);
    // The server heard the caller through Opus (its recogniser hears voiced frames only), and answered.
    const heard = result.lines.find((line) => line.role === 'user');
    assert.match(String(heard?.text), /^I would like to book a table for two\./, JSON.stringify(result.lines));
    assert.equal(result.lines.at(-1)?.role, 'assistant');

    // The recording has both sides: the caller (decoded from Opus) left, the agent right.
    const call = await waitForCall(t, result.callId!);
    assert.equal(call.to, number);
    const recording = await t.app.inject({
      method: 'GET',
      url: `/v1/calls/${result.callId!}/recording`,
      headers: { authorization: t.key },
    });
    assert.equal(recording.statusCode, 200);
    const wav = parseWav(recording.rawPayload);
    assert.equal(wav.channels, 2);
    const side = (channel: number) => wav.samples.filter((_, i) => i % 2 === channel);
    const loudest = (pcm: Int16Array) => {
      let best = 0;
      for (let at = 0; at + 160 <= pcm.length; at += 160) best = Math.max(best, rms(pcm.subarray(at, at + 160)));
      return best;
    };
    const caller = side(0);
    const agent = side(1);
    assert.ok(loudest(caller) > 1000, `the caller's loudest 20 ms in the recording: ${loudest(caller).toFixed(0)}`);
    assert.ok(loudest(agent) > 1000, `the agent's loudest 20 ms in the recording: ${loudest(agent).toFixed(0)}`);
    assert.deepEqual(pageErrors, []);
  });

  it('the dashboard talks to an agent with "Talk to this agent"', async () => {
    const page = await newPage();
    await trackPeers(page);
    await page.goto(`${origin}/agents`);
    await page.getByLabel('API key').fill(t.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Talk to this agent' }).first().click();
    const panel = page.getByRole('region', { name: 'Web call' });
    // The panel names what it talks to as the call's page does: the agent, by its prompt's start.
    await panel.getByRole('heading', { name: /^Talking to agent “.+”$/ }).waitFor();
    // The keyboard's focus moves into the panel (it opens above the list): Tab reaches its buttons.
    const focused = () => page.evaluate<string>('document.activeElement?.textContent ?? ""');
    assert.match(await focused(), /^Talking to agent/);
    await panel.getByRole('button', { name: 'Mute' }).waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await focused(), 'Mute');
    await panel.getByText('Luigi’s, how can I help?').waitFor({ timeout: 15_000 });
    await panel.getByText('I would like to book a table for two.').waitFor({ timeout: 20_000 });
    assert.ok((await inboundAudio(page)).packets > 0);

    // Meanwhile a colleague listens in from the call's page: both sides, live.
    const callPath = await panel.getByRole('link', { name: 'Call details' }).getAttribute('href');
    const listener = await newPage();
    await listener.goto(`${origin}${callPath}`);
    await listener.getByLabel('API key').fill(t.key);
    await listener.getByRole('button', { name: 'Sign in' }).click();
    // The page names the agent the browser talks to, not its id.
    await listener.getByRole('heading', { name: /^Web call with agent “/ }).waitFor();
    assert.match(await listener.title(), /^Web call with agent “.+” · Openline$/);
    await listener.getByRole('button', { name: 'Listen live' }).click();
    // The button's name stays put while the time heard runs on beside it.
    await listener.getByText(/Listening · [2-9] s/).waitFor({ timeout: 10_000 });
    await listener.getByRole('button', { name: 'Stop listening', exact: true }).waitFor();
    assert.equal(t.services.listening.listenerCount, 1);

    await page.screenshot({ path: path.join(dir, 'web-call.png') });
    if (process.env.OPENLINE_WEB_CALL_SCREENSHOT)
      fs.copyFileSync(path.join(dir, 'web-call.png'), process.env.OPENLINE_WEB_CALL_SCREENSHOT);
    await panel.getByRole('button', { name: 'Hang up' }).focus();
    await page.keyboard.press('Enter');
    await panel.getByText('Call ended').waitFor();
    // The focus goes to Close, in the place of the buttons that are gone.
    assert.equal(await focused(), 'Close');
    // The call is over: the listener's socket closed, its button is back.
    await listener.getByRole('button', { name: 'Listen live' }).or(listener.getByText('Stop call')).first().waitFor();
    assert.equal(t.services.listening.listenerCount, 0);
    await listener.close();
    await page.close();
    assert.deepEqual(pageErrors, []);
  });
});
