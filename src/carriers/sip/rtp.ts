import dgram from 'node:dgram';
import { randomInt } from 'node:crypto';
import { FRAME_SAMPLES, alawToMulaw, mulawToAlaw, mulawToAlawInto } from '../../media/audio.js';
import { RtpFrames } from '../../media/rtp-frames.js';
import type { MediaEvent, MediaListener, MediaTransport } from '../../media/transport.js';
import { udpLookup } from './lookup.js';
import { SrtpContext, rtpHeaderLength, type SrtpKeys } from './srtp.js';

/**
 * RTP (RFC 3550) for one call: G.711 audio both ways over UDP as the media port's 20 ms mu-law
 * frames, RFC 4733 telephone-events both ways, and the small jitter handling a phone line needs (late and
 * repeated packets dropped, a short gap filled with silence so the audio keeps its timing), as
 * SRTP (src/carriers/sip/srtp.ts) when the SDP gave keys.
 */

export interface RtpCodec {
  /** PCMU (payload type 0) or PCMA (8). */
  name: 'PCMU' | 'PCMA';
  payloadType: number;
  /** The telephone-event payload type the far end offered or accepted, if any. */
  dtmfPayloadType?: number;
}

/** The telephone-event payload type of Openline's SDP offers (src/carriers/sip/sdp.ts). */
export const OFFERED_DTMF_PAYLOAD_TYPE = 101;

/**
 * Whether a packet of this payload type from the far end is an RFC 4733 event: the far end's
 * telephone-event type, or Openline's own when it has telephone-events at all (a far end that
 * answered our offer with another number sends under the offer's, RFC 3264 section 6.1).
 */
const isTelephoneEvent = (payloadType: number, codec: RtpCodec): boolean =>
  codec.dtmfPayloadType !== undefined &&
  (payloadType === codec.dtmfPayloadType || payloadType === OFFERED_DTMF_PAYLOAD_TYPE);

export interface RtpPacket {
  payloadType: number;
  marker: boolean;
  sequence: number;
  timestamp: number;
  ssrc: number;
  payload: Buffer;
}

/** Reads an RTP packet; undefined for anything that is not one (RTCP, STUN, garbage). */
export function parseRtp(data: Buffer): RtpPacket | undefined {
  const offset = rtpHeaderLength(data);
  if (offset === undefined || isRtcp(data)) return undefined;
  const padding = (data[0]! & 0x20) !== 0;
  const payloadType = data[1]! & 0x7f;
  let end = data.length;
  if (padding) end -= data[data.length - 1]!;
  if (offset > end) return undefined;
  return {
    payloadType,
    marker: (data[1]! & 0x80) !== 0,
    sequence: data.readUInt16BE(2),
    timestamp: data.readUInt32BE(4),
    ssrc: data.readUInt32BE(8),
    payload: data.subarray(offset, end),
  };
}

/** RTCP shares the port on rtcp-mux: its packet types 200-204 land on payload types 72-76. */
function isRtcp(data: Buffer): boolean {
  const payloadType = data[1]! & 0x7f;
  return payloadType >= 72 && payloadType <= 76;
}

export function writeRtp(packet: RtpPacket): Buffer {
  const out = Buffer.allocUnsafe(12 + packet.payload.length);
  writeRtpHeader(out, packet);
  packet.payload.copy(out, 12);
  return out;
}

/** The 12 bytes of an RTP header (no CSRC, no extension) at the start of `out`. */
function writeRtpHeader(out: Buffer, header: Omit<RtpPacket, 'payload'>): void {
  out[0] = 0x80;
  out[1] = (header.marker ? 0x80 : 0) | (header.payloadType & 0x7f);
  out.writeUInt16BE(header.sequence & 0xffff, 2);
  out.writeUInt32BE(header.timestamp >>> 0, 4);
  out.writeUInt32BE(header.ssrc >>> 0, 8);
}

