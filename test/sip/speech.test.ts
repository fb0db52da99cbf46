import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { waitForCall, type TestApp } from '../../src/testing/harness.js';
import { FakeDeepgram } from '../../src/testing/fake-deepgram.js';
import { alawToLinear } from '../../src/media/audio.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import {
  HAS_PCAPS,
  HAS_SIPP,
  PCAPS,
  SCENARIOS,
  loudMs,
  recordingChannels,
  rtpPayloads,
  sipp,
  sippCaller,
  trace,
  until,
} from './sipp-run.js';
import { startSipApp, type SipTestApp } from './app.js';

type Json = Record<string, unknown>;

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
    let app: SipTestApp | undefined;
    let t: TestApp;
    let dg: FakeDeepgram;
    let dir: string;
    let trunkPort: number;
    let ourPort: number;
    /** How much of the pcap's speech is loud: the recording must have as much. */
    let spokenMs: number;

    before(async () => {
      dg = await FakeDeepgram.start({
        apiKey: 'dg-sip',
        transcripts: ['I would like to book a cleaning for Thursday.'],
      });
      trunkPort = await freeUdpPort();
      app = await startSipApp('sip-speech', {
        OPENLINE_SIP_TRUNK: `sip:127.0.0.1:${trunkPort}`,
        OPENLINE_RTP_PORTS: '39200-39499',
        DEEPGRAM_API_KEY: 'dg-sip',
        OPENLINE_DEEPGRAM_URL: dg.url,
      });
      ({ t, dir, ourPort } = app);
      const speech = Int16Array.from(Buffer.concat(rtpPayloads(path.join(PCAPS, 'g711a.pcap'))), (byte) =>
        alawToLinear(byte),
      );
      spokenMs = loudMs(speech, 8000);
    });
    after(async () => {
      await app?.close();
      await dg?.close();
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
      const recording = recordingChannels(path.join(dir, 'recordings', `${id}.wav`));
      const recorded = loudMs(recording.caller, recording.sampleRate);
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
      const caller = await sippCaller('speech-uac.xml', number.slice(1), ourPort, ['-mp', '39610'], dir, 'speech-uac');
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
