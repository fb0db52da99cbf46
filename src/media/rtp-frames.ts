import { alawToMulaw, encodeMulaw, FRAME_MS, FRAME_SAMPLES, MULAW_SILENCE, SAMPLE_RATE, toFrames } from './audio.js';

/** Gaps up to this many frames are filled with silence; longer ones are a new talk spurt. */
const MAX_FILLED_FRAMES = 10;
/**
 * A packet further behind than this is no late packet but a sender that started its sequence
 * again (a new stream, a device that restarts its numbering with each talk spurt): once the next
 * packet follows it, the stream goes on from there (RFC 3550 appendix A.1's MAX_MISORDER).
 */
const MAX_MISORDER = 100;
const SILENT_FRAME = Buffer.alloc(FRAME_SAMPLES, MULAW_SILENCE);
/**
 * A far end that stops sending (silence suppression, comfort noise, DTX, hold) is heard as silence
 * once nothing has come for this long: more than the jitter of a working line.
 */
const QUIET_AFTER_MS = 80;

/** The receivers of the process whose far ends have sent audio, watched by one 20 ms timer. */
const watched = new Set<RtpFrames>();
let watch: ReturnType<typeof setInterval> | undefined;

function fillQuietLines(): void {
  for (const frames of watched) frames.fillQuiet();
}

/** What the receive side needs of one RTP packet (RFC 3550), whoever parsed it. */
export interface ReceivedRtp {
  payloadType: number;
  sequence: number;
  timestamp: number;
  payload: Buffer;
}

/** A codec beyond G.711 that RtpFrames takes packets of (Opus on a web call), decoded to 8 kHz PCM. */
export interface RtpDecoder {
  /** Its negotiated payload type. */
  payloadType: number;
  /** Its RTP clock, samples a second (48,000 for Opus). */
  clockRate: number;
  /** One packet's audio; null for a packet it cannot decode (taken as lost). */
  decode(payload: Uint8Array): Int16Array | null;
  /** `samples` of audio in place of packets lost just before the next one (the codec's concealment). */
  conceal(samples: number): Int16Array;
}

/**
 * The receive side of G.711 over RTP, as every carrier that speaks it needs it (SIP's RTP, WebRTC):
 * PCMU (payload type 0) and PCMA (8) as the media port's 20 ms mu-law frames, with the small
 * jitter handling a phone line needs: late and repeated packets dropped, a short gap filled with
 * silence so the audio keeps its timing, 10 or 30 ms packets cut or joined into 20 ms frames.
 * A far end that goes quiet on the wire (sends nothing while its user is silent) is heard as
 * silence in real time, so that whatever listens (the VAD, the end of a turn) hears the silence
 * it would have heard on a line that sends it.
 *
 * Given an RtpDecoder, packets of its payload type go the same way, decoded once they are known to
 * be in order (a late packet is dropped undecoded, so the decoder's state follows the stream), their
 * timestamps brought to 8 kHz, and a gap filled with the codec's concealment instead of silence.
 */
export class RtpFrames {
  private expected: number | undefined;
  private firstTimestamp: number | undefined;
  /** The tail of the last packet shorter than a frame (30 ms packets), and its RTP timestamp. */
  private rest: { audio: Buffer; timestamp: number } | undefined;
  /** The sequence number that confirms a restart of the sender's numbering, after a packet far behind. */
  private restartAt: number | undefined;
  /** Samples from the first frame to the last frame delivered. */
  private lastSamples = -FRAME_SAMPLES;
  /** Frames of silence put into gaps, packets dropped as late or repeated, and restarts of the numbering. */
  readonly stats = { filled: 0, late: 0, restarts: 0, quiet: 0 };
  /** When the last audio packet arrived (`now`), undefined before the first. */
  private lastArrival: number | undefined;
  /** Frames of silence delivered since then for a quiet line. */
  private quietFrames = 0;
  private closed = false;

  /** The decoder's last RTP timestamp and the time since its first packet, in its clock's samples. */
  private clock: { last: number; elapsed: number } | undefined;

  constructor(
    private readonly deliver: (frame: Buffer, timestampMs: number) => void,
    /** Milliseconds, monotonic; tests step it by hand and call fillQuiet(). */
    private readonly now: () => number = () => performance.now(),
    private readonly decoder?: RtpDecoder,
  ) {}

  /**
   * Delivers the silence of a far end that has sent nothing for QUIET_AFTER_MS: one frame per
   * 20 ms since then, at most. Called every 20 ms for every receiver (one timer for the process).
   */
  fillQuiet(): void {
    if (this.lastArrival === undefined || this.closed) return;
    const due = Math.floor((this.now() - this.lastArrival - QUIET_AFTER_MS) / FRAME_MS) + 1;
    for (; this.quietFrames < due; this.quietFrames++) {
      this.stats.quiet++;
      this.emit(SILENT_FRAME, (this.firstTimestamp ?? 0) + this.lastSamples + FRAME_SAMPLES, false);
    }
  }

