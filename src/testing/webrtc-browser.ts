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

/** Makes a browser's offer: PCMU audio both ways and the data channel, its candidates gathered. */
export async function browserPeer(): Promise<BrowserPeer> {
  const pc = new RTCPeerConnection({
    // One transport for audio and data, as browsers bundle them (werift leaves a second one open).
    bundlePolicy: 'max-bundle',
    codecs: { audio: [new RTCRtpCodecParameters({ mimeType: 'audio/PCMU', clockRate: 8000, channels: 1 })] },
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
