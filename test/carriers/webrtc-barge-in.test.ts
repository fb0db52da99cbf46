import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { RtpHeader, RtpPacket } from 'werift';
import { browserPeer, type OfferedCodec } from '../../src/testing/webrtc-browser.js';
import { OpusCodec } from '../../src/media/opus.js';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { FakeDeepgram } from '../../src/testing/fake-deepgram.js';
import { alawToLinear, decodeMulaw, encodeMulaw, MULAW_SILENCE, rms } from '../../src/media/audio.js';
import { HAS_PCAPS, PCAPS, rtpPayloads, speechOnsetMs } from '../sip/sipp-run.js';

type Json = Record<string, unknown>;
type Figures = Record<string, number>;

const LONG =
  'Hello, this is Openline calling about your order number four five six, which we shipped on Monday by ' +
  'express courier, and I would like to confirm the delivery address and the time window that suits you best.';
/** A frame this loud is the agent's voice, not the line's silence. */
const VOICED_RMS = 300;
const SILENT = Buffer.alloc(160, MULAW_SILENCE);

/** Real speech (sipp's g711a.pcap) from where it starts, as mu-law frames a browser would send. */
function speech(ms: number): Buffer[] {
  const pcm = Int16Array.from(Buffer.concat(rtpPayloads(path.join(PCAPS, 'g711a.pcap'))), (b) => alawToLinear(b));
  const from = speechOnsetMs(pcm, 8000)! * 8;
  const audio = encodeMulaw(pcm.subarray(from, from + ms * 8));
  return Array.from({ length: Math.floor(audio.length / 160) }, (_, i) => audio.subarray(i * 160, i * 160 + 160));
}

/**
 * Interruptions on a web call, with werift as the browser (ICE, DTLS-SRTP, PCMU or Opus, the
 * data channel): the person talks over the agent's first sentence 1.5 s after it starts, a whole
 * sentence (the agent stops and the transcript keeps the words played) or an "uh huh" (the agent
 * goes on with the same sentence). The same rule as on SIP and Twilio (src/media/audio-leg.ts),
 * seen here on the audio the browser receives.
 */
describe('web calls: a person talking over the agent', { skip: !HAS_PCAPS && `no sipp pcaps in ${PCAPS}` }, () => {
  let t: TestApp;
  let dg: FakeDeepgram;
  let agentId: string;

  before(async () => {
    dg = await FakeDeepgram.start({ apiKey: 'dg-web' });
    t = await createTestApp({ env: { DEEPGRAM_API_KEY: 'dg-web', OPENLINE_DEEPGRAM_URL: dg.url } });
    await t.services.startWorkers();
    const agent = await t.request('POST', '/v1/agents', {
      prompt: 'Confirm the delivery address.',
      first_sentence: LONG,
    });
    agentId = (agent.body.agent as { agent_id: string }).agent_id;
  });
  after(async () => {
    await t?.close();
    await dg?.close();
  });

  /**
   * A web call whose microphone sends silence, then `words` 1.5 s after the agent's voice starts;
   * hung up once `done` holds. Returns the record and when (ms, on the browser's clock) the agent's
   * voice was heard relative to the caller's onset.
   */
  async function call(
    words: Buffer[],
    said: string,
    done: (record: Json) => boolean,
    codec: OfferedCodec = 'PCMU',
  ): Promise<{ record: Json; figures: Figures; first: string; voicedAfterOnset: number[] }> {
    dg.script(said);
    const { pc, track, channel, sdp } = await browserPeer([codec]);
    // The browser's Opus: its microphone's encoder, its speaker's decoder.
    const opus = codec === 'opus' ? { microphone: new OpusCodec(), speaker: new OpusCodec() } : undefined;
    const played = (payload: Buffer) =>
      opus ? (opus.speaker.decode(payload) ?? new Int16Array(0)) : decodeMulaw(payload);
    let firstVoiced: number | undefined;
    const voiced: number[] = [];
    pc.onTrack.subscribe((remote) =>
      remote.onReceiveRtp.subscribe((rtp) => {
        if (rms(played(rtp.payload)) < VOICED_RMS) return;
        const now = performance.now();
        firstVoiced ??= now;
        voiced.push(now);
      }),
    );
    const started = await t.request('POST', '/v1/web-calls', { agent_id: agentId, sdp });
    assert.equal(started.status, 200, JSON.stringify(started.body));
    const id = String(started.body.call_id);
    await pc.setRemoteDescription({ type: 'answer', sdp: String(started.body.sdp) });

    // The microphone, one frame every 20 ms: silence, the words 1.5 s into the agent's voice, silence.
    let sequence = 1;
    let timestamp = 0;
    let next = performance.now();
    let spoken = 0;
    let onset: number | undefined;
    const deadline = performance.now() + 45_000;
    let finished = false;
    const check = setInterval(() => {
      void t.request('GET', `/v1/calls/${id}`).then((r) => (finished ||= done(r.body)));
    }, 200);
    try {
      while (!finished && performance.now() < deadline) {
        let frame: Buffer = SILENT;
        if (firstVoiced !== undefined && performance.now() - firstVoiced >= 1500 && spoken < words.length) {
          onset ??= performance.now();
          frame = words[spoken++]!;
        }
        const header = new RtpHeader({ payloadType: opus ? 111 : 0, sequenceNumber: sequence, timestamp });
        track.writeRtp(new RtpPacket(header, opus ? opus.microphone.encode(decodeMulaw(frame)) : frame));
        sequence = (sequence + 1) & 0xffff;
        timestamp += opus ? 960 : 160;
        next += 20;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
      }
    } finally {
      clearInterval(check);
    }
    assert.ok(finished, 'the call got that far');
    channel.send(JSON.stringify({ type: 'hangup' }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await pc.close();
    opus?.microphone.close();
    opus?.speaker.close();
    const record = await waitForCall(t, id);
    const first = (record.transcripts as Json[]).find((x) => x.user === 'assistant');
    return {
      record,
      figures: (record.latency as { interruptions: Figures }).interruptions,
      first: String(first?.text),
      voicedAfterOnset: voiced.map((at) => at - onset!),
    };
  }

  for (const codec of ['PCMU', 'opus'] as const)
    it(`a sentence over the agent (${codec}): the browser hears it go quiet, the transcript keeps the words played`, async () => {
      const { figures, first, voicedAfterOnset } = await call(
        speech(3000),
        'Sorry, wait, I have a question about the address.',
        (r) => (r.transcripts as Json[]).some((x) => x.user === 'user'),
        codec,
      );
      assert.ok(first.endsWith('...') && LONG.startsWith(first.slice(0, -3)), first);
      assert.ok(figures.held! >= 1 && figures.cut! >= 1, JSON.stringify(figures));
      assert.ok(voicedAfterOnset.filter((ms) => ms < 0).length >= 25, 'the agent was speaking when the person started');
      const talkedOn = voicedAfterOnset.filter((ms) => ms >= 500 && ms < 2500).length;
      assert.ok(talkedOn <= 2, `the agent went quiet over the person: ${talkedOn} voiced frames after the onset`);
    });

  it('an "uh huh" over the agent: it pauses, then says the same sentence to its end', async () => {
    const { figures, first } = await call(speech(450), 'uh huh', (r) =>
      (r.transcripts as Json[]).some((x) => x.user === 'assistant' && x.text === LONG),
    );
    assert.equal(first, LONG);
    assert.deepEqual(
      [figures.held, figures.resumed, figures.cut, figures.backchannels],
      [1, 1, 0, 1],
      JSON.stringify(figures),
    );
  });
});