  /** Stops delivering anything (the call is over). */
  close(): void {
    this.closed = true;
    watched.delete(this);
    if (watched.size === 0 && watch) {
      clearInterval(watch);
      watch = undefined;
    }
  }

  /**
   * An audio packet came (take() tells it too): the line is not quiet. For a receiver that takes
   * its packets a little after they arrive (their work deferred), so a packet waiting its turn is
   * not taken for a quiet line.
   */
  arrived(packet: Pick<ReceivedRtp, 'payloadType'>): void {
    if (this.closed || !this.takes(packet.payloadType)) return;
    if (this.lastArrival === undefined) {
      watched.add(this);
      watch ??= setInterval(fillQuietLines, FRAME_MS).unref();
    }
    this.lastArrival = this.now();
    this.quietFrames = 0;
  }

  private takes(payloadType: number): boolean {
    return payloadType === 0 || payloadType === 8 || payloadType === this.decoder?.payloadType;
  }

  /**
   * The decoder's RTP timestamp at 8 kHz, on a clock that wraps at 2^32 as G.711's does: the
   * signed steps between packets are summed, so its own wrap (and a new stream's jump) carries over.
   */
  private telephoneTimestamp(timestamp: number, clockRate: number): number {
    const clock = (this.clock ??= { last: timestamp, elapsed: 0 });
    clock.elapsed += (timestamp - clock.last) | 0;
    clock.last = timestamp;
    return Math.round((clock.elapsed * SAMPLE_RATE) / clockRate) >>> 0;
  }

  /** Takes one packet; anything but PCMU, PCMA and the decoder's (comfort noise, codecs not negotiated) is ignored. */
  take(packet: ReceivedRtp): void {
    if (this.closed || !this.takes(packet.payloadType)) return;
    const decoder = packet.payloadType === 0 || packet.payloadType === 8 ? undefined : this.decoder;
    if (decoder) packet = { ...packet, timestamp: this.telephoneTimestamp(packet.timestamp, decoder.clockRate) };
    this.arrived(packet);
    let expected = this.expected;
    if (expected !== undefined && ((packet.sequence - expected) & 0xffff) >= 0x8000) {
      const behind = 0x10000 - ((packet.sequence - expected) & 0xffff);
      if (behind <= MAX_MISORDER || this.restartAt !== packet.sequence) {
        if (behind > MAX_MISORDER) this.restartAt = (packet.sequence + 1) & 0xffff;
        this.stats.late++;
        return;
      }
      // The sender numbers anew: its audio goes on after what was delivered, on its new clock.
      this.stats.restarts++;
      this.rest = undefined;
      this.firstTimestamp = (packet.timestamp - (this.lastSamples + FRAME_SAMPLES)) >>> 0;
      expected = undefined;
    }
    this.restartAt = undefined;
    if (expected !== undefined) {
      const ahead = (packet.sequence - expected) & 0xffff;
      if (ahead > 0 && ahead <= MAX_FILLED_FRAMES) {
        const filled = decoder ? toFrames(decoder.conceal(ahead * FRAME_SAMPLES)) : [];
        for (let i = 0; i < ahead; i++)
          this.emit(filled[i] ?? SILENT_FRAME, packet.timestamp - (ahead - i) * FRAME_SAMPLES, filled[i] !== undefined);
        this.stats.filled += ahead;
      }
    }
    this.expected = (packet.sequence + 1) & 0xffff;
    // Audio in a buffer of our own (converted, joined) is delivered as it is; the packet's is copied.
    let audio: Buffer;
    let own = true;
    if (packet.payloadType === 0) {
      audio = packet.payload;
      own = false;
    } else if (!decoder) audio = alawToMulaw(packet.payload);
    else audio = encodeMulaw(decoder.decode(packet.payload) ?? decoder.conceal(FRAME_SAMPLES));
    let timestamp = packet.timestamp;
    // A tail kept from the previous packet goes first when this packet follows it on the clock.
    const rest = this.rest;
    this.rest = undefined;
    if (rest && (timestamp - rest.timestamp) >>> 0 === rest.audio.length) {
      audio = Buffer.concat([rest.audio, audio]);
      own = true;
      timestamp = rest.timestamp;
    }
    let at = 0;
    for (; at + FRAME_SAMPLES <= audio.length; at += FRAME_SAMPLES)
      this.emit(audio.subarray(at, at + FRAME_SAMPLES), timestamp + at, own);
    if (at < audio.length) this.rest = { audio: Buffer.from(audio.subarray(at)), timestamp: (timestamp + at) >>> 0 };
  }

  private emit(frame: Buffer, timestamp: number, own: boolean): void {
    this.firstTimestamp ??= timestamp;
    const samples = (timestamp - this.firstTimestamp) >>> 0;
    this.lastSamples = samples;
    this.deliver(own ? frame : Buffer.from(frame), samples / 8);
  }
}