/** The keys of RFC 4733's event codes 0 to 15 (10 is *, 11 #, 12 to 15 A to D). */
export const DTMF_EVENTS = '0123456789*#ABCD';

/**
 * How many packets in a row, with one SSRC, another source must send (while the call's own
 * source sends none) before the call's RTP follows it: a forged packet or two never takes the
 * call over ("RTP bleed"), a far end that really moved does within 100 ms.
 */
export const SOURCE_SWITCH_PACKETS = 5;

type Address = { address: string; port: number };
const sameAddress = (a: Address, b: Address) => a.address === b.address && a.port === b.port;

export interface PortRange {
  min: number;
  max: number;
}

/** Binds a UDP socket on an even port of the range (RTP's convention; RTCP would take the next odd one). */
async function bindInRange(host: string, range: PortRange): Promise<dgram.Socket> {
  const evens = Math.floor((range.max - range.min) / 2) + 1;
  const first = randomInt(evens);
  for (let i = 0; i < Math.min(evens, 64); i++) {
    const port = range.min + ((first + i) % evens) * 2;
    const socket = dgram.createSocket({ type: host.includes(':') ? 'udp6' : 'udp4', lookup: udpLookup });
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind(port, host, () => {
          socket.off('error', reject);
          resolve();
        });
      });
      return socket;
    } catch {
      socket.close();
    }
  }
  throw new Error(`no free RTP port in ${range.min}-${range.max}`);
}

export class RtpSession implements MediaTransport {
  private readonly listeners = new Set<MediaListener>();
  private remote: Address | undefined;
  /** The far end's address in its SDP (connect()): a new one lets the next packet's source be the call's again. */
  private described: Address | undefined;
  /** Where the call's RTP comes from: the first packet's source, then only a new one that proved itself. */
  private source: Address | undefined;
  /** Another source sending meanwhile: its SSRC, and how many packets in a row. */
  private candidate: (Address & { ssrc: number; count: number }) | undefined;
  private codec: RtpCodec = { name: 'PCMU', payloadType: 0 };
  private readonly ssrc = randomInt(2 ** 32);
  private sequence = randomInt(2 ** 16);
  private timestamp = randomInt(2 ** 32);
  private firstSent = true;
  private readonly frames = new RtpFrames((payload, timestampMs) => {
    // Bridged, the agent hears nothing (not even the silence of a quiet line).
    if (this.bridged) return;
    const defer = this.options.defer;
    // The silence of a quiet line comes from a timer, not from received(): its frames' work is
    // deferred as a packet's is, behind the packets already waiting.
    if (defer && !this.receiving) defer(() => this.closed || this.bridged || this.emitMedia(payload, timestampMs));
    else this.emitMedia(payload, timestampMs);
  });
  /** received() is delivering a packet's frames. */
  private receiving = false;
  private lastDtmf: number | undefined;
  /** The key being sent as an RFC 4733 event: its RTP timestamp and duration so far (samples). */
  private keyEvent: { timestamp: number; duration: number } | undefined;
  private lastHeard = Date.now();
  private closed = false;
  /** Early media (before the answer): packets counted, their audio not passed on. */
  private early = false;
  /** The far end takes our media (not while it holds the call): else nothing is sent. */
  private sending = true;
  /** The far end sends media (not while it is on hold, inactive): else the RTP timeout waits. */
  private expecting = true;
  private readonly watchdog: NodeJS.Timeout;
  /**
   * The call this one is bridged with (a transfer SIP made itself): packets go from one to the
   * other, and the agent's audio (sendMedia, sendKey) goes nowhere, nor does the far end's reach it.
   */
  private bridged: RtpSession | undefined;
  /** Packets received and sent. */
  readonly stats = { received: 0, sent: 0 };
  /** SRTP both ways, when the SDP gave keys: what is sent is protected, what comes unprotected (or dropped). */
  private srtp: { send: SrtpContext; receive: SrtpContext } | undefined;

