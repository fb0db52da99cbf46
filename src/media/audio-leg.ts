/**
 * The audio call leg: turns a MediaTransport (20 ms mu-law frames, marks, clear, DTMF) into the
 * CallLeg the call session drives, so the session never knows audio from text.
 *
 * Inbound, every frame is decoded and goes to the VAD (speech start and end with hysteresis, the
 * turn's trailing silence set by interruption_threshold), to the streaming STT (interim and final
 * transcripts), to the beep detector and, with record=true, to the recording. The leg emits
 * `speech_start` when the VAD hears speech begin, `speech_partial` from interim transcripts, and
 * `speech` once the VAD has heard the turn's trailing silence and the STT has settled the words
 * (`finalize()` is asked for at that moment).
 *
 * Outbound, `speak` applies the pronunciation guide, streams TTS audio, resamples it to 8 kHz,
 * cuts 20 ms frames, mixes the background track under them and paces them out, with a transport
 * mark after every word (placed by the word's share of the text's characters). A barge-in (the
 * session aborts the signal) stops synthesis, drops queued frames, sends the carrier's `clear`,
 * and reports as played only the words whose marks came back. A voice starting over the agent
 * holds its audio (pause/resume); on a transport whose clear() drops what the far end buffered,
 * that is cleared at once and sent again on resume (FramePacer.rewind).
 */

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CallLeg, LegEvent, LegListener, SpeakResult, SpeechText, TransferResult } from '../carriers/types.js';
import { sentencesOf } from './sentences.js';
import { inSpan } from '../observability/tracing.js';
import type { CallRequest } from '../schemas/call-request.js';
import type { SttEvent, SttProvider, SttStream } from '../providers/stt/types.js';
import type { TtsProvider } from '../providers/tts/types.js';
import { errorMessage } from '../domain/records.js';
import type { MediaEvent, MediaTransport } from './transport.js';
import type { Vad } from './vad.js';
import { EchoGuard } from './echo.js';
import {
  FRAME_MS,
  FRAME_SAMPLES,
  MULAW_SILENCE,
  SAMPLE_RATE,
  allocPcm,
  decodeMulawInto,
  encodeMulaw,
  resample,
  toFrames,
} from './audio.js';
import type { FrameFill, FramePacer, FrameScheduler } from './pacer.js';
import { CallRecorder } from './wav.js';
import { DTMF_TONE_MS, dtmfTones } from './dtmf.js';
import { ToneDetector } from '../amd/tone-detector.js';
import { EnergyVad } from './vad-energy.js';
import { backgroundMixer } from './background.js';
import { applyPronunciationGuide } from '../providers/tts/pronunciation.js';
import { retrying } from '../providers/base.js';
import { TurnDetector, endOfTurnMs, turnWords } from './turn-detector.js';
import { LatencyTracker, type LatencySource } from './latency.js';

/** One frame of mu-law silence, sent to the STT in place of the agent's echo (never written to). */
const SILENT_FRAME = Buffer.alloc(FRAME_SAMPLES, MULAW_SILENCE);
/** The call's settings an audio leg uses. */
export interface AudioLegSettings {
  callId: string;
  /** interruption_threshold: patience before answering (trailing silence, see endOfTurnMs). */
  interruptionThreshold: number;
  /** BCP-47 language for STT and TTS. */
  language: string;
  /** keywords for the STT ("word" or "word:boost"). */
  keywords: readonly string[];
  /** The TTS provider's own voice id (createSpeech(...).ttsVoiceFor(request)). */
  voice: string;
  pronunciationGuide: CallRequest['pronunciation_guide'];
  /** background_track: office, cafe, restaurant, none, or null (light line static). */
  backgroundTrack: string | null;
  /** record: both tracks go to DATA_DIR/recordings/<call_id>.wav. */
  record: boolean;
}

/** An audio leg's settings from a call's normalized request. */
export function audioLegSettings(callId: string, request: CallRequest, voice: string): AudioLegSettings {
  return {
    callId,
    interruptionThreshold: request.interruption_threshold,
    language: request.language,
    keywords: request.keywords,
    voice,
    pronunciationGuide: request.pronunciation_guide,
    backgroundTrack: request.background_track,
    record: request.record,
  };
}

export interface AudioLegDeps {
  /** Streaming STT; null = none configured (turns are still taken, but carry no words). */
  stt: SttProvider | null;
  tts: TtsProvider;
  /** The call's VAD (createVad, which is asynchronous: frames wait for it, in order). */
  vad: Vad | Promise<Vad>;
  /** The process's 20 ms grid (one per process, in the service bag): the leg's frames are paced on it. */
  scheduler: FrameScheduler;
  /** The background under the agent; default the call's background_track (src/media/background.ts), null = none. */
  background?: FrameFill | null;
  /** DATA_DIR: record=true calls are recorded to DATA_DIR/recordings/<call_id>.wav (no recording without it). */
  dataDir?: string;
  /** Listen for beeps (answering machines) and emit `tone` events. Default true. */
  detectTones?: boolean;
  /** Hands the call over (the carrier's API); without it transfers fail. */
  transfer?(to: string): Promise<TransferResult>;
  /** Ends the call at the carrier (beyond closing the media stream). */
  hangup?(): Promise<void>;
  /**
   * Settles once what is sent reaches the far end (a browser's ICE and DTLS-SRTP are up, or it
   * went away first): nothing is said before, as it would be lost. Default: at once.
   */
  ready?: Promise<unknown>;
  /** Event timestamps; default the system time. */
  now?(): Date;
  /** Also emit an `audio` event for every inbound frame (answering-machine detection). Default false. */
  audioEvents?: boolean;
  log?: { warn(object: object, message: string): void };
  /** A speech provider failed (the metrics' provider errors). */
  onProviderError?(kind: 'stt' | 'tts'): void;
  /**
   * The voice that takes over, for the rest of the call, when `tts` fails to say a sentence (its
   * retries spent): without one, such a failure ends the conversation (`provider_failed`).
   */
  fallbackTts?: { tts: TtsProvider; voice: string };
}

