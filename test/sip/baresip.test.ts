import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { waitForCall, type TestApp } from '../../src/testing/harness.js';
import { encodeWav, parseWav } from '../../src/media/wav.js';
import { concatPcm, dbfs, resample, silence } from '../../src/media/audio.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import { startSipApp, type SipTestApp } from './app.js';

type Json = Record<string, unknown>;

const HAS_BARESIP = spawnSync('baresip', ['-h']).error === undefined;

/** The far end's voice: "Hello? This is Bob." by espeak-ng, as an 8 kHz WAV that baresip plays. */
function voiceFile(file: string): void {
  const raw = path.join(path.dirname(file), 'raw.wav');
  spawnSync('espeak-ng', ['-w', raw, 'Hello? This is Bob.']);
  const wav = parseWav(fs.readFileSync(raw));
  const pcm = concatPcm([silence(500), resample(wav.samples, wav.sampleRate, 8000), silence(8000)]);
  fs.writeFileSync(file, encodeWav(pcm, { sampleRate: 8000 }));
}

/** A baresip configuration: G.711, the voice file as microphone, what it hears dumped to WAV files. */
function baresipConfig(dir: string, port: number, account: string): void {
  const lines = [
    ['poll_method', 'epoll'],
    ['sip_listen', `127.0.0.1:${port}`],
    ['audio_player', 'aubridge,openline'],
    ['audio_source', `aufile,${path.join(dir, 'voice.wav')}`],
    ['audio_alert', 'aufile,/dev/null'],
    ['ausrc_srate', '8000'],
    ['ausrc_channels', '1'],
    ['module_path', '/usr/lib/baresip/modules'],
    ['module', 'g711.so'],
    ['module', 'aufile.so'],
    ['module', 'aubridge.so'],
    ['module', 'sndfile.so'],
    // SRTP with SDES keys, for the accounts that say mediaenc=srtp (best effort) or srtp-mand.
    ['module', 'srtp.so'],
    ['module_app', 'account.so'],
    ['module_app', 'menu.so'],
    ['snd_path', dir],
  ];
  fs.writeFileSync(path.join(dir, 'config'), lines.map(([k, v]) => `${k}\t${v}`).join('\n') + '\n');
  fs.writeFileSync(path.join(dir, 'accounts'), `${account}\n`);
}

