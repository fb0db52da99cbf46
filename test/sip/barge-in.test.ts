import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { waitForCall, type TestApp } from '../../src/testing/harness.js';
import { FakeDeepgram } from '../../src/testing/fake-deepgram.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import {
  HAS_PCAPS,
  HAS_SIPP,
  PCAPS,
  loudMs,
  pcapSpeechSlice,
  recordingChannels,
  sipp,
  speechOnsetMs,
  trace,
  until,
} from './sipp-run.js';
import { startSipApp, type SipTestApp } from './app.js';

type Json = Record<string, unknown>;
type Figures = Record<string, number>;

/** The agent's first sentence: long enough (about ten seconds) for the person to talk over it. */
const LONG =
  'Hello, this is Openline calling about your order number four five six, which we shipped on Monday by ' +
  'express courier, and I would like to confirm the delivery address and the time window that suits you best.';

/**
 * A person who answers in PCMA and, `atMs` after the call is up, plays `pcap` over the agent; then
 * waits for Openline's BYE.
 */
function talkOverScenario(pcap: string, atMs: number): string {
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="talk-over">
  <recv request="INVITE" />
  <send>
    <![CDATA[
SIP/2.0 200 OK
[last_Via:]
[last_From:]
[last_To:];tag=[pid]SIPpTag01[call_number]
[last_Call-ID:]
[last_CSeq:]
Contact: <sip:[local_ip]:[local_port];transport=[transport]>
Content-Type: application/sdp
Content-Length: [len]

v=0
o=trunk 53655765 2353687637 IN IP[local_ip_type] [local_ip]
s=-
c=IN IP[media_ip_type] [media_ip]
t=0 0
m=audio [media_port] RTP/AVP 8 101
a=rtpmap:8 PCMA/8000
a=rtpmap:101 telephone-event/8000
]]>
  </send>
  <recv request="ACK" />
  <pause milliseconds="${atMs}" />
  <nop>
    <action>
      <exec play_pcap_audio="${pcap}" />
    </action>
  </nop>
  <recv request="BYE" />
  <send>
    <![CDATA[
SIP/2.0 200 OK
[last_Via:]
[last_From:]
[last_To:]
[last_Call-ID:]
[last_CSeq:]
Content-Length: 0

]]>
  </send>
</scenario>
`;
}

/**
 * Interruptions on SIP, with real speech from a real SIP peer: sipp answers an outbound call and
 * talks over the agent's first sentence, with a whole sentence (the agent stops and answers) or a
 * short "uh huh" (the agent goes on with the same sentence). The same pause-then-decide rule as on
 * every carrier (src/media/audio-leg.ts); here it is seen on the RTP the agent sends, through the
 * call's recording, and on the call record's interruption figures. After the pcap sipp sends no
 * RTP at all, as a phone with silence suppression does: the agent hears that as silence.
 */
describe(
  'SIP: a person talking over the agent',
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

    before(async () => {
      dg = await FakeDeepgram.start({ apiKey: 'dg-sip' });
      trunkPort = await freeUdpPort();
      app = await startSipApp('sip-barge', {
        OPENLINE_SIP_TRUNK: `sip:127.0.0.1:${trunkPort}`,
        OPENLINE_RTP_PORTS: '39700-39799',
        DEEPGRAM_API_KEY: 'dg-sip',
        OPENLINE_DEEPGRAM_URL: dg.url,
      });
      ({ t, dir } = app);
      pcapSpeechSlice(path.join(PCAPS, 'g711a.pcap'), path.join(dir, 'uh-huh.pcap'), 450);
    });
    after(async () => {
      await app?.close();
      await dg?.close();
    });

    /** Places a call to sipp playing `pcap` 1.5 s into it; ends it once `done` holds; returns the record. */
    async function call(
      name: string,
      pcap: string,
      words: string,
      done: (record: Json) => boolean,
    ): Promise<{ record: Json; figures: Figures; first: string }> {
      const scenario = path.join(dir, `${name}.xml`);
      fs.writeFileSync(scenario, talkOverScenario(pcap, 1500));
      const peer = sipp(['-sf', scenario, '-i', '127.0.0.1', '-p', String(trunkPort), '-mp', '39900'], dir, name);
      dg.script(words);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const sent = await t.request('POST', '/v1/calls', {
        phone_number: '+14155551260',
        task: 'Confirm the delivery address.',
        first_sentence: LONG,
        record: true,
        max_duration: 1,
      });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      const id = String(sent.body.call_id);
      await until(
        'the call to get that far',
        async () => done((await t.request('GET', `/v1/calls/${id}`)).body),
        45_000,
      );
      assert.equal((await t.request('POST', `/v1/calls/${id}/stop`)).status, 200);
      const record = await waitForCall(t, id);
      assert.equal(await peer.exit, 0, trace(peer));
      const first = (record.transcripts as Json[]).find((x) => x.user === 'assistant');
      const figures = (record.latency as { interruptions: Figures }).interruptions;
      return { record, figures, first: String(first?.text) };
    }

    it('a sentence over the agent: its RTP goes quiet at once, the transcript keeps the words played, and it answers', async () => {
      const said = 'Sorry, wait, I have a question about the address.';
      const { record, figures, first } = await call('talk-over', path.join(PCAPS, 'g711a.pcap'), said, (r) =>
        (r.transcripts as Json[]).some((x) => x.user === 'user'),
      );
      assert.ok(first.endsWith('...'), first);
      assert.ok(first.length < LONG.length && LONG.startsWith(first.slice(0, -3)), first);
      assert.ok(figures.held! >= 1 && figures.cut! >= 1, JSON.stringify(figures));
      // In the recording: the person starts talking over the agent's voice, and the agent's side
      // is silent from half a second later (the pause at the first frames of voice, the decision by
      // the words) for the next two seconds, while the person talks on.
      const { caller, agent, sampleRate } = recordingChannels(
        path.join(dir, 'recordings', `${String(record.call_id)}.wav`),
      );
      const onset = speechOnsetMs(caller, sampleRate, 1000);
      assert.ok(onset !== undefined, 'the person spoke');
      assert.ok(
        loudMs(agent, sampleRate, onset - 1000, onset) >= 500,
        'the agent was speaking when the person started',
      );
      const talkedOn = loudMs(agent, sampleRate, onset + 500, onset + 2500);
      assert.ok(talkedOn <= 50, `the agent went quiet over the person: ${talkedOn} ms of its voice after the onset`);
    });

    it('an "uh huh" over the agent: it pauses, then says the same sentence to its end', async () => {
      const { figures, first } = await call('uh-huh', path.join(dir, 'uh-huh.pcap'), 'uh huh', (r) =>
        (r.transcripts as Json[]).some((x) => x.user === 'assistant' && x.text === LONG),
      );
      assert.equal(first, LONG);
      assert.deepEqual(
        [figures.held, figures.resumed, figures.cut, figures.backchannels],
        [1, 1, 0, 1],
        JSON.stringify(figures),
      );
    });
  },
);
