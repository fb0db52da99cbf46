import { randomInt } from 'node:crypto';
import {
  MediaStreamTrack,
  RTCPeerConnection,
  RTCRtpCodecParameters,
  RtpHeader,
  RtpPacket,
  type RTCDataChannel,
  type RTCRtpTransceiver,
} from 'werift';
import type { WebRtcConfig } from '../../config.js';
import { mulawToAlaw } from '../../media/audio.js';
import { RtpFrames } from '../../media/rtp-frames.js';
import type { MediaEvent, MediaListener, MediaTransport } from '../../media/transport.js';
import { errorMessage } from '../../domain/records.js';
import type { WebCallMessage } from './service.js';

/** The label of the data channel the browser opens for the call's events and controls. */
export const EVENTS_CHANNEL = 'openline';
/** How long the answer waits for the server's own candidates (host ones take milliseconds; STUN more). */
const GATHER_TIMEOUT_MS = 3000;
/** How long a browser has to connect and send its first audio. */
const CONNECT_TIMEOUT_MS = 10_000;
/** The error of a call whose browser never got its audio through. */
const NEVER_CONNECTED =
  "The browser's audio never reached the server within 10 s (ICE or DTLS-SRTP did not complete): " +
  'the WebRTC UDP ports (OPENLINE_WEBRTC_PORTS) must be reachable from the browser';
/** How long a connection may stay disconnected (ICE consent lost) before the call ends. */
const DISCONNECTED_GRACE_MS = 5000;
/**
 * A call whose browser sent no audio for this long is over: browsers send G.711 without pause
 * while connected (a muted microphone sends silence), so this is a closed tab or a lost network.
 */
const SILENT_TIMEOUT_MS = 4000;
/**
 * How often the server says `{"type":"heartbeat"}` on the data channel: the browser's side of the
 * watchdog above. The server sends audio only while the agent speaks, so without it a page would
 * learn that the server or the network is gone only from ICE, many seconds later.
 */
export const HEARTBEAT_MS = 1000;

/** A browser's offer that cannot become a call, with the reason the API reports for `sdp`. */
export class OfferError extends Error {}

/** No candidate could be gathered (every port of OPENLINE_WEBRTC_PORTS taken): no browser could reach the answer. */
export class NoCandidatesError extends Error {}

const G711 = [
  new RTCRtpCodecParameters({ mimeType: 'audio/PCMU', clockRate: 8000, channels: 1, payloadType: 0 }),
  new RTCRtpCodecParameters({ mimeType: 'audio/PCMA', clockRate: 8000, channels: 1, payloadType: 8 }),
];

/** Adds `address` next to every host candidate of `sdp` (the NAT's outside address, same port). */
export function announce(sdp: string, address: string): string {
  return sdp.replace(
    /^a=candidate:(\S+) (\d) (udp|tcp) (\d+) (\S+) (\d+) typ host(.*)$/gim,
    (
      line,
      foundation: string,
      component: string,
      protocol: string,
      priority: string,
      _ip,
      port: string,
      rest: string,
    ) =>
      `${line}\r\na=candidate:${foundation}1 ${component} ${protocol} ${Number(priority) - 1} ${address} ${port} typ host${rest}`,
  );
}

/**
 * One browser's side of a web call: a WebRTC peer connection (ICE, DTLS-SRTP) carrying G.711 both
 * ways as the media port's 20 ms mu-law frames, and the `openline` data channel for JSON messages
 * (the call's events out, the browser's controls in). The browser offers, the server answers once
 * with all its candidates (no trickle), so one HTTP request sets the call up.
 */
export class WebRtcPeer implements MediaTransport {
  private readonly listeners = new Set<MediaListener>();
  private readonly frames = new RtpFrames((payload, timestampMs) => this.emit({ type: 'media', payload, timestampMs }));
  private readonly track = new MediaStreamTrack({ kind: 'audio' });
  private channel: RTCDataChannel | undefined;
  /** Messages sent before the browser's channel opened, delivered when it does. */
  private readonly pending: string[] = [];
  private sequence = randomInt(2 ** 16);
  private timestamp = randomInt(2 ** 32);
  private payloadType = 0;
  /** Negotiated payload types of G.711: 0 for PCMU, 8 for PCMA (RtpFrames' numbers). */
  private readonly received = new Map<number, number>([
    [0, 0],
    [8, 8],
  ]);
  private readonly created = Date.now();
  /** When the browser's audio last arrived; undefined until its first packet. */
  private lastHeard: number | undefined;
  private closed = false;
  private settleConnected!: (up: boolean) => void;
  /**
   * True once ICE and DTLS-SRTP are up, so that what is sent reaches the browser; false when the
   * peer stopped before. Audio sent earlier is lost: the call starts talking only then.
   */
  readonly connected = new Promise<boolean>((resolve) => (this.settleConnected = resolve));
  private readonly watchdog: NodeJS.Timeout;
  private heartbeat: NodeJS.Timeout | undefined;
  /** Audio packets received from and sent to the browser. */
  readonly stats = { received: 0, sent: 0 };