/** The CallLeg of an audio carrier, with what the engine reads beyond the port. */
export interface AudioLeg extends CallLeg {
  readonly mode: 'audio';
  readonly latency: LatencySource;
  /** Finishes the recording (if any) and says where it is, relative to DATA_DIR. */
  recording(): Promise<string | null>;
  /** Receives every inbound frame, raw and decoded; returns the unsubscribe function. */
  onAudio(listener: (payload: Buffer, pcm: Int16Array) => void): () => void;
  pause(): void;
  resume(heard?: string): void;
  /** Receives every frame sent to the far end (the agent's voice, the background); returns the unsubscribe function. */
  onSent(listener: (payload: Buffer) => void): () => void;
  /** Inbound frames waiting for the VAD (0 when keeping up). */
  readonly backlog: number;
  /**
   * Inbound frames the VAD fell too far behind to score (VAD_BACKLOG_MAX frames already waiting for
   * their scores): they count with the previous frame's score, so turn timing stays right, but go
   * unheard.
   */
  readonly skippedFrames?: number;
}

/** Silence after a voice that tells a held agent the voice stopped (200 ms; the turn may go on). */
const PAUSED_FRAMES = 10;
/** The frames of one key's tone (sendDtmf). */
const KEY_TONE_FRAMES = DTMF_TONE_MS / FRAME_MS;
/** Characters per second of typical synthesised speech: places marks before the audio's length is known. */
const CHARS_PER_SECOND = 14;
/** Inbound frames that may wait for a slow VAD's scores (1 s); later ones are skipped. */
const VAD_BACKLOG_MAX = 50;
/** ... and for a VAD still loading its model at the start of the call (5 s). */
const VAD_LOADING_MAX = 250;
/** After the VAD ends a turn, how long (in inbound frames) to wait for the STT's final words. */
const FINAL_WAIT_FRAMES = 40;
/** Frames held for an STT stream still opening (5 s); older ones are dropped from the STT only. */
const STT_PENDING_MAX = 250;
/** A recogniser stream breaking again within this long of its last break is not opened again. */
const STT_BREAK_WINDOW_MS = 60_000;
/**
 * How long after an utterance's end mark went out its echo may take: the carrier plays what it
 * holds (at most OPENLINE_AUDIO_AHEAD_MS) and echoes it. Past this the mark was lost, and the
 * utterance counts as said rather than holding the agent for good.
 */
const END_MARK_ECHO_MS = 3000;
/** An utterance's end mark, also when sent again under a new name (renameMark). */
const END_MARK = /:end(?:~\d+)?$/;

interface Word {
  /** Offset just past the word in the spoken text. */
  end: number;
}

function wordsOf(text: string): Word[] {
  const words: Word[] = [];
  for (const match of text.matchAll(/\S+/g)) words.push({ end: match.index + match[0].length });
  return words;
}

interface Utterance {
  startFrame: number;
  lastVoicedFrame: number;
  /** performance.now() of the last voiced frame. */
  lastVoicedAt: number;
  finals: string[];
  partial: string;
  /** The STT said the speaker finished (endOfUtterance) for what it has settled. */
  sttEnded: boolean;
  sttFinalAt: number | null;
  /** Frame at which the VAD ended the turn (finalize asked), or null while speaking. */
  vadEndedFrame: number | null;
  /** A final came after finalize() was asked. */
  settled: boolean;
  /**
   * speech_start was emitted. A voice that starts as the agent's first echo would (EchoGuard.pending)
   * is not announced until the guard tells: the agent's own voice never is, a caller's is as soon as it fails.
   */
  announced: boolean;
}

function newUtterance(startFrame: number, voicedFrame: number, vadEndedFrame: number | null): Utterance {
  return {
    startFrame,
    lastVoicedFrame: voicedFrame,
    lastVoicedAt: performance.now(),
    finals: [],
    partial: '',
    sttEnded: false,
    sttFinalAt: null,
    vadEndedFrame,
    settled: false,
    announced: true,
  };
}

interface Speaking {
  prefix: string;
  text: string;
  words: Word[];
  /** Index of the last word whose mark came back. */
  echoed: number;
  finish(interrupted: boolean): void;
}

/** The leg's audio extras when `leg` is an audio leg (latency, recording); undefined for text legs. */
export function audioLegOf(leg: CallLeg): AudioLeg | undefined {
  return leg.mode === 'audio' && 'latency' in leg && 'recording' in leg ? (leg as AudioLeg) : undefined;
}