  private constructor(
    private readonly socket: dgram.Socket,
    private readonly options: {
      timeoutMs: number;
      latch: boolean;
      defer: ((task: () => void) => void) | undefined;
    },
  ) {
    socket.on('message', (data, from) => this.onPacket(data, from));
    socket.on('error', () => this.stop('network'));
    this.watchdog = setInterval(() => {
      if (this.remote && !this.early && this.expecting && Date.now() - this.lastHeard > this.options.timeoutMs)
        this.stop('network');
    }, 1000);
    this.watchdog.unref();
  }

  static async open(
    host: string,
    range: PortRange,
    options: {
      timeoutMs?: number;
      latch?: boolean;
      /**
       * Where the work on the audio received goes (the frames, the leg's listening: VAD,
       * recognition, the echo guard): FrameScheduler.defer, so a burst of packets never holds up
       * the frames every call sends. Default: done as each packet is read.
       */
      defer?: (task: () => void) => void;
    } = {},
  ): Promise<RtpSession> {
    return new RtpSession(await bindInRange(host, range), {
      timeoutMs: options.timeoutMs ?? 30_000,
      latch: options.latch ?? true,
      defer: options.defer,
    });
  }

  get port(): number {
    return this.socket.address().port;
  }

  /**
   * Where to send, and in which codec: from the far end's SDP. `early`: the SDP of a provisional
   * response (early media: ringback, announcements): its packets are taken (and latched onto) but
   * their audio goes nowhere, and the RTP timeout waits, until the answer connects again.
   * `send` false: the far end holds the call (a=sendonly, inactive, c=0.0.0.0), nothing is sent to
   * it; `expectMedia` false: it sends nothing (a=recvonly, inactive), the RTP timeout waits.
   * `srtp`: the keys of SRTP, both ways (none: plain RTP); the same keys again keep each
   * direction's rollover counter and replay window.
   */
  connect(
    remote: Address,
    codec: RtpCodec,
    options: { early?: boolean; send?: boolean; expectMedia?: boolean; srtp?: SrtpKeys } = {},
  ): void {
    const keys = options.srtp;
    this.srtp = keys && {
      send: this.srtp?.send.key.equals(keys.send) ? this.srtp.send : new SrtpContext(keys.send),
      receive: this.srtp?.receive.key.equals(keys.receive) ? this.srtp.receive : new SrtpContext(keys.receive),
    };
    this.sending = options.send !== false;
    this.expecting = options.expectMedia !== false;
    if (!this.described || !sameAddress(this.described, remote)) {
      this.source = undefined;
      this.candidate = undefined;
    }
    this.described = remote;
    this.remote = this.source && this.options.latch ? this.source : remote;
    this.codec = codec;
    this.early = options.early === true;
    this.lastHeard = Date.now();
  }

  /** Seconds since the last packet arrived (the RTP timeout ends calls that went silent on the wire). */
  get silentMs(): number {
    return Date.now() - this.lastHeard;
  }

