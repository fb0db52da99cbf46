import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { WebSocket } from 'ws';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { FakeDeepgram } from '../../src/testing/fake-deepgram.js';
import { waitFor } from '../../src/testing/wait.js';
import { parseWav } from '../../src/media/wav.js';
import { resample, rms } from '../../src/media/audio.js';

type Json = Record<string, unknown>;

/** A sentence spoken by espeak-ng, at `rate` Hz. */
function spoken(text: string, rate: number): Int16Array {
  const result = spawnSync('espeak-ng', ['-v', 'en-us', '-s', '150', '--stdout', text]);
  assert.equal(result.status, 0, 'espeak-ng must be installed');
  const { samples, sampleRate } = parseWav(result.stdout);
  return resample(samples, sampleRate, rate);
}

/** What a page of the hosted web-agent SDKs sees on its socket. */
interface Page {
  socket: WebSocket;
  texts: Json[];
  /** Bare words: `clear` (drop what has not played), `pong`. */
  words: string[];
  /** The agent's audio, as 16-bit PCM samples at the page's rate. */
  audio: Int16Array[];
  closed: Promise<{ code: number; reason: string }>;
}

function connect(origin: string, query: string): Promise<Page> {
  const socket = new WebSocket(`${origin.replace('http', 'ws')}/ws/connect/blandshared?${query}`);
  socket.binaryType = 'nodebuffer';
  const page: Page = {
    socket,
    texts: [],
    words: [],
    audio: [],
    closed: new Promise((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: String(reason) }))),
  };
  socket.on('message', (data: Buffer, isBinary) => {
    if (isBinary) page.audio.push(new Int16Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length)));
    else if (String(data).startsWith('{')) page.texts.push(JSON.parse(String(data)) as Json);
    else page.words.push(String(data));
  });
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(page));
    socket.once('error', reject);
  });
}

/** Sends PCM as a microphone does: pieces of `chunk` samples, in real time. */
async function speak(page: Page, pcm: Int16Array, rate: number, chunk: number): Promise<void> {
  for (let at = 0; at < pcm.length && page.socket.readyState === WebSocket.OPEN; at += chunk) {
    const piece = pcm.slice(at, at + chunk);
    page.socket.send(Buffer.from(piece.buffer));
    await new Promise((resolve) => setTimeout(resolve, (piece.length / rate) * 1000));
  }
}

/**
 * Web calls over the hosted API's web-agent websocket (`bland-client-js-sdk`'s BlandWebClient and
 * its successors, `customEndpoint` set to Openline): a token from authorize, 16-bit PCM at the
 * page's rate both ways, the SDKs' `callID` and `update` messages; the same call as any web call.
 */
