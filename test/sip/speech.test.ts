import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { FakeDeepgram } from '../../src/testing/fake-deepgram.js';
import { parseWav } from '../../src/media/wav.js';
import { alawToLinear, dbfs } from '../../src/media/audio.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import { HAS_SIPP, SCENARIOS, sipp, trace, until } from './sipp-run.js';

type Json = Record<string, unknown>;

/** The pcaps Debian's sip-tester installs: speech in G.711 A-law, and RFC 4733 key presses. */
const PCAPS = '/usr/share/sip-tester';
const HAS_PCAPS = fs.existsSync(path.join(PCAPS, 'g711a.pcap')) && fs.existsSync(path.join(PCAPS, 'dtmf_2833_1.pcap'));

/** The RTP payloads of a pcap of Ethernet, IPv4 and UDP packets. */
function rtpPayloads(file: string): Buffer[] {
  const data = fs.readFileSync(file);
  assert.equal(data.readUInt32LE(0), 0xa1b2c3d4, 'a little-endian pcap');
  assert.equal(data.readUInt32LE(20), 1, 'of Ethernet frames');
  const payloads: Buffer[] = [];
  for (let offset = 24; offset + 16 <= data.length;) {
    const length = data.readUInt32LE(offset + 8);
    const frame = data.subarray(offset + 16, offset + 16 + length);
    offset += 16 + length;
    const ip = frame.subarray(14);
    const udp = ip.subarray((ip[0]! & 0x0f) * 4);
    const rtp = udp.subarray(8);
    payloads.push(rtp.subarray(12 + (rtp[0]! & 0x0f) * 4));
  }
  return payloads;
}

/** Milliseconds of audio louder than -40 dBFS, measured over 10 ms windows. */
function loudMs(pcm: Int16Array, sampleRate: number): number {
  const window = sampleRate / 100;
  let loud = 0;
  for (let at = 0; at + window <= pcm.length; at += window) if (dbfs(pcm.subarray(at, at + window)) > -40) loud += 10;
  return loud;
}

/** The caller's side (left channel) of a call's stereo recording. */
function callerChannel(file: string): { pcm: Int16Array; sampleRate: number } {
  const wav = parseWav(fs.readFileSync(file));
  assert.equal(wav.channels, 2);
  const pcm = new Int16Array(wav.samples.length / 2);
  for (let i = 0; i < pcm.length; i++) pcm[i] = wav.samples[2 * i]!;
  return { pcm, sampleRate: wav.sampleRate };
}

/**
 * Real speech and real key presses from a real SIP peer: sipp plays the G.711 A-law speech of its
 * g711a.pcap (30 ms packets) and the RFC 4733 telephone-events of dtmf_2833_1.pcap into a call,
 * as the trunk answering an outbound call and as a caller. The agent hears them: the speech
 * reaches speech recognition (Deepgram's protocol, served by the local fake, which finds voiced
 * audio by its energy) and lands on the transcript and, all of it, on the recording; the key is
 * on the transcript. Openline hangs up with BYE in both directions.
 */