  on(listener: MediaListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  sendMedia(payload: Buffer): void {
    if (this.closed || !this.remote || this.bridged || !this.sending) return;
    // One buffer per packet: the header, then the frame (re-encoded in place for PCMA).
    const packet = Buffer.allocUnsafe(12 + payload.length);
    writeRtpHeader(packet, {
      payloadType: this.codec.payloadType,
      marker: this.firstSent,
      sequence: this.sequence,
      timestamp: this.timestamp,
      ssrc: this.ssrc,
    });
    if (this.codec.name === 'PCMA') mulawToAlawInto(payload, packet, 12);
    else payload.copy(packet, 12);
    this.firstSent = false;
    this.sequence = (this.sequence + 1) & 0xffff;
    this.timestamp = (this.timestamp + payload.length) >>> 0;
    this.stats.sent++;
    this.transmit(packet, this.remote);
  }

  /** A packet to the far end: as it is, or protected when the call is SRTP. */
  private transmit(packet: Buffer, to: Address): void {
    this.socket.send(this.srtp ? this.srtp.send.protect(packet) : packet, to.port, to.address);
  }

  /**
   * A frame of a key the agent presses, as an RFC 4733 event when the far end negotiated
   * telephone-event: the event's packets share the timestamp of its start, carry the duration so
   * far, and its end goes three times (the redundancy RFC 4733 asks for); the audio's timestamps
   * go on after the event's duration. Without telephone-event: false (the tone goes in-band).
   */
  sendKey(digit: string, part: { first: boolean; last: boolean }): boolean {
    const payloadType = this.codec.dtmfPayloadType;
    const event = DTMF_EVENTS.indexOf(digit.toUpperCase());
    if (payloadType === undefined || event < 0) return false;
    if (this.closed || !this.remote || this.bridged || !this.sending) return true;
    if (part.first || !this.keyEvent) this.keyEvent = { timestamp: this.timestamp, duration: 0 };
    const key = this.keyEvent;
    key.duration += FRAME_SAMPLES;
    const send = (end: boolean, marker: boolean) => {
      const payload = Buffer.alloc(4);
      payload[0] = event;
      // E bit, then the volume: -10 dBm0.
      payload[1] = (end ? 0x80 : 0) | 10;
      payload.writeUInt16BE(Math.min(key.duration, 0xffff), 2);
      const packet = writeRtp({
        payloadType,
        marker,
        sequence: this.sequence,
        timestamp: key.timestamp,
        ssrc: this.ssrc,
        payload,
      });
      this.sequence = (this.sequence + 1) & 0xffff;
      this.stats.sent++;
      this.transmit(packet, this.remote!);
    };
    if (!part.last) {
      send(false, part.first);
    } else {
      for (let i = 0; i < 3; i++) send(true, part.first && i === 0);
      this.timestamp = (key.timestamp + key.duration) >>> 0;
      this.keyEvent = undefined;
    }
    this.firstSent = false;
    return true;
  }

  /**
   * Bridges the two calls' media both ways: each packet of one goes to the other as it comes, its
   * audio converted when the two negotiated different codecs (PCMU, PCMA), its RFC 4733 events
   * under the other's telephone-event payload type (dropped when the other has none).
   */
  bridge(other: RtpSession): void {
    this.bridged = other;
    other.bridged = this;
  }

  /** A packet of the bridged call, sent on to this one's far end under its stream's numbers. */
  private relay(packet: RtpPacket, from: RtpCodec): void {
    if (this.closed || !this.remote || !this.sending) return;
    let payloadType: number;
    let payload = packet.payload;
    if (isTelephoneEvent(packet.payloadType, from)) {
      if (this.codec.dtmfPayloadType === undefined) return;
      payloadType = this.codec.dtmfPayloadType;
    } else if (packet.payloadType === 0 || packet.payloadType === 8) {
      payloadType = this.codec.payloadType;
      if (packet.payloadType === 0 && this.codec.name === 'PCMA') payload = mulawToAlaw(payload);
      else if (packet.payloadType === 8 && this.codec.name === 'PCMU') payload = alawToMulaw(payload);
    } else return;
    const out = writeRtp({ ...packet, payloadType, payload });
    this.stats.sent++;
    this.transmit(out, this.remote);
  }

  /** RTP plays what it is sent as it arrives (frames are paced here at 20 ms): played means sent. */
  sendMark(name: string): void {
    setImmediate(() => this.emit({ type: 'mark', name }));
  }

  /** Nothing waits at the far end beyond its jitter buffer: the local pacer holds the rest. */
  clear(): void {}

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.watchdog);
    this.frames.close();
    this.socket.close();
  }

  /** The far end is gone (BYE, or the RTP timeout): the last event, then the socket closes. */
  stop(reason: 'remote' | 'network'): void {
    if (this.closed) return;
    this.emit({ type: 'stop', reason });
    this.close();
  }

  /** A key the far end signalled out of the media (SIP INFO). */
  dtmf(digit: string): void {
    if (!this.closed && !this.bridged) this.emit({ type: 'dtmf', digit });
  }

  private emit(event: MediaEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  private onPacket(data: Buffer, from: dgram.RemoteInfo): void {
    if (this.closed) return;
    // SRTP: a packet that fails authentication (forged, replayed, plain) is not the call's at all.
    const plain = this.srtp && data.length >= 2 && !isRtcp(data) ? this.srtp.receive.unprotect(data) : data;
    const parsed = plain && parseRtp(plain);
    if (!parsed || !this.fromSource(from, parsed.ssrc)) return;
    const packet = this.asStaticType(parsed);
    this.lastHeard = Date.now();
    this.stats.received++;
    // Ringback and announcements before the answer are no one speaking: nothing hears them.
    if (this.early) return;
    if (this.bridged) return this.bridged.relay(packet, this.codec);
    const defer = this.options.defer;
    if (!defer) return this.received(packet);
    // The line is not quiet while its packets wait for their turn.
    this.frames.arrived(packet);
    defer(() => this.received(packet));
  }

  /**
   * A packet under the payload type the SDP gave the call's G.711 codec, as that codec's static
   * type (0 PCMU, 8 PCMA), the one the receive side and the bridge know: an offer may put G.711
   * under a dynamic number (`a=rtpmap:96 PCMU/8000`), and the answer keeps it (RFC 3264 section 6.1).
   */
  private asStaticType(packet: RtpPacket): RtpPacket {
    const { name, payloadType } = this.codec;
    if (packet.payloadType !== payloadType || payloadType === 0 || payloadType === 8) return packet;
    return { ...packet, payloadType: name === 'PCMA' ? 8 : 0 };
  }

  /**
   * Whether a packet comes from the call's source, which the first packet sets (symmetric RTP:
   * behind NAT, media comes from, and must go to, another address than the SDP's). Another source
   * becomes the call's only after SOURCE_SWITCH_PACKETS packets in a row with one SSRC, none from
   * the current source meanwhile; until then its packets are dropped.
   */
  private fromSource(from: Address, ssrc: number): boolean {
    const address = { address: from.address, port: from.port };
    if (this.source && sameAddress(this.source, address)) {
      this.candidate = undefined;
      return true;
    }
    if (this.source) {
      const candidate = this.candidate;
      if (candidate && sameAddress(candidate, address) && candidate.ssrc === ssrc) candidate.count++;
      else this.candidate = { ...address, ssrc, count: 1 };
      if (this.candidate!.count < SOURCE_SWITCH_PACKETS) return false;
      this.candidate = undefined;
    }
    this.source = address;
    if (this.options.latch && this.remote) this.remote = address;
    return true;
  }

  /** A packet's audio or key, for the listeners: in the order the packets came, none after close. */
  private received(packet: RtpPacket): void {
    if (this.closed) return;
    if (isTelephoneEvent(packet.payloadType, this.codec)) return this.onTelephoneEvent(packet);
    this.receiving = true;
    try {
      this.frames.take(packet);
    } finally {
      this.receiving = false;
    }
  }

  private emitMedia(payload: Buffer, timestampMs: number): void {
    this.emit({ type: 'media', payload, timestampMs });
  }

  /** RFC 4733: one key per event (its packets repeat, the end packet three times). */
  private onTelephoneEvent(packet: RtpPacket): void {
    if (packet.payload.length < 4) return;
    const digit = DTMF_EVENTS[packet.payload[0]!];
    if (!digit || this.lastDtmf === packet.timestamp) return;
    this.lastDtmf = packet.timestamp;
    this.emit({ type: 'dtmf', digit });
  }
}
