import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RtpHeader, RtpPacket, type RTCPeerConnection } from 'werift';
import { OfferError, WebRtcPeer, preferCodecs } from '../../src/carriers/webrtc/peer.js';
import { browserPeer, type OfferedCodec } from '../../src/testing/webrtc-browser.js';
import { OpusCodec } from '../../src/media/opus.js';
import { FRAME_SAMPLES, decodeMulaw, encodeMulaw, goertzel, rms, tone } from '../../src/media/audio.js';

/** The audio section of a Chromium offer (its codecs, in its order). */
const CHROMIUM_AUDIO = [
  'm=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126',
  'a=rtpmap:111 opus/48000/2',
  'a=rtcp-fb:111 transport-cc',
  'a=fmtp:111 minptime=10;useinbandfec=1',
  'a=rtpmap:63 red/48000/2',
  'a=fmtp:63 111/111',
  'a=rtpmap:9 G722/8000',
  'a=rtpmap:0 PCMU/8000',
  'a=rtpmap:8 PCMA/8000',
  'a=rtpmap:13 CN/8000',
  'a=rtpmap:110 telephone-event/48000',
  'a=rtpmap:126 telephone-event/8000',
];
const offer = (audio: string[]) => ['v=0', 'o=- 1 2 IN IP4 127.0.0.1', 's=-', 't=0 0', ...audio, ''].join('\r\n');
const rtpmaps = (sdp: string) => sdp.split('\r\n').filter((line) => line.startsWith('a=rtpmap:'));