/** Runs baresip until it quits by itself (`-t`); resolves with its output (with `-s`, the SIP messages too). */
function baresip(dir: string, args: string[]): Promise<string> {
  const child = spawn('baresip', ['-f', dir, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => child.on('exit', () => resolve(out)));
}

/** The loudness of what baresip heard (its decoded audio, dumped by the sndfile module). */
function heardByBaresip(dir: string): number {
  const dump = fs.readdirSync(dir).find((f) => f.endsWith('-dec.wav'));
  assert.ok(dump, 'baresip dumped what it heard');
  return dbfs(parseWav(fs.readFileSync(path.join(dir, dump))).samples);
}

/**
 * The 20 ms frames of digital silence after the first loud one: speech has its pauses (and the
 * voice file its silence), where audio that was never decrypted is noise from end to end.
 */
function quietAfterSpeech(samples: Int16Array): number {
  let loud = false;
  let quiet = 0;
  for (let i = 0; i + 160 <= samples.length; i += 160) {
    const frame = samples.subarray(i, i + 160);
    const peak = frame.reduce((max, x) => Math.max(max, Math.abs(x)), 0);
    if (!loud) loud = dbfs(frame) > -40;
    else if (peak < 64) quiet++;
  }
  return quiet;
}

function channels(file: string): { caller: Int16Array; agent: Int16Array } {
  const wav = parseWav(fs.readFileSync(file));
  const caller = new Int16Array(wav.samples.length / 2);
  const agent = new Int16Array(wav.samples.length / 2);
  for (let i = 0; i < caller.length; i++) {
    caller[i] = wav.samples[2 * i]!;
    agent[i] = wav.samples[2 * i + 1]!;
  }
  return { caller, agent };
}

/**
 * SIP with baresip, a real user agent (Debian's baresip): it answers a call Openline places
 * through the trunk, and it calls one of the account's numbers. Each side hears the other: the
 * agent's voice in baresip's dump of what it received, Bob's voice on the call's recording.
 */
describe('SIP with baresip as the phone', { skip: !HAS_BARESIP && 'baresip is not installed' }, () => {
  let app: SipTestApp | undefined;
  let t: TestApp;
  let dir: string;
  let phone: string;
  let ourPort: number;
  let phonePort: number;

  before(async () => {
    phonePort = await freeUdpPort();
    app = await startSipApp('baresip', {
      OPENLINE_SIP_TRUNK: `sip:127.0.0.1:${phonePort}`,
      OPENLINE_RTP_PORTS: '32000-32999',
    });
    ({ t, dir, ourPort } = app);
    phone = path.join(dir, 'phone');
    fs.mkdirSync(phone);
    voiceFile(path.join(phone, 'voice.wav'));
  });
  after(() => app?.close());

  /** A number of the account's whose agent greets callers, recording its calls. */
  const frontDesk = async (): Promise<string> => {
    const bought = await t.request('POST', '/v1/inbound/purchase', {
      area_code: '628',
      prompt: 'You are the front desk of Sunny Dental. Greet the caller.',
      record: true,
    });
    assert.equal(bought.status, 200, JSON.stringify(bought.body));
    return String(bought.body.phone_number);
  };

  /** The record of the call in to `number`, once it ended. */
  const callIn = async (number: string): Promise<Json> => {
    const list = await t.request('GET', `/v1/calls?inbound=true&to_number=${encodeURIComponent(number)}`);
    return waitForCall(t, String((list.body.calls as Json[])[0]?.call_id));
  };

  /**
   * Openline calls `number` (baresip, which `args` start) through the trunk (`encrypted_key`: an
   * account's own), stops the call after 7 s; the call's record and baresip's output.
   */
  const callOut = async (number: string, args: string[], encryptedKey?: string) => {
    const running = baresip(phone, args);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const r = await t.request(
      'POST',
      '/v1/calls',
      { phone_number: number, task: 'Tell Bob his order has shipped.', record: true, max_duration: 1 },
      encryptedKey === undefined ? {} : { headers: { encrypted_key: encryptedKey } },
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const id = String(r.body.call_id);
    await new Promise((resolve) => setTimeout(resolve, 7000));
    await t.request('POST', `/v1/calls/${id}/stop`);
    const record = await waitForCall(t, id);
    return { id, record, out: await running };
  };

  const clearDumps = () => {
    for (const f of fs.readdirSync(phone)) if (f.startsWith('dump-')) fs.rmSync(path.join(phone, f));
  };

  it('Openline calls baresip through the trunk: baresip answers, both hear each other, stop hangs up', async () => {
    clearDumps();
    // baresip takes calls for the number dialled (its account's user), answering at once.
    baresipConfig(phone, phonePort, '<sip:+14155557001@127.0.0.1>;regint=0;answermode=auto');
    const { id, record, out } = await callOut('+14155557001', ['-t', '15']);
    assert.equal(record.status, 'completed', out.slice(-2000));
    assert.match(out, /Call established|answering call/);
    assert.ok(
      (record.transcripts as Json[]).some((x) => x.user === 'assistant'),
      'the agent spoke',
    );
    assert.ok(heardByBaresip(phone) > -50, `baresip heard the agent (${heardByBaresip(phone).toFixed(1)} dBFS)`);
    const { caller } = channels(path.join(dir, 'recordings', `${id}.wav`));
    assert.ok(dbfs(caller) > -50, `Openline heard Bob (${dbfs(caller).toFixed(1)} dBFS)`);
  });

  it("baresip calls one of the account's numbers: the agent answers and greets, baresip hangs up", async () => {
    clearDumps();
    const number = await frontDesk();
    baresipConfig(phone, phonePort, '<sip:bob@127.0.0.1>;regint=0');
    const out = await baresip(phone, ['-e', `/dial sip:${number}@127.0.0.1:${ourPort}`, '-t', '8']);
    assert.match(out, /Call established/, out.slice(-2000));
    const record = await callIn(number);
    const id = String(record.call_id);
    assert.equal(record.inbound, true);
    assert.equal(record.call_ended_by, 'USER');
    assert.ok(
      (record.transcripts as Json[]).some((x) => x.user === 'assistant'),
      'the agent greeted',
    );
    assert.ok(heardByBaresip(phone) > -50, 'baresip heard the greeting');
    const { caller } = channels(path.join(dir, 'recordings', `${id}.wav`));
    assert.ok(dbfs(caller) > -50, 'Openline heard Bob');
  });

  it("baresip calls one of the account's numbers over TCP: the agent answers on the same connection", async () => {
    clearDumps();
    const number = await frontDesk();
    baresipConfig(phone, phonePort, '<sip:bob@127.0.0.1;transport=tcp>;regint=0');
    const out = await baresip(phone, ['-e', `/dial sip:${number}@127.0.0.1:${ourPort};transport=tcp`, '-t', '8']);
    assert.match(out, /Call established/, out.slice(-2000));
    assert.match(out, /connecting to '[^']*;transport=tcp/, 'baresip called over TCP');
    const record = await callIn(number);
    assert.equal(record.inbound, true);
    assert.equal(record.call_ended_by, 'USER');
    assert.ok(
      (record.transcripts as Json[]).some((x) => x.user === 'assistant'),
      'the agent greeted',
    );
    assert.ok(heardByBaresip(phone) > -50, 'baresip heard the greeting');
  });

  /** The SDP media lines of Openline's messages and of baresip's, from baresip's SIP trace (`-s`). */
  const audioLines = (out: string) => [...out.matchAll(/m=audio \d+ (RTP\/S?AVP)/g)].map((m) => m[1]);

  it('Openline calls baresip through a trunk with srtp=mandatory: RTP/SAVP with SDES keys, both hear each other', async () => {
    clearDumps();
    const stored = await t.request('POST', '/v1/accounts', {
      provider: 'sip',
      trunk: `sip:127.0.0.1:${phonePort};srtp=mandatory`,
    });
    assert.equal(stored.status, 200, JSON.stringify(stored.body));
    baresipConfig(phone, phonePort, '<sip:+14155557002@127.0.0.1>;regint=0;answermode=auto;mediaenc=srtp-mand');
    const { id, record, out } = await callOut('+14155557002', ['-s', '-t', '15'], String(stored.body.encrypted_key));
    assert.equal(record.status, 'completed', out.slice(-3000));
    // The offer (ours) and the answer (baresip's) are both SRTP, each with its key.
    assert.deepEqual(audioLines(out).slice(0, 2), ['RTP/SAVP', 'RTP/SAVP'], out.slice(0, 4000));
    assert.ok((out.match(/a=crypto:\d+ AES_CM_128_HMAC_SHA1_(80|32) inline:/g) ?? []).length >= 3);
    assert.ok(heardByBaresip(phone) > -50, `baresip heard the agent (${heardByBaresip(phone).toFixed(1)} dBFS)`);
    const { caller } = channels(path.join(dir, 'recordings', `${id}.wav`));
    assert.ok(dbfs(caller) > -50, `Openline heard Bob (${dbfs(caller).toFixed(1)} dBFS)`);
    assert.ok(quietAfterSpeech(caller) >= 25, 'what Openline heard has the pauses of speech: it was decrypted');
  });

  for (const mediaenc of ['srtp-mand', 'srtp']) {
    it(`baresip calls with mediaenc=${mediaenc}: Openline answers with its own SDES key in kind, both hear each other`, async () => {
      clearDumps();
      const number = await frontDesk();
      baresipConfig(phone, phonePort, `<sip:bob@127.0.0.1>;regint=0;mediaenc=${mediaenc}`);
      const out = await baresip(phone, ['-s', '-e', `/dial sip:${number}@127.0.0.1:${ourPort}`, '-t', '8']);
      assert.match(out, /Call established/, out.slice(-3000));
      // srtp-mand offers RTP/SAVP, srtp (best effort) RTP/AVP with its keys: the answer keeps the protocol.
      const protocol = mediaenc === 'srtp-mand' ? 'RTP/SAVP' : 'RTP/AVP';
      assert.deepEqual(audioLines(out).slice(0, 2), [protocol, protocol], out.slice(0, 4000));
      const keys = [...out.matchAll(/a=crypto:\d+ AES_CM_128_HMAC_SHA1_(?:80|32) inline:([A-Za-z0-9+/]{40})/g)].map(
        (m) => m[1],
      );
      assert.ok(keys.length >= 2, 'keys both ways');
      assert.equal(new Set(keys).size, keys.length, "Openline's key is its own");
      const record = await callIn(number);
      assert.equal(record.call_ended_by, 'USER');
      assert.ok(heardByBaresip(phone) > -50, 'baresip heard the greeting');
      const { caller } = channels(path.join(dir, 'recordings', `${String(record.call_id)}.wav`));
      assert.ok(dbfs(caller) > -50, 'Openline heard Bob');
      assert.ok(quietAfterSpeech(caller) >= 25, 'what Openline heard has the pauses of speech: it was decrypted');
    });
  }
});
