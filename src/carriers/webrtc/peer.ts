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
import { allocPcm, decodeMulawInto, mulawToAlaw, SAMPLE_RATE } from '../../media/audio.js';
import { OPUS_CLOCK_RATE, OpusCodec } from '../../media/opus.js';
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
 * A call whose browser sent no audio for this long is over: browsers send audio without pause
 * while connected (a muted microphone sends silence; the answer never asks for Opus's DTX), so
 * this is a closed tab or a lost network.
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

/**
 * The codecs a web call carries, in the order the server prefers them: Opus (what browsers prefer,
 * with loss concealment), then G.711 for a peer without it. The payload types are the offer's.
 */
const CODECS = [
  new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: OPUS_CLOCK_RATE, channels: 2, payloadType: 111 }),
  new RTCRtpCodecParameters({ mimeType: 'audio/PCMU', clockRate: 8000, channels: 1, payloadType: 0 }),
  new RTCRtpCodecParameters({ mimeType: 'audio/PCMA', clockRate: 8000, channels: 1, payloadType: 8 }),
];
/**
 * Opus's format parameters in the answer (RFC 7587): 10 ms packets at the least. No `useinbandfec`:
 * the decoder cannot use in-band FEC (its WebAssembly build decodes no FEC), so the browser is not
 * asked to spend its bits on it; lost packets are concealed (PLC). No `usedtx`: the browser keeps
 * sending while its user is silent, which tells the server it is still there.
 */
const OPUS_ANSWER_FMTP = 'minptime=10';

/** The audio codecs a web call can carry, as the offer and the answer name them. */
export type WebCallCodec = 'opus' | 'PCMU' | 'PCMA';

/** How the server ranks an offered codec: Opus first, then G.711 (either law, as offered), then the rest. */
function codecRank(name: string): { rank: number; codec?: WebCallCodec } {
  const lower = name.toLowerCase();
  if (lower === 'opus') return { rank: 0, codec: 'opus' };
  if (lower === 'pcmu' || lower === 'pcma') return { rank: 1, codec: lower === 'pcmu' ? 'PCMU' : 'PCMA' };
  return { rank: 2 };
}

/**
 * The offer with its audio's codecs reordered as the server prefers (codecRank; otherwise as
 * offered), in the m= line's payload types and in the order of their rtpmap lines
 * (which WebRTC's stack reads as the offer's): the answer lists the codecs in that order, and the
 * first is what both sides send. Null when the offer's audio has none the server can carry.
 */
export function preferCodecs(offer: string): { sdp: string; codec: WebCallCodec } | null {
  const lines = offer.split(/\r?\n/);
  const start = lines.findIndex((line) => line.startsWith('m=audio '));
  if (start < 0) return null;
  let end = lines.findIndex((line, i) => i > start && line.startsWith('m='));
  if (end < 0) end = lines.length;
  const rtpmaps: { at: number; type: string; rank: number; codec?: WebCallCodec }[] = [];
  for (let at = start + 1; at < end; at++) {
    const map = /^a=rtpmap:(\d+) ([^/\s]+)\//.exec(lines[at]!);
    if (map) rtpmaps.push({ at, type: map[1]!, ...codecRank(map[2]!) });
  }
  const ranked = rtpmaps.toSorted((a, b) => a.rank - b.rank);
  const best = ranked[0]?.codec;
  if (!best) return null;
  const mapped = rtpmaps.map((map) => lines[map.at]!);
  ranked.forEach((map, i) => (lines[rtpmaps[i]!.at] = mapped[rtpmaps.indexOf(map)]!));
  const [media, port, protocol, ...formats] = lines[start]!.trimEnd().split(' ');
  const order = ranked.map((map) => map.type).filter((type) => formats.includes(type));
  lines[start] = [media, port, protocol, ...order, ...formats.filter((type) => !order.includes(type))].join(' ');
  return { sdp: lines.join('\r\n'), codec: best };
}

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
 * One browser's side of a web call: a WebRTC peer connection (ICE, DTLS-SRTP) carrying Opus (or
 * G.711, for a peer without it) both ways as the media port's 20 ms mu-law frames, and the `openline` data channel for JSON messages
 * (the call's events out, the browser's controls in). The browser offers, the server answers once
 * with all its candidates (no trickle), so one HTTP request sets the call up.
 */
export class WebRtcPeer implements MediaTransport {
  private readonly listeners = new Set<MediaListener>();
  private frames = this.receiver();
  private readonly track = new MediaStreamTrack({ kind: 'audio' });
  private channel: RTCDataChannel | undefined;
  /** Messages sent before the browser's channel opened, delivered when it does. */
  private readonly pending: string[] = [];
  private sequence = randomInt(2 ** 16);
  private timestamp = randomInt(2 ** 32);
  private payloadType = 0;
  private sending: WebCallCodec = 'PCMU';
  /** The call's Opus encoder and decoder, when it carries Opus. */
  private opus: OpusCodec | undefined;
  /** Negotiated payload types of G.711: 0 for PCMU, 8 for PCMA (RtpFrames' numbers); Opus's as it is. */
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
        // G.711's static payload types, whatever numbers the offer gave them; Opus's own.
        const type = this.received.get(payloadType);
        if (type !== undefined) this.frames.take({ payloadType: type, sequence, timestamp, payload: rtp.payload });
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