describe('web calls: the audio codec', () => {
  it("Opus is chosen from a browser's offer, with the offer's payload type; G.711 when the offer has no Opus", () => {
    const chromium = preferCodecs(offer(CHROMIUM_AUDIO))!;
    assert.equal(chromium.codec, 'opus');
    assert.match(chromium.sdp, /^m=audio 9 UDP\/TLS\/RTP\/SAVPF 111 0 8 63 9 13 110 126\r$/m);
    assert.deepEqual(rtpmaps(chromium.sdp).slice(0, 3), [
      'a=rtpmap:111 opus/48000/2',
      'a=rtpmap:0 PCMU/8000',
      'a=rtpmap:8 PCMA/8000',
    ]);
    // Opus offered last, under another number, is still the choice.
    const late = preferCodecs(
      offer([
        'm=audio 9 UDP/TLS/RTP/SAVPF 0 8 96',
        'a=rtpmap:0 PCMU/8000',
        'a=rtpmap:8 PCMA/8000',
        'a=rtpmap:96 OPUS/48000/2',
      ]),
    )!;
    assert.equal(late.codec, 'opus');
    assert.match(late.sdp, /^m=audio 9 UDP\/TLS\/RTP\/SAVPF 96 0 8\r$/m);
    // No Opus: G.711 in the law the offer puts first.
    const alaw = preferCodecs(
      offer([
        'm=audio 9 UDP/TLS/RTP/SAVPF 9 8 0',
        'a=rtpmap:9 G722/8000',
        'a=rtpmap:8 PCMA/8000',
        'a=rtpmap:0 PCMU/8000',
      ]),
    )!;
    assert.equal(alaw.codec, 'PCMA');
    assert.match(alaw.sdp, /^m=audio 9 UDP\/TLS\/RTP\/SAVPF 8 0 9\r$/m);
    assert.equal(preferCodecs(offer(['m=audio 9 UDP/TLS/RTP/SAVPF 9', 'a=rtpmap:9 G722/8000'])), null);
    assert.equal(preferCodecs(offer(['m=video 9 UDP/TLS/RTP/SAVPF 96', 'a=rtpmap:96 VP8/90000'])), null);
  });

  for (const [offered, chosen] of [
    [['opus', 'PCMU', 'PCMA'], 'opus'],
    [['PCMU', 'PCMA', 'opus'], 'opus'],
    [['PCMU', 'PCMA'], 'PCMU'],
    [['PCMA'], 'PCMA'],
  ] as [OfferedCodec[], string][]) {
    it(`an offer of ${offered.join(', ')} is answered with ${chosen} first`, async () => {
      const browser = await browserPeer(offered);
      const { peer, sdp } = await WebRtcPeer.answer(browser.sdp, { iceServers: [] });
      try {
        assert.equal(peer.codec, chosen);
        const first = rtpmaps(sdp)[0]!;
        assert.match(first, new RegExp(`^a=rtpmap:\\d+ ${chosen}/`, 'i'));
        if (chosen === 'opus') {
          assert.match(first, /^a=rtpmap:111 opus\/48000\/2$/, "the offer's payload type");
          // The server's own format parameters: no in-band FEC asked of the browser, no DTX.
          assert.match(sdp, /^a=fmtp:111 minptime=10\r$/m);
        } else assert.doesNotMatch(sdp, /opus/i);
      } finally {
        peer.close();
        await browser.pc.close();
      }
    });
  }

  it('an offer with none of Opus, PCMU and PCMA is refused, naming them', async () => {
    const sdp = offer(['m=audio 9 UDP/TLS/RTP/SAVPF 9', 'a=rtpmap:9 G722/8000']);
    await assert.rejects(WebRtcPeer.answer(sdp, { iceServers: [] }), (error: unknown) => {
      assert.ok(error instanceof OfferError);
      assert.match(error.message, /no Opus, PCMU or PCMA/);
      return true;
    });
  });

  it('an Opus call carries audio both ways: the browser’s tone arrives as 8 kHz frames, the agent’s as Opus packets', async () => {
    const browser = await browserPeer(['opus', 'PCMU']);
    const { peer, sdp } = await WebRtcPeer.answer(browser.sdp, { iceServers: [] });
    const microphone = new OpusCodec();
    const speaker = new OpusCodec();
    const pcs: RTCPeerConnection[] = [browser.pc];
    try {
      const heard: Buffer[] = [];
      peer.on((event) => event.type === 'media' && heard.push(event.payload));
      const received: { payloadType: number; pcm: Int16Array }[] = [];
      browser.pc.onTrack.subscribe((track) =>
        track.onReceiveRtp.subscribe((rtp) =>
          received.push({ payloadType: rtp.header.payloadType, pcm: speaker.decode(rtp.payload) ?? new Int16Array(0) }),
        ),
      );
      await browser.pc.setRemoteDescription({ type: 'answer', sdp });
      assert.equal(await peer.connected, true);
      // 1 s each way: the browser says 440 Hz, the agent 1 kHz.
      const caller = tone([440], 1000);
      const agent = encodeMulaw(tone([1000], 1000));
      for (let i = 0; i < 50; i++) {
        const at = i * FRAME_SAMPLES;
        const header = new RtpHeader({ payloadType: 111, sequenceNumber: i, timestamp: i * 960 });
        browser.track.writeRtp(new RtpPacket(header, microphone.encode(caller.subarray(at, at + FRAME_SAMPLES))));
        peer.sendMedia(agent.subarray(at, at + FRAME_SAMPLES));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await new Promise((resolve) => setTimeout(resolve, 200));

      // Each 20 ms of the tone arrives whole (a stalled test machine may add frames of silence between).
      const toneFrames = (frames: Int16Array[], hz: number) =>
        frames.filter((pcm) => rms(pcm) > 1000 && goertzel(pcm, hz) > 0.9).length;
      assert.ok(heard.every((frame) => frame.length === FRAME_SAMPLES));
      const callerFrames = toneFrames(heard.map(decodeMulaw), 440);
      assert.ok(callerFrames >= 45, `the caller's 440 Hz in ${callerFrames} frames of 50`);

      assert.ok(received.every((packet) => packet.payloadType === 111));
      const agentFrames = toneFrames(
        received.map((packet) => packet.pcm),
        1000,
      );
      assert.ok(agentFrames >= 45, `the agent's 1 kHz in ${agentFrames} packets of 50`);
      assert.equal(peer.stats.sent, 50);
    } finally {
      peer.close();
      microphone.close();
      speaker.close();
      for (const pc of pcs) await pc.close();
    }
  });
});