describe('web calls: the hosted web-agent SDKs’ websocket', () => {
  let t: TestApp;
  let dg: FakeDeepgram;
  let origin: string;
  let agentId: string;

  before(async () => {
    dg = await FakeDeepgram.start({ apiKey: 'dg-socket' });
    t = await createTestApp({ env: { DEEPGRAM_API_KEY: 'dg-socket', OPENLINE_DEEPGRAM_URL: dg.url } });
    await t.services.startWorkers();
    origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const agent = await t.request('POST', '/v1/agents', {
      prompt: 'You take table bookings for {{name}} at Luigi’s.',
      first_sentence: 'Luigi’s, how can I help?',
      max_duration: 2,
    });
    agentId = (agent.body.agent as { agent_id: string }).agent_id;
  });
  after(async () => {
    await t?.close();
    await dg?.close();
  });

  const token = async (agent = agentId, key?: string) => {
    const auth = await t.request(
      'POST',
      `/v1/agents/${agent}/authorize`,
      { request_data: { name: 'Ada' } },
      {
        ...(key && { as: key }),
      },
    );
    assert.equal(auth.status, 200, JSON.stringify(auth.body));
    return auth.body.token as string;
  };

  for (const { rate, chunk, query } of [
    { rate: 44_100, chunk: 2048, query: '' },
    { rate: 24_000, chunk: 128, query: '&sampleRate=24000' },
  ])
    it(`talks with a page at ${rate} Hz sending ${chunk}-sample pieces`, async () => {
      dg.script('I would like to book a table for two.');
      const page = await connect(origin, `agent=${agentId}&token=${await token()}&background_noise=true${query}`);
      const silence = (ms: number) => new Int16Array(Math.round((rate * ms) / 1000));
      // The page's microphone runs from the start: quiet until the agent has greeted.
      const greeted = () => page.texts.some((m) => m.event === 'update' && (m.payload as Json).type === 'assistant');
      while (!greeted() && page.socket.readyState === WebSocket.OPEN) await speak(page, silence(100), rate, chunk);
      await speak(page, silence(300), rate, chunk);
      await speak(page, spoken('I would like to book a table for two', rate), rate, chunk);
      const answered = () =>
        page.texts.filter((m) => m.event === 'update' && (m.payload as Json).type === 'assistant').length >= 2;
      for (let i = 0; i < 100 && !answered(); i++) await speak(page, silence(100), rate, chunk);

      const first = page.texts[0]!;
      assert.equal(first.type, 'callID');
      const callId = first.payload as string;
      const updates = page.texts
        .filter((m) => m.event === 'update')
        .map((m) => `${(m.payload as Json).type as string}: ${(m.payload as Json).text as string}`);
      assert.equal(updates[0], 'assistant: Luigi’s, how can I help?');
      assert.ok(updates.includes('human: I would like to book a table for two.'), updates.join('\n'));
      assert.ok(answered(), updates.join('\n'));

      // The agent's voice came at the page's rate: at least as long as its greeting takes to say.
      const samples = page.audio.reduce((n, a) => n + a.length, 0);
      assert.ok(samples > rate, `${samples} samples of the agent's audio`);
      const loud = page.audio.filter((a) => a.length > 0 && rms(a) > 300).length;
      assert.ok(loud > 10, `voiced pieces: ${loud}`);

      // The page hangs up by closing its socket: the call ends as the caller's hang-up.
      page.socket.close();
      const call = await waitForCall(t, callId);
      assert.equal(call.carrier, 'web');
      assert.equal(call.inbound, true);
      assert.equal(call.to, agentId);
      assert.equal(call.call_ended_by, 'USER');
      assert.equal(((call.request_data as Json).request_data as Json).name, 'Ada', 'the token’s request_data');
      const lines = (call.transcripts as Json[]).map((l) => `${l.user as string}: ${l.text as string}`);
      assert.ok(lines.includes('user: I would like to book a table for two.'), lines.join('\n'));
    });

  it('the call ending closes the page’s socket', async () => {
    const page = await connect(origin, `agent=${agentId}&token=${await token()}`);
    await waitFor('the call id', () => page.texts.find((m) => m.type === 'callID'));
    const callId = page.texts.find((m) => m.type === 'callID')!.payload as string;
    page.socket.send('ping');
    await waitFor('pong', () => page.words.includes('pong'));
    const stop = await t.request('POST', `/v1/calls/${callId}/stop`);
    assert.equal(stop.status, 200, JSON.stringify(stop.body));
    const closed = await page.closed;
    assert.equal(closed.code, 1000);
    await waitForCall(t, callId);
  });

  it('drops audio a page sends faster than a microphone could', async () => {
    const page = await connect(origin, `agent=${agentId}&token=${await token()}&sampleRate=16000`);
    await waitFor('the call id', () => page.texts.find((m) => m.type === 'callID'));
    const before = dg.connections.at(-1)?.bytes ?? 0;
    // Ten seconds of audio at once, as fast as the socket takes it.
    const flood = new Int16Array(16_000 * 10);
    for (let i = 0; i < flood.length; i++) flood[i] = Math.round(Math.sin(i / 5) * 3000);
    for (let at = 0; at < flood.length; at += 1600) page.socket.send(Buffer.from(flood.slice(at, at + 1600).buffer));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const heard = (dg.connections.at(-1)?.bytes ?? 0) - before;
    // 8 kB of telephone audio a second: at most the two seconds ahead allowed, and the half second waited.
    assert.ok(heard < 8000 * 3.5, `${heard} bytes reached the recogniser`);
    page.socket.close();
  });

  it('refuses a bad token, a token of another agent or account, and a sample rate out of range, naming why', async () => {
    const refused = async (query: string) => (await connect(origin, query)).closed;
    assert.deepEqual(await refused(`agent=${agentId}`), { code: 1008, reason: refusedReason('token is required') });
    const unknown = await refused(`agent=${agentId}&token=wct_nope`);
    assert.equal(unknown.code, 1008);
    assert.match(unknown.reason, /token is unknown, expired or already used/);
    const rate = await refused(`agent=${agentId}&token=${await token()}&sampleRate=4000`);
    assert.equal(rate.code, 1008);
    assert.match(rate.reason, /sampleRate must be/);

    const other = await t.request('POST', '/v1/agents', { prompt: 'Other' });
    const otherId = (other.body.agent as { agent_id: string }).agent_id;
    const mismatch = await refused(`agent=${otherId}&token=${await token()}`);
    assert.equal(mismatch.code, 1008);
    assert.match(mismatch.reason, /agent is not the agent the token was issued for/);
    // Another account cannot authorize this account's agent.
    const foreign = await t.request('POST', `/v1/agents/${agentId}/authorize`, {}, { as: t.otherKey });
    assert.equal(foreign.status, 404);

    // A used token is used up, even by a refused socket.
    const once = await token();
    const used = await connect(origin, `agent=${agentId}&token=${once}`);
    await waitFor('the call id', () => used.texts.find((m) => m.type === 'callID'));
    used.socket.close();
    const again = await refused(`agent=${agentId}&token=${once}`);
    assert.match(again.reason, /already used/);
  });
});

