import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import WebSocket from 'ws';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { espeakAvailable } from '../../src/providers/tts/espeak.js';
import { TtsError, type TtsProvider } from '../../src/providers/tts/types.js';
import { MAX_SESSIONS } from '../../src/api/tts.js';

type Json = Record<string, unknown>;

/** The RMS level of little-endian 16-bit PCM. */
function level(bytes: Buffer): number {
  let sum = 0;
  for (let i = 0; i + 1 < bytes.length; i += 2) sum += bytes.readInt16LE(i) ** 2;
  return Math.sqrt(sum / Math.max(1, bytes.length / 2));
}

/** A session as a framework's TTS plugin opens one: the key on the upgrade, JSON in, JSON and PCM out. */
class Session {
  readonly json: Json[] = [];
  readonly audio: Buffer[] = [];
  private waiters: Array<() => void> = [];
  constructor(readonly socket: WebSocket) {
    socket.on('message', (data: Buffer, binary: boolean) => {
      if (binary) this.audio.push(data);
      else this.json.push(JSON.parse(data.toString()) as Json);
      for (const w of this.waiters.splice(0)) w();
    });
  }
  static async open(origin: string, key: string): Promise<Session> {
    const socket = new WebSocket(`${origin.replace('http', 'ws')}/v2/tts/ws`, {
      headers: { authorization: `Bearer ${key}` },
    });
    // Listening before the socket opens: a message may come with the opening.
    const session = new Session(socket);
    await once(socket, 'open');
    return session;
  }
  send(message: Json): void {
    this.socket.send(JSON.stringify(message));
  }
  /** The first JSON message matching, waiting up to 20 s. */
  async next(match: (m: Json) => boolean): Promise<Json> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const found = this.json.find(match);
      if (found) {
        this.json.splice(this.json.indexOf(found), 1);
        return found;
      }
      if (Date.now() > deadline) throw new Error(`no such message; got ${JSON.stringify(this.json)}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  }
}

describe(
  'text to speech under /v2, as voice-agent frameworks call it',
  { skip: !espeakAvailable() && 'needs espeak-ng' },
  () => {
    let t: TestApp;
    let origin: string;
    before(async () => {
      t = await createTestApp();
      origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
    });
    after(() => t.close());

    const post = (body: Json, key: string | null = t.key) =>
      fetch(`${origin}/v2/tts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(key && { authorization: key }) },
        body: JSON.stringify(body),
      });

    it('POST /v2/tts streams raw PCM at the rate asked for, in any voice id (unknown ones speak in the default voice)', async () => {
      const text = 'Thanks for calling. How can I help you today?';
      const lengths: Record<number, number> = {};
      for (const rate of [8000, 48000]) {
        const r = await post({
          text,
          voice: '29158307-9893-4149-8a75-bc9ce313d64e',
          audio: { encoding: 'pcm_s16le', sample_rate: rate },
          controls: { expressiveness: 0.5 },
        });
        assert.equal(r.status, 200, await r.clone().text());
        assert.equal(r.headers.get('content-type'), 'audio/pcm');
        assert.equal(r.headers.get('x-sample-rate'), String(rate));
        const pcm = Buffer.from(await r.arrayBuffer());
        assert.equal(pcm.length % 2, 0);
        const seconds = pcm.length / 2 / rate;
        assert.ok(seconds > 1 && seconds < 8, `${seconds} s of speech`);
        assert.ok(level(pcm) > 500, 'a voice, not silence');
        lengths[rate] = pcm.length;
      }
      assert.ok(Math.abs(lengths[48000]! / lengths[8000]! - 6) < 0.05, 'the same speech at six times the rate');
      const wav = await post({ text, audio: { sample_rate: 16000, container: 'wav' }, auto_formatting: true });
      assert.equal(wav.headers.get('content-type'), 'audio/wav');
      const file = Buffer.from(await wav.arrayBuffer());
      assert.equal(file.subarray(0, 4).toString(), 'RIFF');
      assert.equal(file.readUInt32LE(24), 16000);
    });

    it('POST /v2/tts names what is wrong, and wants the API key', async () => {
      const rate = await post({ text: 'Hi.', audio: { sample_rate: 22050 } });
      assert.equal(rate.status, 400);
      assert.match(await rate.text(), /audio\/sample_rate|audio\.sample_rate/);
      const empty = await post({ text: '' });
      assert.equal(empty.status, 400);
      assert.match(await empty.text(), /text/);
      assert.equal((await post({ text: 'Hi.' }, null)).status, 401);
      assert.equal((await post({ text: 'Hi.' }, 'wrong')).status, 401);
    });

    it('a session says a turn written in pieces, sentence by sentence, and ends it', async () => {
      const s = await Session.open(origin, t.key);
      s.send({ type: 'init', voice: 'maya', audio: { encoding: 'pcm_s16le', sample_rate: 16000 } });
      const ready = await s.next((m) => m.type === 'ready');
      assert.equal(ready.sample_rate, 16000);
      assert.equal(ready.encoding, 'pcm_s16le');
      assert.ok(ready.session_id);
      for (const text of ['Hello there', '. How are', ' you to', 'day?'])
        s.send({ type: 'speak', context_id: 'turn-1', text });
      await s.next((m) => m.type === 'utterance_start' && m.context_id === 'turn-1');
      s.send({ type: 'end_of_turn', context_id: 'turn-1' });
      const end = await s.next((m) => m.type === 'utterance_end');
      assert.deepEqual(end, { type: 'utterance_end', context_id: 'turn-1', reason: 'complete' });
      const pcm = Buffer.concat(s.audio);
      const seconds = pcm.length / 2 / 16000;
      assert.ok(seconds > 1, `${seconds} s`);
      assert.ok(level(pcm) > 500);

      // The next turn on the same session.
      s.audio.length = 0;
      s.send({ type: 'speak', context_id: 'turn-2', text: 'Goodbye.' });
      s.send({ type: 'end_of_turn', context_id: 'turn-2' });
      assert.equal((await s.next((m) => m.type === 'utterance_end')).context_id, 'turn-2');
      assert.ok(Buffer.concat(s.audio).length > 0);

      s.send({ type: 'close' });
      assert.equal((await s.next((m) => m.type === 'done')).session_id, ready.session_id);
      const [code] = (await once(s.socket, 'close')) as [number];
      assert.equal(code, 1000);
    });

    it('cancel stops a turn at once; no audio of it follows', async () => {
      const s = await Session.open(origin, t.key);
      s.send({ type: 'init', audio: { sample_rate: 24000 } });
      await s.next((m) => m.type === 'ready');
      const long = Array.from({ length: 12 }, (_, i) => `This is sentence number ${i + 1} of a long answer.`).join(' ');
      s.send({ type: 'speak', context_id: 'long', text: long });
      await s.next((m) => m.type === 'utterance_start');
      s.send({ type: 'cancel', context_id: 'long' });
      assert.deepEqual(await s.next((m) => m.type === 'utterance_end'), {
        type: 'utterance_end',
        context_id: 'long',
        reason: 'cancelled',
      });
      const heard = Buffer.concat(s.audio).length;
      s.send({ type: 'speak', context_id: 'after', text: 'Sure.' });
      s.send({ type: 'end_of_turn', context_id: 'after' });
      assert.equal((await s.next((m) => m.type === 'utterance_end')).reason, 'complete');
      const after = Buffer.concat(s.audio).length - heard;
      assert.ok(after > 0 && after < 24000 * 2 * 2, `only "Sure." followed the cancel: ${after} bytes`);
      s.socket.close();
    });

    it('a session names its mistakes: no init, init twice, a wrong format, two turns at once, no JSON', async () => {
      const s = await Session.open(origin, t.key);
      s.send({ type: 'speak', context_id: 'a', text: 'Hi.' });
      assert.equal((await s.next((m) => m.type === 'error')).code, 'init_required');
      s.send({ type: 'init', audio: { encoding: 'pcm_s16le', container: 'wav' } });
      assert.match(String((await s.next((m) => m.type === 'error')).message), /audio\.container/);
      s.send({ type: 'init', audio: { encoding: 'mp3' } });
      assert.equal((await s.next((m) => m.type === 'error')).code, 'unsupported_encoding');
      s.send({ type: 'init', audio: { sample_rate: 11025 } });
      const rate = await s.next((m) => m.type === 'error');
      assert.equal(rate.code, 'unsupported_sample_rate');
      assert.match(String(rate.message), /audio\.sample_rate/);
      s.send({ type: 'init' });
      assert.equal((await s.next((m) => m.type === 'ready')).sample_rate, 48000);
      s.send({ type: 'init' });
      assert.equal((await s.next((m) => m.type === 'error')).code, 'already_initialized');
      s.send({ type: 'speak', context_id: 'one', text: 'First turn, still being written' });
      s.send({ type: 'speak', context_id: 'two', text: 'Second.' });
      const busy = await s.next((m) => m.type === 'error');
      assert.equal(busy.code, 'invalid_request');
      assert.equal(busy.context_id, 'two');
      s.send({ type: 'speak', text: 'no context' });
      assert.match(String((await s.next((m) => m.type === 'error')).message), /context_id/);
      s.socket.send('not json');
      assert.equal((await s.next((m) => m.type === 'error')).code, 'invalid_message');
      s.send({ type: 'shout', context_id: 'one' });
      assert.match(String((await s.next((m) => m.type === 'error')).message), /type must be/);
      s.socket.close();
    });

    it(`has an account keep at most ${MAX_SESSIONS} sessions open at once`, async () => {
      const sessions = await Promise.all(Array.from({ length: MAX_SESSIONS }, () => Session.open(origin, t.key)));
      const refused = await Session.open(origin, t.key);
      assert.equal((await refused.next((m) => m.type === 'error')).code, 'rate_limited');
      const [code] = (await once(refused.socket, 'close')) as [number];
      assert.equal(code, 1013);
      const other = await Session.open(origin, t.otherKey);
      other.send({ type: 'init' });
      assert.equal((await other.next((m) => m.type === 'ready')).type, 'ready', 'another account is not held back');
      other.socket.close();
      sessions[0]!.socket.close();
      await once(sessions[0]!.socket, 'close');
      await new Promise((resolve) => setTimeout(resolve, 100));
      const again = await Session.open(origin, t.key);
      again.send({ type: 'init' });
      assert.equal((await again.next((m) => m.type === 'ready')).type, 'ready', 'a place freed');
      for (const s of [again, ...sessions.slice(1)]) s.socket.close();
    });

    it('refuses the upgrade with a 401 without a valid key (no socket is opened)', async () => {
      for (const headers of [{}, { authorization: 'Bearer wrong' }]) {
        const socket = new WebSocket(`${origin.replace('http', 'ws')}/v2/tts/ws`, { headers });
        socket.on('error', () => undefined);
        const status = await new Promise<number>((resolve) => {
          socket.on('unexpected-response', (_request, response) => {
            response.resume();
            resolve(response.statusCode ?? 0);
          });
          socket.on('open', () => resolve(101));
        });
        assert.equal(status, 401);
        socket.terminate();
      }
    });
  },
);

