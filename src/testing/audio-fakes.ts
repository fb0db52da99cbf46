/**
 * In-process stand-ins for the audio pipeline's far end and providers, for tests and benchmarks
 * of the audio call leg: a MediaTransport pair (our end and a "carrier" end that plays what we
 * send and echoes marks), a scripted streaming STT that hears voiced frames and answers with the
 * next scripted line, and a TTS that speaks tones (one per word, 16 kHz, so the leg resamples).
 */

import type { MediaEvent, MediaListener, MediaTransport } from '../media/transport.js';
import type { SttEvent, SttOptions, SttProvider, SttStream } from '../providers/stt/types.js';
import type { PcmChunk, TtsProvider, TtsRequest } from '../providers/tts/types.js';
import { FRAME_MS, FRAME_SAMPLES, concatPcm, decodeMulawInto, rms, toFrames, tone } from '../media/audio.js';

/** The carrier's side of an in-process media stream. */
export interface FarEnd {
  /** Frames we sent, in order. */
  readonly received: Buffer[];
  /** Mark names we sent, in order. */
  readonly marks: string[];
  /** Mark names echoed back to us. */
  readonly echoed: string[];
  /** How many times we sent clear. */
  clears: number;
  /** Whether we closed the stream. */
  closed: boolean;
  /** Sends one inbound frame to our end. */
  send(frame: Buffer): void;
  /** Sends PCM as 20 ms frames, all at once. */
  sendPcm(pcm: Int16Array): void;
  dtmf(digit: string): void;
  /** The far end hangs up. */
  hangup(reason?: 'remote' | 'network'): void;
  /** Called for every frame we send. */
  onFrame(listener: (frame: Buffer) => void): () => void;
  /**
   * Streams inbound audio in real time as a carrier does: a frame every 20 ms, the caller's
   * queued audio (`talk`) or else line silence, until the stream stops or `stopStreaming`.
   */
  startStreaming(): void;
  stopStreaming(): void;
  /** Queues caller audio for the real-time stream. */
  talk(pcm: Int16Array): void;
  /** Queued caller audio not yet sent, in ms. */
  readonly talkingMs: number;
}

export interface MediaPairOptions {
  /**
   * Marks are echoed when their audio has played. With `playoutMs` the far end plays what it gets
   * in real time from a buffer (marks come back that much later, clear empties the buffer and drops
   * their echo); default 0 = played on arrival, echoed on the next turn of the event loop.
   */
  playoutMs?: number;
  /** false: marks are never echoed, as by a carrier that lost them. Default true. */
  echoMarks?: boolean;
}