describe(
  'SIP with sipp playing speech and keys from pcaps',
  {
    skip:
      (!HAS_SIPP && 'sipp is not installed (apt-get install sip-tester)') ||
      (!HAS_PCAPS && `no sipp pcaps in ${PCAPS}`),
  },
  () => {
    let t: TestApp;
    let dg: FakeDeepgram;
    let dir: string;
    let trunkPort: number;
    let ourPort: number;
    /** How much of the pcap's speech is loud: the recording must have as much. */
    let spokenMs: number;

    before(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-sip-speech-'));
      dg = await FakeDeepgram.start({
        apiKey: 'dg-sip',
        transcripts: ['I would like to book a cleaning for Thursday.'],
      });
      trunkPort = await freeUdpPort();
      ourPort = await freeUdpPort();
      t = await createTestApp({
        env: {
          DATA_DIR: dir,
          OPENLINE_SIP_LISTEN: `127.0.0.1:${ourPort}`,
          OPENLINE_SIP_TRUNK: `sip:127.0.0.1:${trunkPort}`,
          OPENLINE_RTP_PORTS: '39200-39499',
          DEEPGRAM_API_KEY: 'dg-sip',
          OPENLINE_DEEPGRAM_URL: dg.url,
        },
      });
      await t.services.startWorkers();
      const speech = Int16Array.from(Buffer.concat(rtpPayloads(path.join(PCAPS, 'g711a.pcap'))), (byte) =>
        alawToLinear(byte),
      );
      spokenMs = loudMs(speech, 8000);
    });
    after(async () => {
      await t?.close();
      await dg?.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    /** Waits for the key on the transcript, hangs up, and checks what the agent heard. */
    async function heard(id: string, sentence: string): Promise<Json> {
      await until(
        'the key on the transcript',
        async () =>
          ((await t.request('GET', `/v1/calls/${id}`)).body.transcripts as Json[]).some((x) =>
            String(x.text).includes('pressed 1'),
          ),
        30_000,
      );
      assert.equal((await t.request('POST', `/v1/calls/${id}/stop`)).status, 200);
      const record = await waitForCall(t, id);
      const users = (record.transcripts as Json[]).filter((x) => x.user === 'user').map((x) => String(x.text));
      assert.ok(users.includes(sentence), `the speech reached speech recognition: ${JSON.stringify(users)}`);
      const caller = callerChannel(path.join(dir, 'recordings', `${id}.wav`));
      const recorded = loudMs(caller.pcm, caller.sampleRate);
      assert.ok(
        Math.abs(recorded - spokenMs) <= spokenMs * 0.05,
        `the recording has the caller's speech, all of it: ${recorded} ms loud of the pcap's ${spokenMs} ms`,
      );
      return record;
    }

    it('outbound: the trunk answers in PCMA, speaks and presses 1; the agent hears both; Openline hangs up', async () => {
      const peer = sipp(
        ['-sf', path.join(SCENARIOS, 'speech-uas.xml'), '-i', '127.0.0.1', '-p', String(trunkPort), '-mp', '39600'],
        dir,
        'speech-uas',
      );
      dg.script('I would like to book a cleaning for Thursday.');
      await new Promise((resolve) => setTimeout(resolve, 300));
      const r = await t.request('POST', '/v1/calls', {
        phone_number: '+14155551250',
        task: 'Ask which day suits the caller for a cleaning.',
        record: true,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const record = await heard(String(r.body.call_id), 'I would like to book a cleaning for Thursday.');
      assert.equal(await peer.exit, 0, trace(peer));
      assert.match(trace(peer), /BYE sip:/);
      assert.equal(record.call_ended_by, 'ASSISTANT', 'Openline hung up');
    });

    it("inbound: sipp calls one of the account's numbers in PCMA, speaks and presses 1; Openline hangs up", async () => {
      const bought = await t.request('POST', '/v1/inbound/purchase', {
        area_code: '628',
        prompt: 'You are the front desk of Sunny Dental. Greet the caller and help them book.',
        record: true,
      });
      assert.equal(bought.status, 200, JSON.stringify(bought.body));
      const number = String(bought.body.phone_number);
      dg.script('Do you have anything on Friday morning?');
      const caller = sipp(
        [
          '-sf',
          path.join(SCENARIOS, 'speech-uac.xml'),
          `127.0.0.1:${ourPort}`,
          '-i',
          '127.0.0.1',
          '-p',
          String(await freeUdpPort()),
          '-s',
          number.slice(1),
          '-mp',
          '39610',
        ],
        dir,
        'speech-uac',
      );
      let id: string | undefined;
      await until('the call on record', async () => {
        const list = await t.request('GET', `/v1/calls?inbound=true&to_number=${encodeURIComponent(number)}`);
        id = (list.body.calls as Json[])[0]?.call_id as string | undefined;
        return id !== undefined;
      });
      const record = await heard(id!, 'Do you have anything on Friday morning?');
      assert.equal(await caller.exit, 0, trace(caller));
      assert.equal(record.inbound, true);
      assert.equal(record.call_ended_by, 'ASSISTANT', 'Openline hung up');
    });
  },
);
