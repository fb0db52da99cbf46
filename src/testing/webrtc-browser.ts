import { MediaStreamTrack, RTCPeerConnection, RTCRtpCodecParameters, type RTCDataChannel } from 'werift';

/** A browser's side of a web call, for tests and bench:webrtc, made by a real WebRTC stack (werift). */
export interface BrowserPeer {
  pc: RTCPeerConnection;
  /** The microphone: what is written to it goes to the server as RTP. */
  track: MediaStreamTrack;
  /** The `openline` data channel. */
  channel: RTCDataChannel;
  /** The offer, with every candidate (no trickle), for POST /v1/web-calls. */
  sdp: string;
}

/** What a browser's offer may carry, in its order: a browser's Opus (payload type 111, with in-band FEC), PCMU, PCMA. */
export type OfferedCodec = 'opus' | 'PCMU' | 'PCMA';

const OFFERED = {
  opus: () =>
    new RTCRtpCodecParameters({
      mimeType: 'audio/opus',
      clockRate: 48_000,
      channels: 2,
      payloadType: 111,
      parameters: 'minptime=10;useinbandfec=1',
    }),
  PCMU: () => new RTCRtpCodecParameters({ mimeType: 'audio/PCMU', clockRate: 8000, channels: 1, payloadType: 0 }),
  PCMA: () => new RTCRtpCodecParameters({ mimeType: 'audio/PCMA', clockRate: 8000, channels: 1, payloadType: 8 }),
};

/**
 * Makes a browser's offer: audio both ways (PCMU unless `codecs` says otherwise) and the data
 * channel, its candidates gathered.
 */
export async function browserPeer(codecs: readonly OfferedCodec[] = ['PCMU']): Promise<BrowserPeer> {
  const pc = new RTCPeerConnection({
    // One transport for audio and data, as browsers bundle them (werift leaves a second one open).
    bundlePolicy: 'max-bundle',
    codecs: { audio: codecs.map((codec) => OFFERED[codec]()) },
    iceUseIpv6: false,
    // No STUN server (werift asks a public one by default): loopback only.
    iceServers: [],
  });
  const track = new MediaStreamTrack({ kind: 'audio' });
  pc.addTransceiver(track, { direction: 'sendrecv' });
  const channel = pc.createDataChannel('openline');
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise<void>((resolve) => {
    if (pc.iceGatheringState === 'complete') return resolve();
    pc.iceGatheringStateChange.subscribe((state) => state === 'complete' && resolve());
  });
  return { pc, track, channel, sdp: pc.localDescription!.sdp };
}