  private constructor(private readonly pc: RTCPeerConnection) {
    pc.connectionStateChange.subscribe((state) => {
      if (state === 'connected') this.settleConnected(true);
      if (state === 'failed' || state === 'closed')
        this.stop('network', this.lastHeard === undefined ? NEVER_CONNECTED : undefined);
    });
    // ICE consent lost (the browser went away without a word): a short grace for a network blip.
    let lost: NodeJS.Timeout | undefined;
    pc.iceConnectionStateChange.subscribe((state) => {
      clearTimeout(lost);
      if (state === 'disconnected') lost = setTimeout(() => this.stop('network'), DISCONNECTED_GRACE_MS);
    });
    pc.onDataChannel.subscribe((channel) => {
      if (channel.label === EVENTS_CHANNEL) this.useChannel(channel);
    });
    pc.onTrack.subscribe((track) =>
      track.onReceiveRtp.subscribe((rtp) => {
        if (this.closed) return;
        this.lastHeard = Date.now();
        this.stats.received++;
        const { payloadType, sequenceNumber: sequence, timestamp } = rtp.header;
        // G.711's static payload types, whatever numbers the offer gave them.
        const g711 = this.received.get(payloadType);
        if (g711 !== undefined) this.frames.take({ payloadType: g711, sequence, timestamp, payload: rtp.payload });
      }),
    );
    // The person left (most often by closing the tab): the call ends as their hang-up. Until the
    // audio first flows, the connection has longer (ICE through TURN can take seconds).
    this.watchdog = setInterval(() => {
      if (this.lastHeard === undefined) {
        if (Date.now() - this.created > CONNECT_TIMEOUT_MS) this.stop('network', NEVER_CONNECTED);
      } else if (Date.now() - this.lastHeard > SILENT_TIMEOUT_MS) this.stop('remote');
    }, 500);
    this.watchdog.unref();
  }