/** A connected pair: `transport` for the leg, `far` for the test acting as carrier and caller. */
export function createMediaPair(options: MediaPairOptions = {}): { transport: MediaTransport; far: FarEnd } {
  const listeners = new Set<MediaListener>();
  const frameListeners = new Set<(frame: Buffer) => void>();
  let stopped = false;
  let timestampMs = 0;
  // Marks waiting for their audio to play (playoutMs > 0).
  let pending: { name: string; cancel: () => void }[] = [];
  let playedUntil = 0;
  const deliver = (event: MediaEvent) => {
    if (stopped) return;
    if (event.type === 'stop') stopped = true;
    for (const listener of [...listeners]) listener(event);
  };
  const far: FarEnd = {
    received: [],
    marks: [],
    echoed: [],
    clears: 0,
    closed: false,
    send(frame) {
      deliver({ type: 'media', payload: frame, timestampMs });
      timestampMs += FRAME_MS;
    },
    sendPcm(pcm) {
      for (const frame of toFrames(pcm)) far.send(frame);
    },
    dtmf(digit) {
      deliver({ type: 'dtmf', digit });
    },
    hangup(reason = 'remote') {
      far.stopStreaming();
      deliver({ type: 'stop', reason });
    },
    onFrame(listener) {
      frameListeners.add(listener);
      return () => frameListeners.delete(listener);
    },
    // Set below, once the stream's state exists.
    startStreaming: () => undefined,
    stopStreaming: () => undefined,
    talk: () => undefined,
    talkingMs: 0,
  };
  let queued: Buffer[] = [];
  let streamTimer: NodeJS.Timeout | undefined;
  let streamStart = 0;
  let streamSent = 0;
  const silentFrame = toFrames(new Int16Array(FRAME_SAMPLES))[0]!;
  const streamTick = () => {
    const due = Math.floor((performance.now() - streamStart) / FRAME_MS) + 1;
    while (streamSent < due && !stopped) {
      far.send(queued.shift() ?? silentFrame);
      streamSent++;
    }
    if (!stopped) streamTimer = setTimeout(streamTick, FRAME_MS);
  };
  far.startStreaming = () => {
    if (streamTimer) return;
    streamStart = performance.now();
    streamSent = 0;
    streamTick();
  };
  far.stopStreaming = () => {
    clearTimeout(streamTimer);
    streamTimer = undefined;
  };
  far.talk = (pcm) => {
    queued = queued.concat(toFrames(pcm));
  };
  Object.defineProperty(far, 'talkingMs', { get: () => queued.length * FRAME_MS });
  const echo = (name: string) => {
    far.echoed.push(name);
    deliver({ type: 'mark', name });
  };
  const transport: MediaTransport = {
    on(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    sendMedia(payload) {
      if (far.closed) return;
      far.received.push(payload);
      if (options.playoutMs) playedUntil = Math.max(playedUntil, performance.now()) + FRAME_MS;
      for (const listener of frameListeners) listener(payload);
    },
    sendMark(name) {
      if (far.closed) return;
      far.marks.push(name);
      if (options.echoMarks === false) return;
      const playout = options.playoutMs ?? 0;
      if (playout === 0) {
        setImmediate(() => echo(name));
        return;
      }
      const wait = Math.max(0, playedUntil - performance.now()) + playout;
      const entry = {
        name,
        cancel: () => clearTimeout(handle),
      };
      const handle = setTimeout(() => {
        pending = pending.filter((p) => p !== entry);
        echo(name);
      }, wait);
      pending.push(entry);
    },
    clear() {
      far.clears++;
      playedUntil = 0;
      for (const p of pending) p.cancel();
      pending = [];
    },
    close() {
      far.closed = true;
      far.stopStreaming();
      for (const p of pending) p.cancel();
      pending = [];
    },
  };
  return { transport, far };
}

/** Caller speech for the fakes: a voiced tone (the scripted STT and an energy VAD both hear it). */
export function voice(durationMs: number, amplitude = 6000): Int16Array {
  return tone([300, 700, 1100], durationMs, amplitude);
}

export interface ScriptedSttOptions {
  /** What the caller says, turn after turn; the stream answers each finalize() with the next line. */
  lines: readonly string[];
  /** Delay before a final transcript after finalize() (real ms). Default 0 (next tick). */
  finalLatencyMs?: number;
  /** An interim transcript every this many voiced frames (one more word each). Default 10 (200 ms). */
  partialEveryFrames?: number;
  /** A frame this loud (RMS) is voiced. Default 500. */
  voicedRms?: number;
}

/**
 * A streaming STT that follows a script: it counts voiced frames to give interim transcripts
 * (the first n words of the line being said) and, when asked to finalize after voiced audio, gives
 * the whole line as a final with endOfUtterance (voice resuming within 400 ms of it is the same
 * utterance going on: its next finalize gives an empty final). It records every stream's options.
 */
/** Silence (20 ms frames) after which voice is a new utterance for ScriptedStt, not the same one going on. */
const CONTINUATION_FRAMES = 20;

export class ScriptedStt implements SttProvider {
  readonly name = 'scripted';
  readonly opened: SttOptions[] = [];
  finalizes = 0;
  private next = 0;

  constructor(private readonly options: ScriptedSttOptions) {}

  open(options: SttOptions): Promise<SttStream> {
    this.opened.push(options);
    const listeners = new Set<(event: SttEvent) => void>();
    const emit = (event: SttEvent) => {
      for (const listener of [...listeners]) listener(event);
    };
    const every = this.options.partialEveryFrames ?? 10;
    const threshold = this.options.voicedRms ?? 500;
    let voiced = 0;
    // Voice resuming within 400 ms of a finalize (the speaker only paused) goes on with the line
    // already given: it takes no next line, as a recogniser keeps one speaker's sentence together.
    let silent = 0;
    let settled = false;
    let continuing = false;
    let closed = false;
    const timers = new Set<NodeJS.Timeout>();
    // Decoded only to hear whether the frame is voiced: one scratch array, not one per frame.
    let scratch = new Int16Array(FRAME_SAMPLES);
    const stream: SttStream = {
      on(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      write: (frame) => {
        if (closed) return;
        if (scratch.length !== frame.length) scratch = new Int16Array(frame.length);
        if (rms(decodeMulawInto(frame, scratch)) < threshold) {
          silent++;
          if (silent >= CONTINUATION_FRAMES) settled = false;
          return;
        }
        if (settled) continuing = true;
        settled = false;
        silent = 0;
        voiced++;
        if (!continuing && voiced % every === 0) {
          const line = this.options.lines[this.next] ?? '';
          const words = line.split(/\s+/).filter(Boolean);
          const shown = words.slice(0, Math.min(words.length, voiced / every)).join(' ');
          if (shown) emit({ type: 'partial', text: shown });
        }
      },
      finalize: () => {
        this.finalizes++;
        if (closed || voiced === 0) return;
        voiced = 0;
        settled = true;
        const line = continuing ? '' : (this.options.lines[this.next++] ?? '');
        continuing = false;
        const send = () => emit({ type: 'final', text: line, endOfUtterance: true });
        const latency = this.options.finalLatencyMs ?? 0;
        const handle = setTimeout(() => {
          timers.delete(handle);
          if (!closed) send();
        }, latency);
        timers.add(handle);
      },
      close: () => {
        closed = true;
        for (const t of timers) clearTimeout(t);
        listeners.clear();
        return Promise.resolve();
      },
    };
    return Promise.resolve(stream);
  }
}

export interface ToneTtsOptions {
  /** Milliseconds of audio per character of text. Default 60. */
  msPerChar?: number;
  /** Delay before the first chunk (real ms). Default 0. */
  firstChunkMs?: number;
  /** Output rate, resampled by the leg to 8 kHz. Default 16000. */
  sampleRate?: number;
  /** Chunk length in ms. Default 100. */
  chunkMs?: number;
}

/**
 * A TTS that "speaks" a tone whose pitch changes with each word, as long as the text's characters
 * say (so word positions in the audio follow the characters exactly). Records every request.
 */
/**
 * Sentences' audio, shared by every ToneTts of the process: benchmarks give each call its own fake
 * and repeat the same replies, and the fake's own work (a real TTS's audio arrives over the network)
 * is not what they measure. Chunks handed out are copies, so the cache cannot be changed through them.
 */
const toneAudio = new Map<string, Int16Array>();

export class ToneTts implements TtsProvider {
  readonly name = 'tone';
  readonly requests: TtsRequest[] = [];

  constructor(private readonly options: ToneTtsOptions = {}) {}

  private audioFor(text: string, rate: number, msPerChar: number): Int16Array {
    const key = `${rate}:${msPerChar}:${text}`;
    const cached = toneAudio.get(key);
    if (cached) return cached;
    const pieces: Int16Array[] = [];
    let wordIndex = 0;
    for (const part of text.split(/(\s+)/)) {
      if (part === '') continue;
      const ms = part.length * msPerChar;
      pieces.push(
        /\s/.test(part) ? tone([450], ms, 3000, rate) : tone([500 + 40 * (wordIndex++ % 10)], ms, 8000, rate),
      );
    }
    const pcm = concatPcm(pieces);
    if (toneAudio.size >= 32) toneAudio.delete(toneAudio.keys().next().value!);
    toneAudio.set(key, pcm);
    return pcm;
  }

  async *synthesize(request: TtsRequest): AsyncIterable<PcmChunk> {
    this.requests.push(request);
    const rate = this.options.sampleRate ?? 16000;
    const msPerChar = this.options.msPerChar ?? 60;
    const chunkSamples = Math.round((rate * (this.options.chunkMs ?? 100)) / 1000);
    const all = this.audioFor(request.text, rate, msPerChar);
    if (this.options.firstChunkMs) await sleep(this.options.firstChunkMs, request.signal);
    for (let i = 0; i < all.length; i += chunkSamples) {
      if (request.signal?.aborted) return;
      yield { pcm: all.slice(i, i + chunkSamples), sampleRate: rate };
      // Let the event loop breathe between chunks, as a network stream would.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const handle = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(handle);
        resolve();
      },
      { once: true },
    );
  });
}

/** Silence as 8 kHz PCM, for the caller's pauses. */
export function pause(durationMs: number): Int16Array {
  return new Int16Array(Math.round((FRAME_SAMPLES * durationMs) / FRAME_MS));
}
