import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { announce } from '../../src/carriers/webrtc/peer.js';
import { loadConfig } from '../../src/config.js';
import { createTestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';
import { RtpHeader, RtpPacket, type RTCPeerConnection } from 'werift';
import { browserPeer } from '../../src/testing/webrtc-browser.js';
import { waitForCall } from '../../src/testing/harness.js';
import { MULAW_SILENCE, decodeMulaw, rms } from '../../src/media/audio.js';
import { FakeDeepgram } from '../../src/testing/fake-deepgram.js';
import type { WebCallTokenStore } from '../../src/store/web-call-tokens.js';

/** A token's grant for a call that starts at once, or why not. */
async function redeem(tokens: WebCallTokenStore, token: string, presented: { origin?: string; agentId?: string } = {}) {
  const result = await tokens.spend(token, presented, (grant) => Promise.resolve(grant));
  return 'started' in result ? result.started : result;
}

/** Two neighbouring UDP ports, bound on every address. */
async function takenPorts(): Promise<dgram.Socket[]> {
  const bind = (port: number) =>
    new Promise<dgram.Socket | undefined>((resolve) => {
      const socket = dgram.createSocket('udp4');
      socket.once('error', () => resolve(undefined));
      socket.bind(port, '0.0.0.0', () => resolve(socket));
    });
  for (;;) {
    const first = (await bind(0))!;
    const second = await bind(first.address().port + 1);
    if (second) return [first, second];
    first.close();
  }
}

describe('web calls: WebRTC settings and tokens', () => {
  it('announces every host candidate again with the public address, same port', () => {
    const sdp = [
      'v=0',
      'a=candidate:1a 1 udp 2116026367 10.0.0.5 40001 typ host generation 0',
      'a=candidate:2b 1 udp 1677729535 203.0.113.9 40001 typ srflx raddr 10.0.0.5 rport 40001',
      '',
    ].join('\r\n');
    const out = announce(sdp, '198.51.100.7').split('\r\n');
    assert.deepEqual(out.slice(1, 4), [
      'a=candidate:1a 1 udp 2116026367 10.0.0.5 40001 typ host generation 0',
      'a=candidate:1a1 1 udp 2116026366 198.51.100.7 40001 typ host generation 0',
      'a=candidate:2b 1 udp 1677729535 203.0.113.9 40001 typ srflx raddr 10.0.0.5 rport 40001',
    ]);
  });

  it('reads the WebRTC variables and names the one that is wrong', () => {
    const config = loadConfig({
      OPENLINE_WEBRTC_ICE_SERVERS: 'stun:stun.example.com:3478, turn:turn.example.com:3478?transport=udp',
      OPENLINE_WEBRTC_TURN_USERNAME: 'u',
      OPENLINE_WEBRTC_TURN_PASSWORD: 'p',
      OPENLINE_WEBRTC_PORTS: '40000-40100',
      OPENLINE_WEBRTC_PUBLIC_ADDRESS: '198.51.100.7',
    });
    assert.deepEqual(config.webrtc, {
      iceServers: [
        { urls: 'stun:stun.example.com:3478' },
        { urls: 'turn:turn.example.com:3478?transport=udp', username: 'u', credential: 'p' },
      ],
      ports: { min: 40000, max: 40100 },
      publicAddress: '198.51.100.7',
    });
    assert.deepEqual(loadConfig({}).webrtc, { iceServers: [] });
    assert.throws(() => loadConfig({ OPENLINE_WEBRTC_ICE_SERVERS: 'http://x' }), /OPENLINE_WEBRTC_ICE_SERVERS/);
    assert.throws(() => loadConfig({ OPENLINE_WEBRTC_PORTS: '9-8' }), /OPENLINE_WEBRTC_PORTS/);
    assert.throws(
      () => loadConfig({ OPENLINE_WEBRTC_PUBLIC_ADDRESS: 'example.com' }),
      /OPENLINE_WEBRTC_PUBLIC_ADDRESS/,
    );
  });

  it('a token is good once, for ten minutes, and only its hash is stored', async () => {
    let now = new Date('2026-11-25T10:00:00Z');
    const clock = new ScaledClock(1);
    clock.now = () => now;
    const t = await createTestApp({ clock });
    try {
      const agent = await t.request('POST', '/v1/agents', { prompt: 'Hi' });
      const agentId = (agent.body.agent as { agent_id: string }).agent_id;
      const tokens = t.services.webCallTokens;
      const { token: first } = await tokens.issue('acc', agentId, { name: 'Ada' });
      const rows = await t.services.storage.db.selectFrom('web_call_tokens').selectAll().execute();
      assert.equal(rows.length, 1);
      assert.ok(!JSON.stringify(rows).includes(first), 'the token itself is not stored');
      assert.deepEqual(await redeem(tokens, first), { accountId: 'acc', agentId, requestData: { name: 'Ada' } });
      assert.deepEqual(await redeem(tokens, first), { refused: 'unknown' }, 'used up');

      const { token: late } = await tokens.issue('acc', agentId, null);
      now = new Date(now.getTime() + 10 * 60_000 + 1);
      assert.deepEqual(await redeem(tokens, late), { refused: 'unknown' }, 'expired');

      // Through the API: the agent must be the account's own.
      const auth = await t.request('POST', `/v1/agents/${agentId}/authorize`);
      assert.equal(auth.status, 200);
      assert.match(String(auth.body.token), /^wct_/);
      assert.equal((await t.request('POST', '/v1/agents/nope/authorize', {})).status, 404);
      const badData = await t.request('POST', `/v1/agents/${agentId}/authorize`, { request_data: [1] });
      assert.equal(badData.status, 400);
      assert.match(JSON.stringify(badData.body), /request_data must be an object/);
      // Signalling needs a key or a token, and exactly one target with a key.
      assert.equal(
        (await t.request('POST', '/v1/web-calls', { sdp: 'v=0', agent_id: agentId }, { as: null })).status,
        401,
      );
      const both = await t.request('POST', '/v1/web-calls', { sdp: 'v=0', agent_id: agentId, pathway_id: 'x' });
      assert.equal(both.status, 400);
      assert.match(JSON.stringify(both.body), /exactly one of agent_id, phone_number or pathway_id/);
      const noAudio = await t.request('POST', '/v1/web-calls', {
        sdp: 'v=0\r\nm=video 9 UDP 96\r\n',
        agent_id: agentId,
      });
      assert.equal(noAudio.status, 400);
      assert.match(JSON.stringify(noAudio.body), /sdp offers no audio/);
      const missing = await t.request('POST', '/v1/web-calls', { agent_id: agentId });
      assert.equal(missing.status, 400);
      assert.match(JSON.stringify(missing.body), /sdp/);
      // Preflight from any origin.
      const preflight = await t.app.inject({
        method: 'OPTIONS',
        url: '/v1/web-calls',
        headers: { origin: 'https://shop.example' },
      });
      assert.equal(preflight.statusCode, 204);
      assert.equal(preflight.headers['access-control-allow-origin'], '*');
      // Every answer a page on another origin gets can be read by it, refusals of the body's
      // shape and type included: otherwise its fetch fails without the reason.
      const fromPage = (payload: string, contentType = 'application/json') =>
        t.app.inject({
          method: 'POST',
          url: '/v1/web-calls',
          headers: { origin: 'https://shop.example', 'content-type': contentType },
          payload,
        });
      for (const [response, status, reason] of [
        [await fromPage(JSON.stringify({ token: 'wct_x', sdp: 'v=0', request_data: 'Ada' })), 400, /request_data/],
        [await fromPage(JSON.stringify({ token: 'wct_x', sdp: '' })), 400, /sdp/],
        [await fromPage(JSON.stringify({ token: 'wct_x', sdp: 'x'.repeat(20_001) })), 400, /sdp/],
        [await fromPage('{"token":'), 400, /JSON/i],
        [await fromPage('sdp=v%3D0', 'application/x-www-form-urlencoded'), 415, /json/i],
        [await fromPage(JSON.stringify({ token: 'wct_x', sdp: 'v=0' })), 401, /token/],
      ] as const) {
        assert.equal(response.statusCode, status, response.body);
        assert.match(response.body, reason);
        assert.equal(response.headers['access-control-allow-origin'], '*', `${status}: ${response.body}`);
      }
    } finally {
      await t.close();
    }
  });

  it('a single-use token whose call does not start (an offer it cannot answer) is not used up', async () => {
    const t = await createTestApp();
    try {
      const agent = await t.request('POST', '/v1/agents', { prompt: 'Hi' });
      const agentId = (agent.body.agent as { agent_id: string }).agent_id;
      const token = String((await t.request('POST', `/v1/agents/${agentId}/authorize`)).body.token);
      const tryCall = async () => (await t.request('POST', '/v1/web-calls', { token, sdp: 'v=0' }, { as: null })).body;
      for (let i = 0; i < 2; i++) assert.match(JSON.stringify(await tryCall()), /sdp offers no audio/, `try ${i + 1}`);
      assert.equal((await t.services.storage.db.selectFrom('web_call_tokens').selectAll().execute()).length, 1);
      // Taken by the call it starts: then it is used up.
      const grant = await t.services.webCallTokens.spend(token, {}, () => Promise.resolve('started'));
      assert.deepEqual(grant, { started: 'started' });
      assert.match(JSON.stringify(await tryCall()), /already used/);
    } finally {
      await t.close();
    }
  });

  it('a reusable token starts calls until it expires, at its rate, from its origins only; revoke ends it', async () => {
    let now = new Date('2026-11-25T10:00:00Z');
    const clock = new ScaledClock(1);
    clock.now = () => now;
    const t = await createTestApp({ clock });
    try {
      const agent = await t.request('POST', '/v1/agents', { prompt: 'Hi' });
      const agentId = (agent.body.agent as { agent_id: string }).agent_id;
      const auth = await t.request('POST', `/v1/agents/${agentId}/authorize`, {
        reusable: true,
        expires_in: 3600,
        calls_per_minute: 2,
        allowed_origins: ['https://shop.example/', 'http://localhost:3000'],
        request_data: { name: 'Ada' },
      });
      assert.equal(auth.status, 200, JSON.stringify(auth.body));
      assert.equal(auth.body.expires_at, '2026-11-25T11:00:00.000Z');
      const token = auth.body.token as string;
      const tokens = t.services.webCallTokens;
      // Every visitor of the page (a reload, a second person) calls with the same token.
      const grant = await redeem(tokens, token, { origin: 'https://shop.example' });
      assert.ok(!('refused' in grant), JSON.stringify(grant));
      assert.equal(grant.agentId, agentId);
      assert.deepEqual(grant.requestData, { name: 'Ada' });
      assert.deepEqual(await redeem(tokens, token, { origin: 'http://localhost:3000' }), grant);
      // Two a minute: the third waits for the window to pass.
      const over = await redeem(tokens, token, { origin: 'https://shop.example' });
      assert.equal('refused' in over && over.refused, 'rate');
      now = new Date(now.getTime() + 61_000);
      assert.deepEqual(await redeem(tokens, token, { origin: 'https://shop.example' }), grant);
      // Another site's page, or no page at all, cannot use it.
      assert.deepEqual(await redeem(tokens, token, { origin: 'https://evil.example' }), { refused: 'origin' });
      assert.deepEqual(await redeem(tokens, token), { refused: 'origin' });

      // Through signalling: 403 from another origin, 429 with Retry-After over the rate.
      const post = (origin: string) =>
        t.app.inject({
          method: 'POST',
          url: '/v1/web-calls',
          headers: { origin, 'content-type': 'application/json' },
          payload: JSON.stringify({ token, sdp: 'v=0\r\n' }),
        });
      const foreign = await post('https://evil.example');
      assert.equal(foreign.statusCode, 403, foreign.body);
      assert.match(foreign.body, /allowed_origins/);
      assert.equal((await post('https://shop.example')).statusCode, 400, 'the rate’s second call (a bad offer)');
      const limited = await post('https://shop.example');
      assert.equal(limited.statusCode, 429, limited.body);
      assert.match(limited.body, /this minute/);
      assert.ok(Number(limited.headers['retry-after']) >= 1);

      // It expires as asked; a new one is revoked with every other token of the agent.
      now = new Date(now.getTime() + 3600_000);
      assert.deepEqual(await redeem(tokens, token, { origin: 'https://shop.example' }), { refused: 'unknown' });
      const next = await t.request('POST', `/v1/agents/${agentId}/authorize`, { reusable: true });
      assert.equal(next.body.expires_at, new Date(now.getTime() + 600_000).toISOString(), 'ten minutes by default');
      const revoked = await t.request('POST', `/v1/agents/${agentId}/authorize/revoke`);
      assert.deepEqual(revoked.body, { status: 'success', revoked: 1 });
      assert.deepEqual(await redeem(tokens, next.body.token as string), { refused: 'unknown' });
      assert.equal((await t.request('POST', '/v1/agents/nope/authorize/revoke')).status, 404);

      // Bad values are 400s naming the field.
      for (const [body, reason] of [
        [{ expires_in: 10 }, /expires_in/],
        [{ expires_in: 91 * 24 * 3600 }, /expires_in/],
        [{ reusable: true, calls_per_minute: 0 }, /calls_per_minute/],
        [{ calls_per_minute: 5 }, /calls_per_minute applies to reusable tokens only/],
        [{ allowed_origins: ['shop.example'] }, /allowed_origins\[0\] must be an origin/],
        [{ allowed_origins: ['https://shop.example/page'] }, /allowed_origins\[0\] must be an origin/],
        [{ reusable: 'maybe' }, /reusable/],
      ] as const) {
        const refused = await t.request('POST', `/v1/agents/${agentId}/authorize`, body);
        assert.equal(refused.status, 400, JSON.stringify(body));
        assert.match(JSON.stringify(refused.body), reason);
      }
    } finally {
      await t.close();
    }
  });

  it('a single-use token refused (another origin, another agent) is not used up by the refusal', async () => {
    const t = await createTestApp();
    try {
      const agent = await t.request('POST', '/v1/agents', { prompt: 'Hi' });
      const agentId = (agent.body.agent as { agent_id: string }).agent_id;
      const auth = await t.request('POST', `/v1/agents/${agentId}/authorize`, {
        allowed_origins: ['https://shop.example'],
      });
      const token = auth.body.token as string;
      const tokens = t.services.webCallTokens;
      // A copy of the page elsewhere cannot spend the shop's visitor's token.
      assert.deepEqual(await redeem(tokens, token, { origin: 'https://evil.example' }), { refused: 'origin' });
      assert.deepEqual(await redeem(tokens, token), { refused: 'origin' });
      const foreign = await t.app.inject({
        method: 'POST',
        url: '/v1/web-calls',
        headers: { origin: 'https://evil.example', 'content-type': 'application/json' },
        payload: JSON.stringify({ token, sdp: 'v=0\r\n' }),
      });
      assert.equal(foreign.statusCode, 403, foreign.body);
      // Nor a socket naming another agent than the token's.
      assert.deepEqual(await redeem(tokens, token, { origin: 'https://shop.example', agentId: 'other' }), {
        refused: 'agent',
      });
      // The shop's page still has its one call, and only one.
      const grant = await redeem(tokens, token, { origin: 'https://shop.example', agentId });
      assert.ok(!('refused' in grant), JSON.stringify(grant));
      assert.equal(grant.agentId, agentId);
      assert.deepEqual(await redeem(tokens, token, { origin: 'https://shop.example' }), { refused: 'unknown' });
    } finally {
      await t.close();
    }
  });

  it('a web call counts against the account’s concurrent-call limit, and shows as a web call', async () => {
    const t = await createTestApp({ env: { OPENLINE_MAX_CONCURRENT_CALLS: '1' } });
    const peers: RTCPeerConnection[] = [];
    try {
      await t.services.startWorkers();
      const agent = await t.request('POST', '/v1/agents', { prompt: 'Hi', first_sentence: 'Hello there.' });
      const agentId = (agent.body.agent as { agent_id: string }).agent_id;
      const first = await browserPeer();
      peers.push(first.pc);
      const started = await t.request('POST', '/v1/web-calls', { agent_id: agentId, sdp: first.sdp });
      assert.equal(started.status, 200, JSON.stringify(started.body));
      assert.match(String(started.body.sdp), /^a=candidate:/m);
      assert.match(String(started.body.sdp), /^a=rtpmap:\d+ PCMU\/8000/m);
      const callId = started.body.call_id as string;
      const live = await t.request('GET', `/v1/calls/${callId}`);
      assert.equal(live.body.carrier, 'web');
      assert.equal(live.body.inbound, true);
      assert.equal(live.body.to, agentId);
      assert.equal(live.body.from, null);

      // The account's one place is taken: the second web call is refused, and says why.
      const second = await browserPeer();
      peers.push(second.pc);
      const refused = await t.request('POST', '/v1/web-calls', { agent_id: agentId, sdp: second.sdp });
      assert.equal(refused.status, 429);
      assert.match(String(refused.body.message), /concurrent calls/);
      const calls = (await t.request('GET', '/v1/calls?inbound=true')).body.calls as Record<string, unknown>[];
      const failed = calls.find((c) => c.call_id !== callId);
      assert.equal(failed?.status, 'queue_error');
    } finally {
      for (const pc of peers) await pc.close();
      await t.close();
    }
  });

  it("a page's request_data adds variables to the token's but cannot change them", async () => {
    const t = await createTestApp();
    const peers: RTCPeerConnection[] = [];
    try {
      await t.services.startWorkers();
      const agent = await t.request('POST', '/v1/agents', { prompt: 'Hi {{name}}', first_sentence: 'Hello there.' });
      const agentId = (agent.body.agent as { agent_id: string }).agent_id;
      const auth = await t.request('POST', `/v1/agents/${agentId}/authorize`, {
        reusable: true,
        request_data: { name: 'Ada', tier: 'basic' },
      });
      const browser = await browserPeer();
      peers.push(browser.pc);
      const started = await t.app.inject({
        method: 'POST',
        url: '/v1/web-calls',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({
          token: auth.body.token,
          sdp: browser.sdp,
          request_data: { tier: 'gold', page: '/pricing' },
        }),
      });
      assert.equal(started.statusCode, 200, started.body);
      const callId = (JSON.parse(started.body) as { call_id: string }).call_id;
      const call = await t.request('GET', `/v1/calls/${callId}`);
      assert.deepEqual((call.body.request_data as { request_data: unknown }).request_data, {
        name: 'Ada',
        tier: 'basic',
        page: '/pricing',
      });
    } finally {
      for (const pc of peers) await pc.close();
      await t.close();
    }
  });

  it('with every port of OPENLINE_WEBRTC_PORTS taken, an offer is refused with 503 and no call is left talking to nobody', async () => {
    // The range's two ports are taken on every address: WebRTC can bind none.
    const taken = await takenPorts();
    const port = taken[0]!.address().port;
    const t = await createTestApp({ env: { OPENLINE_WEBRTC_PORTS: `${port}-${port + 1}` } });
    const peers: RTCPeerConnection[] = [];
    try {
      await t.services.startWorkers();
      const agent = await t.request('POST', '/v1/agents', { prompt: 'Hi', first_sentence: 'Hello there.' });
      const agentId = (agent.body.agent as { agent_id: string }).agent_id;
      const browser = await browserPeer();
      peers.push(browser.pc);
      const refused = await t.request('POST', '/v1/web-calls', { agent_id: agentId, sdp: browser.sdp });
      assert.equal(refused.status, 503, JSON.stringify(refused.body));
      assert.match(String(refused.body.message), /OPENLINE_WEBRTC_PORTS/);
      const calls = (await t.request('GET', '/v1/calls?inbound=true')).body.calls as unknown[];
      assert.deepEqual(calls, [], 'no call was made for an answer the browser could not reach');
    } finally {
      for (const pc of peers) await pc.close();
      await t.close();
      for (const socket of taken) socket.close();
    }
  });

  it('the agent starts speaking once the browser is connected: a browser slow to connect hears the whole greeting', async () => {
    const dg = await FakeDeepgram.start({ apiKey: 'dg-web' });
    const t = await createTestApp({ env: { DEEPGRAM_API_KEY: 'dg-web', OPENLINE_DEEPGRAM_URL: dg.url } });
    const peers: RTCPeerConnection[] = [];
    try {
      await t.services.startWorkers();
      const agent = await t.request('POST', '/v1/agents', {
        prompt: 'Hi',
        first_sentence: 'Hello there, thank you for calling the bakery.',
      });
      const agentId = (agent.body.agent as { agent_id: string }).agent_id;
      /** The greeting's voiced frames a browser receives when it applies the answer `delayMs` late. */
      const greeting = async (delayMs: number) => {
        const browser = await browserPeer();
        peers.push(browser.pc);
        let voiced = 0;
        let greeted = false;
        browser.pc.onTrack.subscribe((remote) =>
          remote.onReceiveRtp.subscribe((rtp) => {
            if (!greeted && rms(decodeMulaw(rtp.payload)) > 300) voiced++;
          }),
        );
        browser.channel.onMessage.subscribe((data) => {
          const message = JSON.parse(String(data)) as { type: string; role?: string };
          if (message.type === 'transcript' && message.role === 'assistant') greeted = true;
        });
        const started = await t.request('POST', '/v1/web-calls', { agent_id: agentId, sdp: browser.sdp });
        assert.equal(started.status, 200, JSON.stringify(started.body));
        // A slow answer (a long way, a TURN relay): ICE and DTLS start that much later.
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        await browser.pc.setRemoteDescription({ type: 'answer', sdp: String(started.body.sdp) });
        const silent = Buffer.alloc(160, MULAW_SILENCE);
        for (let i = 0; i < 400 && !greeted; i++) {
          browser.track.writeRtp(
            new RtpPacket(new RtpHeader({ payloadType: 0, sequenceNumber: i, timestamp: i * 160 }), silent),
          );
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        assert.ok(greeted, 'the greeting was said');
        browser.channel.send(JSON.stringify({ type: 'hangup' }));
        await waitForCall(t, String(started.body.call_id));
        return voiced;
      };
      const prompt = await greeting(0);
      const slow = await greeting(1000);
      assert.ok(prompt > 50, `the greeting was heard: ${prompt} voiced frames`);
      // Nothing of it was sent before the browser could receive it.
      assert.ok(slow >= prompt - 5, `a browser connecting 1 s late heard ${slow} voiced frames of ${prompt}`);

      // A browser that never connects (UDP blocked): the call ends as its connection timed out,
      // with nothing said to nobody, as a call_error saying why.
      const lost = await browserPeer();
      peers.push(lost.pc);
      const never = await t.request('POST', '/v1/web-calls', { agent_id: agentId, sdp: lost.sdp });
      const record = await waitForCall(t, String(never.body.call_id));
      assert.equal(record.concatenated_transcript, '');
      assert.equal(record.status, 'call_error');
      assert.match(String(record.error_message), /never reached the server.*OPENLINE_WEBRTC_PORTS/);
    } finally {
      for (const pc of peers) await pc.close();
      await t.close();
      await dg.close();
    }
  });

  it('talks to one of the account’s inbound numbers, or a pathway, and to nobody else’s', async () => {
    const t = await createTestApp();
    const peers: RTCPeerConnection[] = [];
    const offer = async () => {
      const made = await browserPeer();
      peers.push(made.pc);
      return made.sdp;
    };
    try {
      await t.services.startWorkers();
      const bought = await t.request('POST', '/v1/inbound/purchase', { area_code: '415', prompt: 'Take orders.' });
      const number = String(bought.body.phone_number);
      const byNumber = await t.request('POST', '/v1/web-calls', { phone_number: number, sdp: await offer() });
      assert.equal(byNumber.status, 200, JSON.stringify(byNumber.body));
      const numberCall = await t.request('GET', `/v1/calls/${String(byNumber.body.call_id)}`);
      assert.equal(numberCall.body.to, number);
      assert.equal((numberCall.body.request_data as { task: string }).task, 'Take orders.');

      const pathway = await t.request('POST', '/v1/pathway/create', { name: 'Orders', description: 'x' });
      const pathwayId = String(pathway.body.pathway_id);
      const byPathway = await t.request('POST', '/v1/web-calls', { pathway_id: pathwayId, sdp: await offer() });
      assert.equal(byPathway.status, 200, JSON.stringify(byPathway.body));
      const pathwayCall = await t.request('GET', `/v1/calls/${String(byPathway.body.call_id)}`);
      assert.equal((pathwayCall.body.request_data as { pathway_id: string }).pathway_id, pathwayId);

      // Another account's number and pathway are not found for this one.
      for (const body of [{ phone_number: number }, { pathway_id: pathwayId }]) {
        const foreign = await t.request('POST', '/v1/web-calls', { ...body, sdp: await offer() }, { as: t.otherKey });
        assert.equal(foreign.status, 404, JSON.stringify(body));
      }
    } finally {
      for (const pc of peers) await pc.close();
      await t.close();
    }
  });
});