/** Builds the audio leg of one call over `transport`. */
export function createAudioLeg(transport: MediaTransport, settings: AudioLegSettings, deps: AudioLegDeps): AudioLeg {
  return new AudioCallLeg(transport, settings, deps);
}

class AudioCallLeg implements AudioLeg {
  readonly mode = 'audio' as const;
  readonly latency: LatencyTracker;
  private readonly listeners = new Set<LegListener>();
  private readonly audioListeners = new Set<(payload: Buffer, pcm: Int16Array) => void>();
  private readonly sentListeners = new Set<(payload: Buffer) => void>();
  /** The last voice the VAD heard begin: how many ms after its onset, and when it told. */
  private voiceOnset: { lagMs: number; detectedAt: number } | undefined;
  /** Tells the agent's voice returning on the line from the caller's (src/media/echo.ts). */
  private readonly echo = new EchoGuard(() => this.now().getTime());
  /** performance.now() of the last voiced frame heard (the caller's voice). */
  private lastVoicedAt = 0;
  private readonly sentPcm = new Int16Array(FRAME_SAMPLES);
  private readonly markHandlers = new Map<string, () => void>();
  private readonly turns: TurnDetector;
  private readonly pacer: FramePacer;
  private readonly recorder: CallRecorder | undefined;
  private readonly recordingFile: string | null;
  private readonly tones: ToneDetector | undefined;
  private readonly unsubscribe: () => void;
  private stt: SttStream | undefined;
  private vad: Vad | undefined;
  private sttPending: Buffer[] | null = [];
  private sttUnsubscribe: (() => void) | undefined;
  /** When the recogniser's stream last broke (the leg's clock, ms). */
  private sttBrokeAt: number | undefined;
  /** What a broken recogniser stream had not settled, for the one that replaces it. */
  private sttCarried: Buffer[] = [];
  /** The voice saying the agent's sentences: the call's own, or the fallback once it failed. */
  private voice: { tts: TtsProvider; voice: string };
  private utterance: Utterance | null = null;
  /** Frames waiting for a VAD still loading (null: skipped). */
  private readonly loadingQueue: (Int16Array | null)[] = [];
  /**
   * Scores of frames given to an asynchronous VAD, in frame order, waiting to be applied (null: a
   * skipped frame). Frames go to the VAD as they arrive: it may score several at once.
   */
  private readonly scoreQueue: (Promise<number> | number | null)[] = [];
  private draining = false;
  private lastScore = 0;
  skippedFrames = 0;
  private speaking: Speaking | null = null;
  /**
   * Inbound frame before which the agent's reply is not heard: the threshold's silence after the
   * last turn's voice. A closed sentence ends the turn sooner (endOfTurnSilenceMs), so the reply
   * is written and synthesised meanwhile, and a caller who goes on before this frame meets a reply
   * not yet heard (the session then answers both sentences together).
   */
  private replyGate = -1;
  /** The pacer holds the reply until replyGate (not a hold for a voice over the agent). */
  private gated = false;
  /**
   * The far end has heard the agent say something to its end: their turns since answer it (see
   * heardWords). A first sentence cut short by a greeting does not count.
   */
  private spoke = false;
  private seq = 0;
  private ended = false;
  /** deps.ready has settled: the far end hears what is sent. */
  private ready = false;
  private recordingDone: Promise<string | null> | undefined;

  constructor(
    private readonly transport: MediaTransport,
    private readonly settings: AudioLegSettings,
    private readonly deps: AudioLegDeps,
  ) {
    this.latency = new LatencyTracker();
    this.voice = { tts: deps.tts, voice: settings.voice };
    this.turns = new TurnDetector({ interruptionThreshold: settings.interruptionThreshold });
    this.tones = deps.detectTones === false ? undefined : new ToneDetector();
    if (settings.record && deps.dataDir) {
      this.recordingFile = path.join('recordings', `${settings.callId}.wav`);
      const file = path.resolve(deps.dataDir, this.recordingFile);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      // On the call's clock, so a sandbox call on an accelerated clock records at its own pace.
      const now = deps.now;
      this.recorder = new CallRecorder(file, now ? { now: () => now().getTime() } : {});
    } else {
      this.recordingFile = null;
    }
    let spoken = 0;
    const pacer = deps.scheduler.createPacer(
      {
        sendMedia: (payload) => {
          const key = this.keyFrames.get(payload);
          if (!key || !transport.sendKey?.(key.digit, key)) transport.sendMedia(payload);
          this.recorder?.outbound(payload);
          for (const listener of this.sentListeners) listener(payload);
          this.echo.outbound(decodeMulawInto(payload, this.sentPcm));
          // A frame from the queue (not the background alone): the agent's voice went out.
          if (pacer.framesSent !== spoken) {
            spoken = pacer.framesSent;
            this.latency.frameSent();
          }
        },
        sendMark: (name) => {
          transport.sendMark(name);
          if (END_MARK.test(name)) this.awaitEndMark(name);
        },
      },
      {
        fill: deps.background === undefined ? backgroundMixer(settings.backgroundTrack) : deps.background,
        onError: (error) => this.deps.log?.warn({ err: error, call_id: settings.callId }, 'sending audio failed'),
      },
    );
    this.pacer = pacer;
    const vad = deps.vad;
    if (vad instanceof Promise) {
      void vad.then(
        (ready) => this.vadReady(ready),
        (error: unknown) => {
          this.deps.log?.warn({ err: error, call_id: settings.callId }, 'voice activity detection unavailable');
          this.vadReady(new EnergyVad());
        },
      );
    } else {
      this.vad = vad;
    }
    this.unsubscribe = transport.on((event) => this.onMedia(event));
    void this.openStt();
  }

