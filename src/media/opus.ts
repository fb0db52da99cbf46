/**
 * Opus (RFC 6716) for the calls that carry it (a browser's web call): one encoder and one decoder
 * per call, working at the pipeline's own 8 kHz. libopus converts between that and Opus's 48 kHz
 * itself (it decodes straight to 8 kHz and encodes 8 kHz input as narrowband), with its own filters:
 * better than a resampler of ours, and cheaper. RTP still counts Opus time at 48 kHz (RFC 7587).
 *
 * The codec is libopus compiled to WebAssembly (npm `opusscript`): nothing to build or download at
 * install. Its own JavaScript wrapper places its buffers wrongly in the heap (at twice their address,
 * over memory other instances may own), so this file drives the compiled handler directly, with
 * buffers of its own.
 */
import { createRequire } from 'node:module';
import { FRAME_SAMPLES, SAMPLE_RATE } from './audio.js';

/** Opus's RTP clock and the rate in its SDP name (opus/48000/2), whatever the audio's bandwidth. */
export const OPUS_CLOCK_RATE = 48_000;
/** libopus's application "VoIP": tuned for speech intelligibility. */
const APPLICATION_VOIP = 2048;
/** encoder CTLs (opus_defines.h). */
const SET_BITRATE = 4002;
const SET_COMPLEXITY = 4010;
const SET_INBAND_FEC = 4012;
const SET_PACKET_LOSS_PERC = 4014;
const SET_SIGNAL = 4024;
const SIGNAL_VOICE = 3001;
/** The largest packet the handler encodes into (three 1,275-byte frames and their headers). */
const MAX_PACKET_BYTES = 1276 * 3;
/**
 * What the handler's decode writes at most: it always asks libopus for up to 5,760 samples, and
 * writes each sample as two 16-bit words (its low and its high byte).
 */
const MAX_DECODED_SAMPLES = 960 * 6;

/** The compiled handler (opusscript's build/opusscript_native_wasm.js): encoder and decoder in one. */
interface NativeHandler {
  /** Encodes `samples` samples written one byte per 16-bit word at `input`; returns the packet's bytes or an error < 0. */
  _encode(input: number, samples: number, output: number, frameSize: number): number;
  /** Decodes `bytes` at `input` (0 bytes: conceal a lost packet); returns samples, written a byte per word, or an error < 0. */
  _decode(input: number, bytes: number, output: number): number;
  _encoder_ctl(ctl: number, value: number): number;
  _decoder_ctl(ctl: number, value: number): number;
}

interface NativeModule {
  OpusScriptHandler: { new (rate: number, channels: number, application: number): NativeHandler } & {
    destroy_handler(handler: NativeHandler): void;
  };
  _malloc(bytes: number): number;
  _free(pointer: number): void;
  /** Views of the heap: replaced when it grows, so read afresh at each use. */
  HEAPU8: Uint8Array;
  HEAPU16: Uint16Array;
}

let native: NativeModule | undefined;

/** The WebAssembly module, compiled by the first Opus call of the process (synchronously, about 20 ms). */
function loadNative(): NativeModule {
  if (!native) {
    const require = createRequire(import.meta.url);
    const build = require('opusscript/build/opusscript_native_wasm.js') as () => NativeModule;
    native = build();
  }
  return native;
}

export interface OpusOptions {
  /** Target bitrate, bits a second. Default 16,000: narrowband speech gains nothing above it. */
  bitrate?: number;
  /**
   * Encoder complexity, 0-10: CPU against quality. Default 5 (WebRTC's own choice on phones):
   * about half the encoder's work of 10, for no difference a listener of narrowband speech hears.
   */
  complexity?: number;
  /**
   * In-band FEC in what is sent, for a peer that decodes it (`useinbandfec=1` in its SDP): each
   * packet carries a coarse copy of the one before, so a lost packet is heard at lower quality
   * rather than concealed. Default false.
   */
  fec?: boolean;
  /** The loss FEC is sized for, in percent (libopus adds redundancy only when this is above 0). Default 5. */
  expectedLossPercent?: number;
}

