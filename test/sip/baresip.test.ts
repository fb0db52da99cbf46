import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { encodeWav, parseWav } from '../../src/media/wav.js';
import { concatPcm, dbfs, resample, silence } from '../../src/media/audio.js';
import { freeUdpPort } from '../../src/testing/ports.js';

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
    ['module_app', 'account.so'],
    ['module_app', 'menu.so'],
    ['snd_path', dir],
  ];
  fs.writeFileSync(path.join(dir, 'config'), lines.map(([k, v]) => `${k}\t${v}`).join('\n') + '\n');
  fs.writeFileSync(path.join(dir, 'accounts'), `${account}\n`);
}

/** Runs baresip until it quits by itself (`-t`); resolves with its output. */
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
  let t: TestApp;
  let dir: string;
  let phone: string;
  let ourPort: number;
  let phonePort: number;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-baresip-'));
    phone = path.join(dir, 'phone');
    fs.mkdirSync(phone);
    voiceFile(path.join(phone, 'voice.wav'));
    ourPort = await freeUdpPort();
    phonePort = await freeUdpPort();
    t = await createTestApp({
      env: {
        DATA_DIR: dir,
        OPENLINE_SIP_LISTEN: `127.0.0.1:${ourPort}`,
        OPENLINE_SIP_TRUNK: `sip:127.0.0.1:${phonePort}`,
        OPENLINE_RTP_PORTS: '32000-32999',
      },
    });
    await t.services.startWorkers();
  });
  after(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const clearDumps = () => {
    for (const f of fs.readdirSync(phone)) if (f.startsWith('dump-')) fs.rmSync(path.join(phone, f));
  };

  it('Openline calls baresip through the trunk: baresip answers, both hear each other, stop hangs up', async () => {
    clearDumps();
    // baresip takes calls for the number dialled (its account's user), answering at once.
    baresipConfig(phone, phonePort, '<sip:+14155557001@127.0.0.1>;regint=0;answermode=auto');
    const running = baresip(phone, ['-t', '15']);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const r = await t.request('POST', '/v1/calls', {
      phone_number: '+14155557001',
      task: 'Tell Bob his order has shipped.',
      record: true,
      max_duration: 1,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const id = String(r.body.call_id);
    await new Promise((resolve) => setTimeout(resolve, 7000));
    await t.request('POST', `/v1/calls/${id}/stop`);
    const record = await waitForCall(t, id);
    const out = await running;
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
    const bought = await t.request('POST', '/v1/inbound/purchase', {
      area_code: '628',
      prompt: 'You are the front desk of Sunny Dental. Greet the caller.',
      record: true,
    });
    assert.equal(bought.status, 200, JSON.stringify(bought.body));
    const number = String(bought.body.phone_number);
    baresipConfig(phone, phonePort, '<sip:bob@127.0.0.1>;regint=0');
    const out = await baresip(phone, ['-e', `/dial sip:${number}@127.0.0.1:${ourPort}`, '-t', '8']);
    assert.match(out, /Call established/, out.slice(-2000));
    const list = await t.request('GET', `/v1/calls?inbound=true&to_number=${encodeURIComponent(number)}`);
    const id = String((list.body.calls as Json[])[0]?.call_id);
    const record = await waitForCall(t, id);
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
    const bought = await t.request('POST', '/v1/inbound/purchase', {
      area_code: '628',
      prompt: 'You are the front desk of Sunny Dental. Greet the caller.',
    });
    assert.equal(bought.status, 200, JSON.stringify(bought.body));
    const number = String(bought.body.phone_number);
    baresipConfig(phone, phonePort, '<sip:bob@127.0.0.1;transport=tcp>;regint=0');
    const out = await baresip(phone, ['-e', `/dial sip:${number}@127.0.0.1:${ourPort};transport=tcp`, '-t', '8']);
    assert.match(out, /Call established/, out.slice(-2000));
    assert.match(out, /connecting to '[^']*;transport=tcp/, 'baresip called over TCP');
    const list = await t.request('GET', `/v1/calls?inbound=true&to_number=${encodeURIComponent(number)}`);
    const record = await waitForCall(t, String((list.body.calls as Json[])[0]?.call_id));
    assert.equal(record.inbound, true);
    assert.equal(record.call_ended_by, 'USER');
    assert.ok(
      (record.transcripts as Json[]).some((x) => x.user === 'assistant'),
      'the agent greeted',
    );
    assert.ok(heardByBaresip(phone) > -50, 'baresip heard the greeting');
  });
});