  /**
   * Answers a browser's offer: it must carry audio in PCMU or PCMA (every browser offers both).
   * Resolves with the peer and the answer's SDP, carrying the server's candidates.
   */
  static async answer(offer: string, settings: WebRtcConfig): Promise<{ peer: WebRtcPeer; sdp: string }> {
    if (!/^m=audio /m.test(offer)) throw new OfferError('sdp offers no audio');
    if (!/^a=rtpmap:\d+ (PCMU|PCMA)\/8000/im.test(offer))
      throw new OfferError('sdp offers neither PCMU nor PCMA audio');
    const pc = new RTCPeerConnection({
      codecs: { audio: G711 },
      iceServers: settings.iceServers,
      iceUseIpv6: false,
      // Loopback too: a browser on this machine, or a host with no other interface.
      iceAdditionalHostAddresses: ['127.0.0.1'],
      ...(settings.ports && { icePortRange: [settings.ports.min, settings.ports.max] as [number, number] }),
    });
    const peer = new WebRtcPeer(pc);
    pc.onRemoteTransceiverAdded.subscribe((transceiver) => peer.sendOn(transceiver));
    try {
      await pc.setRemoteDescription({ type: 'offer', sdp: offer });
    } catch (error) {
      peer.close();
      throw new OfferError(`sdp is not a valid WebRTC offer: ${errorMessage(error)}`);
    }
    const gathered = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, GATHER_TIMEOUT_MS);
      pc.iceGatheringStateChange.subscribe((state) => {
        if (state === 'complete') {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    await pc.setLocalDescription(await pc.createAnswer());
    if (pc.iceGatheringState !== 'complete') await gathered;
    const sdp = pc.localDescription?.sdp ?? '';
    if (peer.closed || !/^a=candidate:/m.test(sdp)) {
      peer.close();
      const range = settings.ports ? `: every port of OPENLINE_WEBRTC_PORTS is taken` : '';
      throw new NoCandidatesError(`WebRTC could bind no UDP port${range}; retry later`);
    }
    const codecs = pc.getTransceivers().find((t) => t.kind === 'audio')?.codecs ?? [];
    for (const codec of codecs) peer.received.set(codec.payloadType, /pcma/i.test(codec.mimeType) ? 8 : 0);
    peer.payloadType = codecs[0]?.payloadType ?? 0;
    return { peer, sdp: settings.publicAddress ? announce(sdp, settings.publicAddress) : sdp };
  }

  private sendOn(transceiver: RTCRtpTransceiver): void {
    if (transceiver.kind !== 'audio') return;
    void transceiver.sender.replaceTrack(this.track);
    transceiver.setDirection('sendrecv');
  }

  private useChannel(channel: RTCDataChannel): void {
    this.channel = channel;
    channel.onMessage.subscribe((data) => {
      let message: unknown;
      try {
        message = JSON.parse(String(data));
      } catch {
        return;
      }
      // The browser's controls (docs/web-calls.md): hang up, or a key of its keypad.
      if (typeof message !== 'object' || message === null) return;
      const { type, digit } = message as { type?: unknown; digit?: unknown };
      if (type === 'hangup') this.stop('remote');
      else if (type === 'dtmf' && typeof digit === 'string' && /^[0-9*#]$/.test(digit)) this.dtmf(digit);
    });
    // The browser closed its connection (hang-up, a closed tab): its channel closes with it.
    channel.stateChanged.subscribe((state) => {
      if (state === 'closed') this.stop('remote');
    });
    const opened = () => {
      if (this.closed || this.heartbeat) return;
      for (const text of this.pending.splice(0)) channel.send(text);
      const beat = () => {
        if (channel.readyState === 'open') channel.send('{"type":"heartbeat"}');
      };
      beat();
      this.heartbeat = setInterval(beat, HEARTBEAT_MS);
      this.heartbeat.unref();
    };
    // The channel may be announced open already.
    if (channel.readyState === 'open') opened();
    else
      channel.stateChanged.subscribe((state) => {
        if (state === 'open') opened();
      });
  }

  on(listener: MediaListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Sends one JSON message to the browser (queued until its data channel is open). */
  send(message: WebCallMessage): void {
    if (this.closed) return;
    const text = JSON.stringify(message);
    if (this.channel?.readyState === 'open') this.channel.send(text);
    else this.pending.push(text);
  }

  sendMedia(payload: Buffer): void {
    if (this.closed) return;
    const body = this.payloadType === 8 ? mulawToAlaw(payload) : payload;
    const header = new RtpHeader({
      payloadType: this.payloadType,
      sequenceNumber: this.sequence,
      timestamp: this.timestamp,
      marker: this.stats.sent === 0,
    });
    this.sequence = (this.sequence + 1) & 0xffff;
    this.timestamp = (this.timestamp + payload.length) >>> 0;
    this.stats.sent++;
    this.track.writeRtp(new RtpPacket(header, body));
  }

  /** The browser plays what it is sent as it arrives (frames are paced here at 20 ms): played means sent. */
  sendMark(name: string): void {
    setImmediate(() => this.emit({ type: 'mark', name }));
  }

  /** Nothing waits in the browser beyond its jitter buffer: the local pacer holds the rest. */
  clear(): void {}

  /** A key the browser pressed (its keypad sends them on the data channel). */
  dtmf(digit: string): void {
    if (!this.closed) this.emit({ type: 'dtmf', digit });
  }

  /** The call was refused: the signalling request's error answer tells the browser why. */
  refuse(): void {
    this.close();
  }

  /** Ends the call from our side: the browser is told, then the connection closes. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.settleConnected(false);
    clearInterval(this.watchdog);
    clearInterval(this.heartbeat);
    this.frames.close();
    // The last message has a moment to leave before the transport goes.
    setTimeout(() => void this.pc.close().catch(() => undefined), 200).unref();
  }

  /** The browser is gone (it hung up, or the connection failed): the last event, then the close. */
  stop(reason: 'remote' | 'network', error?: string): void {
    if (this.closed) return;
    this.emit({ type: 'stop', reason, ...(error !== undefined && { error }) });
    this.close();
  }

  private emit(event: MediaEvent): void {
    for (const listener of this.listeners) listener(event);
  }
}