/**
 * One call's Opus encoder and decoder at 8 kHz mono: 20 ms of PCM in, a packet out; a packet in,
 * its PCM out (any packet duration, mono or stereo, of any bandwidth); and concealment of lost
 * packets (libopus's PLC). Call close() when the call ends: the codec's memory is the
 * WebAssembly heap's, which no garbage collector frees.
 */
export class OpusCodec {
  private readonly module = loadNative();
  private readonly handler: NativeHandler;
  /** Encoder input: a byte per 16-bit word, as the handler reads it. */
  private readonly input: number;
  /** Encoder output and decoder input. */
  private readonly packet: number;
  /** Decoder output: a byte per 16-bit word. */
  private readonly output: number;
  private closed = false;

  constructor(options: OpusOptions = {}) {
    const m = this.module;
    this.handler = new m.OpusScriptHandler(SAMPLE_RATE, 1, APPLICATION_VOIP);
    this.input = m._malloc(FRAME_SAMPLES * 4 * 3);
    this.packet = m._malloc(MAX_PACKET_BYTES);
    this.output = m._malloc(MAX_DECODED_SAMPLES * 4);
    this.ctl(SET_SIGNAL, SIGNAL_VOICE);
    this.ctl(SET_BITRATE, options.bitrate ?? 16_000);
    this.ctl(SET_COMPLEXITY, options.complexity ?? 5);
    if (options.fec) {
      this.ctl(SET_INBAND_FEC, 1);
      this.ctl(SET_PACKET_LOSS_PERC, options.expectedLossPercent ?? 5);
    }
  }

  private ctl(request: number, value: number): void {
    const result = this.handler._encoder_ctl(request, value);
    if (result < 0) throw new Error(`Opus encoder setting ${request} refused (${result})`);
  }

  /** Encodes 10, 20, 40 or 60 ms of 8 kHz PCM (20 ms: FRAME_SAMPLES) as one packet. */
  encode(pcm: Int16Array): Buffer {
    if (this.closed) throw new Error('the Opus codec is closed');
    if (pcm.length > FRAME_SAMPLES * 3) throw new RangeError('at most 60 ms of audio make one Opus packet');
    const words = this.module.HEAPU16;
    const at = this.input >> 1;
    for (let i = 0; i < pcm.length; i++) {
      const sample = pcm[i]! & 0xffff;
      words[at + 2 * i] = sample & 0xff;
      words[at + 2 * i + 1] = sample >> 8;
    }
    const bytes = this.handler._encode(this.input, pcm.length, this.packet, pcm.length);
    if (bytes < 0) throw new Error(`Opus could not encode ${pcm.length} samples (${bytes})`);
    return Buffer.from(this.module.HEAPU8.subarray(this.packet, this.packet + bytes));
  }

  /** Decodes one packet to 8 kHz PCM; null for a packet that is no Opus (take it as lost). */
  decode(packet: Uint8Array): Int16Array | null {
    if (this.closed || packet.length === 0 || packet.length > MAX_PACKET_BYTES) return null;
    this.module.HEAPU8.set(packet, this.packet);
    return this.read(this.handler._decode(this.packet, packet.length, this.output));
  }

  /**
   * `samples` of concealment (up to 720 ms) for packets lost just before the next one, continuing
   * what was heard. libopus conceals 720 ms at a time through this handler: the rest is dropped.
   */
  conceal(samples: number): Int16Array {
    if (this.closed) return new Int16Array(samples);
    const pcm = this.read(this.handler._decode(this.packet, 0, this.output)) ?? new Int16Array(samples);
    return pcm.length >= samples ? pcm.subarray(0, samples) : pcm;
  }

  private read(samples: number): Int16Array | null {
    if (samples < 0) return null;
    const words = this.module.HEAPU16;
    const at = this.output >> 1;
    const pcm = new Int16Array(samples);
    for (let i = 0; i < samples; i++) pcm[i] = (words[at + 2 * i + 1]! << 8) | words[at + 2 * i]!;
    return pcm;
  }

  /** Frees the codec's memory. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const m = this.module;
    m.OpusScriptHandler.destroy_handler(this.handler);
    m._free(this.input);
    m._free(this.packet);
    m._free(this.output);
  }
}