describe('text to speech under /v2 when the provider fails', () => {
  let t: TestApp;
  let origin: string;
  before(async () => {
    const broken: TtsProvider = {
      name: 'broken',
      // eslint-disable-next-line require-yield
      async *synthesize() {
        throw new TtsError('the voice service is down', false);
      },
    };
    t = await createTestApp({ speech: { tts: broken, stt: null, ttsVoiceFor: () => 'any', fallback: null } });
    origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => t.close());

  it('POST /v2/tts is a 503 naming the failure, and a session’s turn ends as failed', async () => {
    const r = await fetch(`${origin}/v2/tts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: t.key },
      body: JSON.stringify({ text: 'Hello.' }),
    });
    assert.equal(r.status, 503);
    assert.match(await r.text(), /the voice service is down/);
    const s = await Session.open(origin, t.key);
    s.send({ type: 'init' });
    await s.next((m) => m.type === 'ready');
    s.send({ type: 'speak', context_id: 'x', text: 'Hello.' });
    s.send({ type: 'end_of_turn', context_id: 'x' });
    const error = await s.next((m) => m.type === 'error');
    assert.equal(error.code, 'synthesis_failed');
    assert.equal(error.context_id, 'x');
    assert.deepEqual(await s.next((m) => m.type === 'utterance_end'), {
      type: 'utterance_end',
      context_id: 'x',
      reason: 'failed',
    });
    s.send({ type: 'speak', context_id: 'y', text: 'Again.' });
    s.send({ type: 'end_of_turn', context_id: 'y' });
    assert.equal((await s.next((m) => m.type === 'error')).context_id, 'y', 'the next turn may start');
    s.socket.close();
  });
});