describe('web calls over the socket: the account’s call limit', () => {
  it('a page over the limit is refused with 1013 and the reason', async () => {
    const t = await createTestApp({ env: { OPENLINE_MAX_CONCURRENT_CALLS: '1' } });
    try {
      await t.services.startWorkers();
      const origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
      const agent = await t.request('POST', '/v1/agents', { prompt: 'Hi', first_sentence: 'Hello there.' });
      const agentId = (agent.body.agent as { agent_id: string }).agent_id;
      const token = async () => String((await t.request('POST', `/v1/agents/${agentId}/authorize`)).body.token);
      const first = await connect(origin, `agent=${agentId}&token=${await token()}`);
      await waitFor('the first call', () => first.texts.find((m) => m.type === 'callID'));
      const spare = await token();
      const second = await connect(origin, `agent=${agentId}&token=${spare}`);
      const refused = await second.closed;
      assert.equal(refused.code, 1013);
      assert.match(refused.reason, /limit of concurrent calls/);
      first.socket.close();
      // The refused page's token was not used up: it starts a call once the first one is over.
      await waitFor('the first call to end', async () => {
        const calls = (await t.request('GET', '/v1/calls')).body.calls as { completed: boolean }[];
        return calls.every((c) => c.completed) || undefined;
      });
      const third = await connect(origin, `agent=${agentId}&token=${spare}`);
      await waitFor('the call with the spared token', () => third.texts.find((m) => m.type === 'callID'));
      third.socket.close();
    } finally {
      await t.close();
    }
  });
});

describe('web calls on a server without a speech recogniser', () => {
  it('a caller talking over the agent does not cut its notice or its greeting short', async () => {
    const t = await createTestApp();
    try {
      assert.equal(t.services.speech.stt, null);
      await t.services.startWorkers();
      const origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
      const agent = await t.request('POST', '/v1/agents', { prompt: 'Hi', first_sentence: 'Hello there.' });
      const agentId = (agent.body.agent as { agent_id: string }).agent_id;
      const token = String((await t.request('POST', `/v1/agents/${agentId}/authorize`)).body.token);
      const page = await connect(origin, `agent=${agentId}&token=${token}`);
      // Words nobody can recognise here, once the agent is well into its notice.
      await speak(page, new Int16Array(32_000), 16_000, 320);
      const words = spoken('Hello? Hello, can you hear me? I am talking to you right now.', 16_000);
      const said = () =>
        page.texts
          .filter((m) => m.event === 'update' && (m.payload as Json).type === 'assistant')
          .map((m) => (m.payload as Json).text as string);
      for (let i = 0; i < 4 && !said().some((text) => text.endsWith('Hello there.')); i++)
        await speak(page, words, 16_000, 320);
      await waitFor('the whole greeting', () => said().some((text) => text.endsWith('Hello there.')), 15_000);
      assert.match(said().join(' '), /no speech recogniser configured, so I cannot hear you\. .*Hello there\./);
      page.socket.close();
    } finally {
      await t.close();
    }
  });
});

function refusedReason(start: string): string {
  return `${start}: a token from POST /v1/agents/{id}/authorize`;
}