  /** The receive side, decoding Opus when `opus` is given. */
  private receiver(opus?: { codec: OpusCodec; payloadType: number }): RtpFrames {
    const deliver = (payload: Buffer, timestampMs: number) => this.emit({ type: 'media', payload, timestampMs });
    if (!opus) return new RtpFrames(deliver);
    const { codec, payloadType } = opus;
    return new RtpFrames(deliver, undefined, {
      payloadType,
      clockRate: OPUS_CLOCK_RATE,
      decode: (payload) => codec.decode(payload),
      conceal: (samples) => codec.conceal(samples),
    });
  }

  /**
   * Answers a browser's offer: it must carry audio in Opus (the server's choice when offered), PCMU
   * or PCMA. Resolves with the peer and the answer's SDP, carrying the server's candidates.
   */
  static async answer(offer: string, settings: WebRtcConfig): Promise<{ peer: WebRtcPeer; sdp: string }> {
    if (!/^m=audio /m.test(offer)) throw new OfferError('sdp offers no audio');
    const preferred = preferCodecs(offer);
    if (!preferred) throw new OfferError('sdp offers no Opus, PCMU or PCMA audio');
    const pc = new RTCPeerConnection({
      codecs: { audio: CODECS },
      iceServers: settings.iceServers,
      iceUseIpv6: false,
      // Loopback too: a browser on this machine, or a host with no other interface.
      iceAdditionalHostAddresses: ['127.0.0.1'],
      ...(settings.ports && { icePortRange: [settings.ports.min, settings.ports.max] as [number, number] }),
    });
    const peer = new WebRtcPeer(pc);
    pc.onRemoteTransceiverAdded.subscribe((transceiver) => peer.sendOn(transceiver));
    try {
      await pc.setRemoteDescription({ type: 'offer', sdp: preferred.sdp });
    } catch (error) {
      peer.close();
      throw new OfferError(`sdp is not a valid WebRTC offer: ${errorMessage(error)}`);
    }
    peer.negotiated(pc.getTransceivers().find((t) => t.kind === 'audio')?.codecs ?? []);
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
    return { peer, sdp: settings.publicAddress ? announce(sdp, settings.publicAddress) : sdp };
  }

  /**
   * Takes the negotiated codecs (the offer's payload types, the server's preferred first): what is
   * sent is in the first; what comes is taken in any of them.
   */
  private negotiated(codecs: readonly RTCRtpCodecParameters[]): void {
    for (const codec of codecs) {
      const name = codec.mimeType.toLowerCase();
      if (name === 'audio/opus') {
        // The browser decodes in-band FEC when its offer says so (every browser's does): what is sent carries it.
        const fec = /(?:^|;)\s*useinbandfec=1/.test(codec.parameters ?? '');
        codec.parameters = OPUS_ANSWER_FMTP;
        if (this.opus) continue;
        this.opus = new OpusCodec({ fec });
        this.frames.close();
        this.frames = this.receiver({ codec: this.opus, payloadType: codec.payloadType });
        this.received.set(codec.payloadType, codec.payloadType);
      } else this.received.set(codec.payloadType, name === 'audio/pcma' ? 8 : 0);
    }
    const first = codecs[0];
    if (!first) return;
    this.payloadType = first.payloadType;
    this.sending = /opus/i.test(first.mimeType) ? 'opus' : /pcma/i.test(first.mimeType) ? 'PCMA' : 'PCMU';
  }

  /** The codec both sides send (the answer's first). */
  get codec(): WebCallCodec {
    return this.sending;
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
    const opus = this.sending === 'opus' ? this.opus : undefined;
    const body = opus
      ? opus.encode(decodeMulawInto(payload, allocPcm(payload.length)))
      : this.sending === 'PCMA'
        ? mulawToAlaw(payload)
        : payload;
    const header = new RtpHeader({
      payloadType: this.payloadType,
      sequenceNumber: this.sequence,
      timestamp: this.timestamp,
      marker: this.stats.sent === 0,
    });
    this.sequence = (this.sequence + 1) & 0xffff;
    // Opus counts its time at 48 kHz, G.711 at 8 kHz: a sample a byte.
    this.timestamp =
      (this.timestamp + (opus ? (payload.length * OPUS_CLOCK_RATE) / SAMPLE_RATE : payload.length)) >>> 0;
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
    this.opus?.close();
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