  get backlog(): number {
    return this.loadingQueue.length + this.scoreQueue.length;
  }

  on(listener: LegListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onAudio(listener: (payload: Buffer, pcm: Int16Array) => void): () => void {
    this.audioListeners.add(listener);
    return () => this.audioListeners.delete(listener);
  }

  onSent(listener: (payload: Buffer) => void): () => void {
    this.sentListeners.add(listener);
    return () => this.sentListeners.delete(listener);
  }

  /**
   * Holds the agent's speech in the pacer (the far end plays out the little it was sent ahead).
   * The call's figures get the time from the voice's onset to the agent's silence at the carrier.
   */
  pause(): void {
    if (this.gated) {
      // The caller went on before the reply was heard: it is held now for their words, silent from the onset.
      this.gated = false;
      this.latency.held(0, false);
      return;
    }
    if (!this.speaking || this.pacer.paused) return;
    this.pacer.pause();
    if (this.transport.dropsOnClear) {
      // Silent now, not once the far end has played what it holds: it drops that, and the pacer
      // takes it back to send again if the agent goes on.
      this.pacer.rewind((mark) => this.renameMark(mark));
      this.transport.clear();
    }
    const onset = this.voiceOnset;
    if (onset) this.latency.held(onset.lagMs + (performance.now() - onset.detectedAt) + this.pacer.bufferedMs);
  }

  resume(heard = ''): void {
    if (!this.pacer.paused) return;
    this.pacer.resume();
    // From the end of the voice over it (the last voiced frame heard) to going on.
    this.latency.released('resumed', { words: heard.trim() !== '', afterMs: performance.now() - this.lastVoicedAt });
  }

  /**
   * An end mark that never comes back (a carrier that lost it) would hold the agent's turn for
   * good: END_MARK_ECHO_MS after it went out, the utterance counts as said.
   */
  private awaitEndMark(name: string): void {
    const timer = setTimeout(() => {
      const handler = this.markHandlers.get(name);
      if (!handler || this.ended) return;
      this.markHandlers.delete(name);
      this.deps.log?.warn({ call_id: this.settings.callId }, 'the carrier did not echo the end of an utterance');
      handler();
    }, END_MARK_ECHO_MS);
    timer.unref();
  }

  /** A mark sent again under a new name: the far end may echo the old one when it is cleared. */
  private renameMark(name: string): string {
    const renamed = `${name}~${++this.seq}`;
    const handler = this.markHandlers.get(name);
    this.markHandlers.delete(name);
    if (handler) this.markHandlers.set(renamed, handler);
    return renamed;
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  private emit(event: LegEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  // ---- inbound -------------------------------------------------------------------------------

  private vadReady(vad: Vad): void {
    this.vad = vad;
    if (this.ended) {
      void Promise.resolve(vad.close?.()).catch(() => undefined);
      return;
    }
    for (const frame of this.loadingQueue.splice(0)) this.score(vad, frame);
  }

  private async openStt(): Promise<void> {
    if (!this.deps.stt) {
      this.sttPending = null;
      return;
    }
    try {
      const stt = this.deps.stt;
      // A span per provider request: the recogniser's stream is opened at the call's start, and
      // again after a break. A refusal for now (429 over a concurrency limit, 5xx, no connection) is asked once more,
      // after the wait the vendor named, if that comes soon: the caller's audio is kept meanwhile.
      const stream = await inSpan(
        'stt.open',
        { 'openline.call.id': this.settings.callId, 'openline.stt.provider': stt.name },
        () =>
          retrying(
            () =>
              stt.open({
                language: this.settings.language,
                keywords: this.settings.keywords,
                encoding: 'mulaw',
                sampleRate: SAMPLE_RATE,
              }),
            {
              retries: 1,
              backoffMs: 500,
              withinMs: 3000,
              onRetry: (error) =>
                this.deps.log?.warn(
                  { call_id: this.settings.callId, reason: error.message },
                  'speech recognition refused the stream: asking again',
                ),
            },
          ),
      );
      if (this.ended) {
        await stream.close();
        return;
      }
      this.stt = stream;
      this.sttUnsubscribe = stream.on((event) => this.onStt(event));
      for (const frame of this.sttCarried) stream.write(frame);
      for (const frame of this.sttPending ?? []) stream.write(frame);
      this.sttCarried = [];
      this.sttPending = null;
      if (this.utterance?.vadEndedFrame !== null && this.utterance?.vadEndedFrame !== undefined) stream.finalize();
    } catch (error) {
      this.sttCarried = [];
      this.sttPending = null;
      this.deps.onProviderError?.('stt');
      this.deps.log?.warn({ err: error, call_id: this.settings.callId }, 'speech recognition unavailable');
      if (!this.ended) this.providerFailed('stt', this.deps.stt.name, errorMessage(error));
    }
  }

  private providerFailed(kind: 'stt' | 'tts', provider: string, message: string): void {
    this.emit({ type: 'provider_failed', at: this.now(), kind, provider, message: message.slice(0, 200) });
  }

  private onMedia(event: MediaEvent): void {
    if (this.ended) return;
    switch (event.type) {
      case 'media':
        return this.inbound(event.payload);
      case 'dtmf':
        this.emit({ type: 'dtmf', at: this.now(), digit: event.digit });
        return;
      case 'mark': {
        const handler = this.markHandlers.get(event.name);
        if (handler) {
          this.markHandlers.delete(event.name);
          handler();
        }
        return;
      }
      case 'stop':
        this.end();
        this.emit({
          type: 'hangup',
          at: this.now(),
          reason: event.reason,
          ...(event.error !== undefined && { error: event.error }),
        });
        return;
    }
  }

  private inbound(received: Buffer): void {
    const heard = decodeMulawInto(received, allocPcm(received.length));
    this.recorder?.inbound(heard);
    // The agent's own voice coming back on the line is silence to everything that listens for the
    // caller (answer detection, VAD, STT); the recording keeps what the line carried.
    const echo = this.echo.isEcho(heard);
    if (echo) this.latency.echoHeard(received.length / (SAMPLE_RATE / 1000));
    // The recorder copied the frame: it can be silenced in place.
    const pcm = echo ? heard.fill(0) : heard;
    const payload = !echo
      ? received
      : received.length === FRAME_SAMPLES
        ? SILENT_FRAME
        : Buffer.alloc(received.length, MULAW_SILENCE);
    for (const listener of this.audioListeners) listener(payload, pcm);
    if (this.deps.audioEvents) this.emit({ type: 'audio', at: this.now(), payload });
    if (this.stt) this.stt.write(payload);
    else if (this.sttPending) {
      this.sttPending.push(payload);
      if (this.sttPending.length > STT_PENDING_MAX) this.sttPending.shift();
    }
    const tone = this.tones?.push(pcm);
    if (tone) this.emit({ type: 'tone', at: this.now(), ...tone });
    if (this.vad) return this.score(this.vad, pcm);
    this.loadingQueue.push(pcm);
    // A model that takes long to load must not make the call fall further and further behind.
    const stale = this.loadingQueue.length - VAD_LOADING_MAX - 1;
    if (stale >= 0 && this.loadingQueue[stale] !== null) {
      this.loadingQueue[stale] = null;
      this.skippedFrames++;
    }
  }

  /**
   * Gives a frame to the VAD and applies its score in frame order: at once when the VAD answers at
   * once and nothing is waiting, else after the scores before it (an asynchronous VAD, Silero).
   */
  private score(vad: Vad, pcm: Int16Array | null): void {
    if (pcm && this.scoreQueue.length >= VAD_BACKLOG_MAX) {
      // A VAD that cannot keep up must not make the call fall further and further behind.
      pcm = null;
      this.skippedFrames++;
    }
    const score = pcm ? vad.process(pcm) : null;
    if (typeof score === 'number' && !this.draining && this.scoreQueue.length === 0) return this.onScore(score);
    this.scoreQueue.push(score);
    if (!this.draining) void this.drain();
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (!this.ended && this.scoreQueue.length > 0) {
        const next = this.scoreQueue.shift()!;
        let score: number;
        if (next === null) score = this.lastScore;
        else if (typeof next === 'number') score = next;
        else {
          // Awaited here rather than in a helper: one promise less per frame, fifty frames a second a call.
          try {
            score = await next;
          } catch (error) {
            this.deps.log?.warn({ err: error, call_id: this.settings.callId }, 'voice activity detection failed');
            score = 0;
          }
        }
        this.onScore(score);
      }
    } finally {
      this.draining = false;
    }
  }

  private onScore(score: number): void {
    if (this.ended) return;
    this.lastScore = score;
    const signal = this.turns.push(score);
    const frame = this.turns.frameIndex;
    const u = this.utterance;
    // The reply is heard once the threshold's silence is over, unless a voice is starting again.
    if (this.gated && frame >= this.replyGate && !u && !this.turns.rising) {
      this.gated = false;
      this.pacer.resume();
    }
    if (signal?.type === 'start') {
      if (u) {
        // They went on before the STT settled: the same turn continues.
        u.vadEndedFrame = null;
        u.settled = false;
        u.lastVoicedFrame = frame;
        u.lastVoicedAt = this.lastVoicedAt = performance.now();
      } else {
        const started = (this.utterance = newUtterance(signal.startFrame, frame, null));
        this.lastVoicedAt = performance.now();
        started.announced = false;
        if (!this.echo.pending) this.announce(started);
      }
      return;
    }
    if (!u) return;
    if (!u.announced && !this.echo.pending && !this.ownVoice(u)) this.announce(u);
    if (this.turns.inSpeech && this.turns.silentFor === 0) {
      u.lastVoicedFrame = frame;
      u.lastVoicedAt = this.lastVoicedAt = performance.now();
      return;
    }
    // A short silence: the voice has stopped for now (the turn may go on). The recogniser is
    // asked to settle what it heard already, so that its final is in when the silence ends the
    // turn, rather than asked for then (its answer would add to the caller's wait). If the
    // caller goes on, their further words come in further finals of the same turn.
    if (this.turns.inSpeech && this.turns.silentFor === PAUSED_FRAMES) {
      this.stt?.finalize();
      if (u.announced) this.emit({ type: 'speech_paused', at: this.now() });
    }
    if (signal?.type === 'end') {
      u.vadEndedFrame = frame;
      this.stt?.finalize();
      if (u.settled || u.sttEnded) this.endTurn();
      return;
    }
    if (u.vadEndedFrame !== null && frame - u.vadEndedFrame >= FINAL_WAIT_FRAMES) this.endTurn();
  }

  private onStt(event: SttEvent): void {
    if (this.ended) return;
    if (event.type === 'error') {
      this.deps.onProviderError?.('stt');
      this.deps.log?.warn({ call_id: this.settings.callId, reason: event.message }, 'speech recognition failed');
      // The stream is unusable: open another (audio is kept meanwhile), which first hears what the
      // broken one had not settled, so no word of the turn is lost. A second break within a minute
      // of the last is final: the recogniser is not coming back.
      const unsettled = this.stt?.unsettled?.() ?? [];
      this.sttUnsubscribe?.();
      void this.stt?.close().catch(() => undefined);
      this.stt = undefined;
      const brokeAt = this.now().getTime();
      const lastBreak = this.sttBrokeAt;
      this.sttBrokeAt = brokeAt;
      if (lastBreak !== undefined && brokeAt - lastBreak < STT_BREAK_WINDOW_MS) {
        this.providerFailed('stt', this.deps.stt?.name ?? 'stt', event.message);
        return;
      }
      this.sttCarried = unsettled;
      this.sttPending = [];
      void this.openStt();
      return;
    }
    const text = event.text.trim();
    if (event.type === 'partial') {
      if (!text) return;
      const u = this.utterance;
      if (!u) return;
      u.partial = text;
      // More words after an end-of-utterance final: the turn is not over after all.
      u.sttEnded = false;
      this.heardWords(u);
      if (u.announced && !this.ownVoice(u))
        this.emit({ type: 'speech_partial', text: [...u.finals, text].join(' '), at: this.now() });
      return;
    }
    let u = this.utterance;
    if (!u) {
      if (!text) return;
      // Words the VAD did not hear as speech (a quiet voice): the STT alone makes the turn.
      const frame = this.turns.frameIndex;
      u = this.utterance = newUtterance(frame, frame, frame);
      this.emit({ type: 'speech_start', at: this.now() });
    }
    if (text) u.finals.push(text);
    u.partial = '';
    this.heardWords(u);
    u.sttFinalAt = performance.now();
    if (event.endOfUtterance) u.sttEnded = true;
    if (u.vadEndedFrame !== null) {
      u.settled = true;
      this.endTurn();
    } else if (text && u.announced && !this.ownVoice(u)) {
      this.emit({ type: 'speech_partial', text: u.finals.join(' '), at: this.now() });
    }
  }

  /**
   * The words of the turn so far set how much silence ends it: more after words that leave it
   * open, less after a closed sentence once the agent has spoken (turnWords and
   * endOfTurnSilenceMs in ./turn-detector.ts). The rule is English grammar: calls in other
   * languages keep the threshold's silence.
   */
  private heardWords(u: Utterance): void {
    if (!/^en\b/i.test(this.settings.language)) return;
    this.turns.setWords(turnWords([...u.finals, u.partial].join(' ')), !this.spoke);
  }

  /**
   * The voice of the utterance so far was all the agent's own, by the echo path the guard knows now
   * (its first syllables came back before the path was learnt, or passed a guard thrown out by a
   * burst of packets): its words are the agent's, and are no caller's, neither to interrupt nor to answer.
   */
  private ownVoice(u: Utterance): boolean {
    return this.echo.explains((this.turns.frameIndex - u.startFrame + 1) * FRAME_MS);
  }

  /**
   * A voice becomes a caller's: speech_start, with the time since its onset for the call's
   * figures (the VAD tells a voice some frames after it began; one held back as a possible echo,
   * longer), and the words heard so far.
   */
  private announce(u: Utterance): void {
    u.announced = true;
    this.voiceOnset = { lagMs: (this.turns.frameIndex - u.startFrame) * FRAME_MS, detectedAt: performance.now() };
    this.emit({ type: 'speech_start', at: this.now() });
    const words = [...u.finals, u.partial].filter(Boolean).join(' ');
    if (words) this.emit({ type: 'speech_partial', text: words, at: this.now() });
  }

  private endTurn(): void {
    const u = this.utterance;
    if (!u) return;
    this.utterance = null;
    this.turns.setWords('unknown');
    if (!u.announced) {
      // The agent's own voice, known for it before it was announced: no turn of anyone's.
      if (this.ownVoice(u)) return;
      this.announce(u);
    }
    this.replyGate = u.lastVoicedFrame + Math.ceil(endOfTurnMs(this.settings.interruptionThreshold) / FRAME_MS);
    const durationMs = (u.lastVoicedFrame - u.startFrame + 1) * FRAME_MS;
    const text = this.ownVoice(u) ? '' : [...u.finals, u.partial].filter(Boolean).join(' ');
    // Words said over the agent while it goes on talking (a backchannel, or a greeting crossing
    // ours) are answered, if at all, once it has finished: not a response time, so not measured.
    if (text && !this.speaking) this.latency.turnEnded(u.lastVoicedAt, u.sttFinalAt);
    this.emit({ type: 'speech', text, at: this.now(), durationMs });
  }

  // ---- outbound ------------------------------------------------------------------------------

  speak(source: SpeechText, options: { signal?: AbortSignal } = {}): Promise<SpeakResult> {
    const ready = this.deps.ready;
    if (ready && !this.ready) {
      return ready.then(() => {
        this.ready = true;
        return this.speak(source, options);
      });
    }
    const signal = options.signal;
    if (this.ended || signal?.aborted) return Promise.resolve({ played: '', interrupted: true });
    // One thing is said at a time: a new utterance replaces one still playing.
    this.speaking?.finish(true);
    const prefix = `s${++this.seq}`;
    const synthesis = new AbortController();
    return new Promise<SpeakResult>((resolve) => {
      const state: Speaking = {
        prefix,
        text: '',
        words: [],
        echoed: -1,
        finish: (interrupted) => {
          if (this.speaking !== state) return;
          this.speaking = null;
          signal?.removeEventListener('abort', onAbort);
          synthesis.abort();
          for (const name of [...this.markHandlers.keys()])
            if (name.startsWith(`${prefix}:`)) this.markHandlers.delete(name);
          const gated = this.gated;
          this.gated = false;
          if (interrupted && !this.ended) {
            // Held while a voice started over it, and now cut: the voice was an interruption.
            if (this.pacer.paused && !gated) this.latency.released('cut');
            this.pacer.clear();
            this.transport.clear();
            this.latency.abandon();
          } else if (!interrupted && this.pacer.paused) {
            // Held as its last frames played (a voice came over them), and now heard to its end:
            // nothing of it is left to hold, and what is said next must not wait behind the hold.
            this.pacer.resume();
          }
          if (!interrupted) this.spoke = true;
          const { text, words } = state;
          const played = interrupted ? (state.echoed < 0 ? '' : text.slice(0, words[state.echoed]!.end)) : text;
          resolve({ played, interrupted });
        },
      };
      const onAbort = () => state.finish(true);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.speaking = state;
      if (this.turns.frameIndex < this.replyGate) {
        this.pacer.pause();
        this.gated = true;
      }
      this.markHandlers.set(`${prefix}:end`, () => state.finish(false));
      void this.synthesize(state, source, synthesis.signal);
    });
  }

  /**
   * Synthesises what is said sentence by sentence as it comes (a streamed reply starts playing with
   * its first sentence while the rest is written), into paced frames with a mark after each word.
   */
  private async synthesize(state: Speaking, source: SpeechText, signal: AbortSignal): Promise<void> {
    try {
      for await (const sentence of sentencesOf(source)) {
        if (signal.aborted) return;
        // A streamed reply is ready to be heard with its first sentence (a whole one already was).
        if (state.text === '') this.latency.replyReady();
        const offset = state.text === '' ? 0 : state.text.length + 1;
        state.text = state.text === '' ? sentence : `${state.text} ${sentence}`;
        const first = state.words.length;
        for (const word of wordsOf(sentence)) {
          const i = state.words.length;
          state.words.push({ end: offset + word.end });
          this.markHandlers.set(`${state.prefix}:${i}`, () => (state.echoed = Math.max(state.echoed, i)));
        }
        await this.synthesizeSentence(state, sentence, first, signal);
      }
    } catch (error) {
      // The reply's source failed (the model's stream broke): what was said so far stands.
      if (!signal.aborted) this.deps.log?.warn({ err: error, call_id: this.settings.callId }, 'reply stream failed');
    }
    if (signal.aborted) return;
    this.pacer.mark(`${state.prefix}:end`);
  }

  /** One sentence, as one request to the text-to-speech provider (a span of its own). */
  private synthesizeSentence(state: Speaking, text: string, firstWord: number, signal: AbortSignal): Promise<void> {
    return inSpan(
      'tts',
      {
        'openline.call.id': this.settings.callId,
        'openline.tts.provider': this.deps.tts.name,
        'openline.tts.characters': text.length,
      },
      () => this.speakSentence(state, text, firstWord, signal),
    );
  }

  /** One sentence: the TTS streamed into frames, with the marks of its words (from `firstWord`). */
  private async speakSentence(state: Speaking, text: string, firstWord: number, signal: AbortSignal): Promise<void> {
    const words = wordsOf(text);
    const spoken = applyPronunciationGuide(text, this.settings.pronunciationGuide);
    const chars = Math.max(1, text.length);
    const estimate = Math.max(1, Math.round((chars / CHARS_PER_SECOND) * (1000 / FRAME_MS)));
    let carry = new Int16Array(0);
    let frames = 0;
    let nextWord = 0;
    const placeMarks = (total: number, all: boolean) => {
      while (nextWord < words.length && (all || frames >= Math.ceil((words[nextWord]!.end / chars) * total))) {
        this.pacer.mark(`${state.prefix}:${firstWord + nextWord}`);
        nextWord++;
      }
    };
    const pushFrames = (pcm: Int16Array, total: () => number) => {
      for (let at = 0; at + FRAME_SAMPLES <= pcm.length; at += FRAME_SAMPLES) {
        this.pacer.enqueue([encodeMulaw(pcm.subarray(at, at + FRAME_SAMPLES))]);
        frames++;
        placeMarks(total(), false);
      }
    };
    let first = firstWord === 0;
    try {
      const { tts, voice } = this.voice;
      for await (const chunk of tts.synthesize({
        text: spoken,
        voice,
        language: this.settings.language,
        signal,
      })) {
        if (signal.aborted) return;
        if (chunk.pcm.length === 0) continue;
        if (first) {
          first = false;
          this.latency.ttsAudio();
        }
        const pcm8k = resample(chunk.pcm, chunk.sampleRate, SAMPLE_RATE);
        const joined = new Int16Array(carry.length + pcm8k.length);
        joined.set(carry);
        joined.set(pcm8k, carry.length);
        const whole = joined.length - (joined.length % FRAME_SAMPLES);
        pushFrames(joined.subarray(0, whole), () => Math.max(estimate, frames + 1));
        carry = joined.slice(whole);
      }
    } catch (error) {
      if (signal.aborted) return;
      this.deps.onProviderError?.('tts');
      const fallback = this.deps.fallbackTts;
      if (frames === 0 && fallback && this.voice.tts !== fallback.tts) {
        // Nothing of the sentence was heard: the fallback voice says it, and the rest of the call.
        this.deps.log?.warn(
          { err: error, call_id: this.settings.callId },
          'speech synthesis failed: the fallback voice speaks from now on',
        );
        this.voice = fallback;
        return this.speakSentence(state, text, firstWord, signal);
      }
      this.deps.log?.warn({ err: error, call_id: this.settings.callId }, 'speech synthesis failed');
      // A sentence that could not be said at all: the conversation cannot go on.
      if (frames === 0) this.providerFailed('tts', this.voice.tts.name, errorMessage(error));
    }
    if (signal.aborted) return;
    if (carry.length > 0) {
      const last = new Int16Array(FRAME_SAMPLES);
      last.set(carry);
      pushFrames(last, () => frames);
    }
    placeMarks(frames, true);
  }

  sendDtmf(digits: string): Promise<void> {
    // Only what a keypad has; anything else is dropped rather than failing the call.
    const keys = digits.replace(/[^0-9*#A-Dw]/gi, '');
    if (this.ended || keys === '') return Promise.resolve();
    // Key by key, each tone's frames marked as that key's: a transport that takes key events
    // (RTP with telephone-event) sends them as RFC 4733 events, any other sends the tones.
    const frames: Buffer[] = [];
    for (const key of keys) {
      const keyed = toFrames(dtmfTones(key));
      if (key.toLowerCase() !== 'w') {
        const tone = keyed.slice(0, KEY_TONE_FRAMES);
        tone.forEach((frame, i) =>
          this.keyFrames.set(frame, { digit: key.toUpperCase(), first: i === 0, last: i === tone.length - 1 }),
        );
      }
      frames.push(...keyed);
    }
    const name = `d${++this.seq}:end`;
    return new Promise<void>((resolve) => {
      const done = () => {
        this.dtmfWaiters.delete(done);
        resolve();
      };
      this.markHandlers.set(name, done);
      this.pacer.enqueue(frames, { asIs: true });
      this.pacer.mark(name);
      this.dtmfWaiters.add(done);
    });
  }

  private readonly dtmfWaiters = new Set<() => void>();
  /** The frames of key tones queued by sendDtmf, with their key. */
  private readonly keyFrames = new WeakMap<Buffer, { digit: string; first: boolean; last: boolean }>();

  async transfer(to: string): Promise<TransferResult> {
    if (this.ended) return { ok: false, reason: 'the call has ended' };
    if (!this.deps.transfer) return { ok: false, reason: 'this carrier cannot transfer calls' };
    const result = await this.deps.transfer(to);
    if (result.ok) this.end();
    return result;
  }

  async hangup(): Promise<void> {
    if (this.ended) return;
    this.end();
    try {
      await this.deps.hangup?.();
    } finally {
      this.transport.close();
    }
  }

  recording(): Promise<string | null> {
    if (!this.recorder || !this.recordingFile) return Promise.resolve(null);
    this.recordingDone ??= this.recorder.close().then(
      () => this.recordingFile,
      (error: unknown) => {
        this.deps.log?.warn({ err: error, call_id: this.settings.callId }, 'recording failed');
        return null;
      },
    );
    return this.recordingDone;
  }

  /** The call is over for this leg: stop everything, settle what is pending. */
  private end(): void {
    if (this.ended) return;
    const speaking = this.speaking;
    this.ended = true;
    speaking?.finish(true);
    this.latency.abandon();
    this.unsubscribe();
    this.pacer.close();
    this.markHandlers.clear();
    for (const resolve of this.dtmfWaiters) resolve();
    this.dtmfWaiters.clear();
    this.loadingQueue.length = 0;
    // Scores still out are not wanted any more, failed or not.
    for (const score of this.scoreQueue.splice(0)) if (score instanceof Promise) score.catch(() => undefined);
    this.sttUnsubscribe?.();
    void this.stt?.close().catch(() => undefined);
    if (this.vad) void Promise.resolve(this.vad.close?.()).catch(() => undefined);
    void this.recording();
  }
}
