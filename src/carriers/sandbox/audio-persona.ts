/**
 * The persona's end of a sandbox call in audio mode: the same steps as in text mode (say, tone,
 * listen, record, hang up), carried as audio on an in-process MediaTransport.
 *
 * - Mouth: each line is synthesised with espeak-ng in the persona's voice, cut into 20 ms mu-law
 *   frames and sent one per 20 ms of the clock; between lines the line carries silence frames, as a
 *   telephone line does. Each line is captioned with the frames it occupies (LineCaptions) for
 *   the sandbox STT. Tones (voicemail beeps) are real sine tones.
 * - Ear: every 20 ms the persona takes the next frame our agent sent (silence when none came), runs
 *   the DTMF detector (Goertzel) on it, so an IVR persona reacts to real in-band tones, and an
 *   energy VAD with turn-taking, so it hears when the agent starts and stops talking. The words of
 *   what it heard come from the agent's captions (SpokenCaptions), in proportion to the frames of
 *   each sentence it actually received.
 */
import type { Clock } from '../../clock.js';
import {
  FRAME_MS,
  FRAME_SAMPLES,
  MULAW_SILENCE,
  SAMPLE_RATE,
  concatPcm,
  decodeMulaw,
  encodeMulaw,
  goertzel,
  resample,
  tone,
  toFrames,
} from '../../media/audio.js';
import { DtmfDetector } from '../../media/dtmf.js';
import type { MediaEvent, MediaTransport } from '../../media/transport.js';
import { TurnDetector } from '../../media/turn-detector.js';
import { EnergyVad } from '../../media/vad-energy.js';
import type { TtsProvider } from '../../providers/tts/types.js';
import type { LegEvent, LegListener, SpeakResult } from '../types.js';
import { LineCaptions, SpokenCaptions, heardWords, type LineCaption } from './audio-line.js';

export interface PersonaAudioOptions {
  clock: Clock;
  /** Synthesises the persona's lines (espeak-ng). */
  tts: TtsProvider;
  /** The persona's espeak-ng voice. */
  voice: string;
  language: string;
  /** Captions of what the persona says (read by the sandbox STT on our side). */
  lines: LineCaptions;
  /** Captions of what our agent says. */
  spoken: SpokenCaptions;
  /** The line returns the agent's voice this much quieter (dB, negative) and later (persona `echo`). */
  echo?: { gainDb: number; delayMs: number };
  /** How long the agent must be silent before the persona takes its turn as over. Default 800 ms. */
  endOfTurnMs?: number;
  /** Call-log notes: what the persona said, played and heard. */
  note?(by: 'persona' | 'agent', kind: 'speech' | 'tone' | 'dtmf' | 'hangup', text?: string): void;
}

interface Outgoing {
  frame: Buffer;
  line?: LineCaption;
  /** Called once the frame has gone out. */
  sent?: () => void;
}

const SILENT_FRAME = Buffer.alloc(FRAME_SAMPLES, MULAW_SILENCE);
const DTMF_FREQUENCIES = [697, 770, 852, 941, 1209, 1336, 1477, 1633];
/** Silence between a persona's last word and its hang-up. */
const HANG_UP_AFTER_MS = 800;
/** Most frames handled in one tick when the clock ran ahead (a loaded machine). */
const MAX_SLOTS_PER_TICK = 50;

/** Whether a frame is mostly DTMF tone energy: keys are not speech for the persona's VAD. */
function isKeyTone(pcm: Int16Array): boolean {
  let share = 0;
  for (const f of DTMF_FREQUENCIES) share += goertzel(pcm, f);
  return share >= 0.6;
}

export class PersonaAudioEnd {
  readonly mode = 'audio' as const;
  private readonly listeners = new Set<LegListener>();
  private readonly inbox: LegEvent[] = [];
  private readonly outgoing: Outgoing[] = [];
  private readonly incoming: Buffer[] = [];
  private readonly dtmf = new DtmfDetector();
  private readonly vad = new EnergyVad();
  private readonly turns: TurnDetector;
  private readonly unsubscribe: () => void;
  private readonly startedAt: number;
  private slot = 0;
  private voice: string;
  private sentFrames = 0;
  /** Frame at which the agent's turn under way began. */
  private hearingSince = 0;
  private cancelTimer: (() => void) | null = null;
  private isFinished = false;
  private readonly stopped = new AbortController();
  /** Lines synthesised ahead of being said, by voice and words. */
  private readonly prepared = new Map<string, Promise<Int16Array>>();
  private hearing = false;
  /** The agent's audio as heard, for the line's echo: a ring of samples, `echoWritten` written so far. */
  private readonly echoRing: Int16Array | undefined;
  private echoWritten = 0;
  private readonly echoDelay: number;
  private readonly echoGain: number;
  private resolveClosed!: () => void;
  /** Settles when the line is over for the persona (either side hung up). */
  readonly closed = new Promise<void>((resolve) => (this.resolveClosed = resolve));

  constructor(
    readonly label: string,
    private readonly transport: MediaTransport,
    private readonly options: PersonaAudioOptions,
  ) {
    // The persona's turn-taking: patience expressed as the engine's interruption_threshold (4 ms a unit).
    this.turns = new TurnDetector({ interruptionThreshold: (options.endOfTurnMs ?? 800) / 4 });
    this.voice = options.voice;
    this.echoDelay = Math.round(((options.echo?.delayMs ?? 0) * SAMPLE_RATE) / 1000);
    this.echoGain = 10 ** ((options.echo?.gainDb ?? 0) / 20);
    this.echoRing = options.echo ? new Int16Array(this.echoDelay + 2 * FRAME_SAMPLES) : undefined;
    this.unsubscribe = transport.on((event) => this.onMedia(event));
    this.startedAt = options.clock.now().getTime();
    this.schedule();
  }

  get finished(): boolean {
    return this.isFinished;
  }

  /** The espeak-ng voice the persona speaks with now. */
  get currentVoice(): string {
    return this.voice;
  }

  /** Another persona took over the line (an IVR handing over to a person): its voice from now on. */
  setVoice(voice: string): void {
    this.voice = voice;
  }

  on(listener: LegListener): () => void {
    this.listeners.add(listener);
    this.flush();
    return () => this.listeners.delete(listener);
  }

  /**
   * Starts synthesising a line the persona says next, while it is still saying the one before: a
   * script's lines then follow each other with only their scripted pauses between, as a recorded
   * menu's prompts do, however long synthesis takes on a busy machine.
   */
  prepare(text: string): void {
    const words = text.trim();
    const key = this.lineKey(words);
    if (words === '' || this.isFinished || this.prepared.has(key)) return;
    const pcm = this.synthesize(words, this.stopped.signal);
    pcm.catch(() => undefined);
    this.prepared.set(key, pcm);
  }

  /** Says `text`: synthesises it (or takes it prepared), then sends its frames; resolves once they have all gone out. */
  async speak(text: string, options: { signal?: AbortSignal } = {}): Promise<SpeakResult> {
    const words = text.trim();
    if (this.isFinished || options.signal?.aborted) return { played: '', interrupted: true };
    if (words === '') return { played: '', interrupted: false };
    const key = this.lineKey(words);
    const ready = this.prepared.get(key);
    this.prepared.delete(key);
    const pcm = await (ready ?? this.synthesize(words, options.signal));
    if (this.isFinished || options.signal?.aborted) return { played: '', interrupted: true };
    const frames = toFrames(pcm);
    const line = this.options.lines.add(words, frames.length);
    const completed = await this.play(frames, line, options.signal);
    const played = completed ? words : heardWords(line.words, line.sent, line.planned, false).join(' ');
    this.options.note?.('persona', 'speech', played);
    return { played, interrupted: !completed };
  }

  private lineKey(words: string): string {
    return `${this.voice}\n${words}`;
  }

  /** The persona's voice saying `words`, at the line's sample rate. */
  private async synthesize(words: string, signal?: AbortSignal): Promise<Int16Array> {
    const chunks: Int16Array[] = [];
    for await (const chunk of this.options.tts.synthesize({
      text: words,
      voice: this.voice,
      language: this.options.language,
      ...(signal ? { signal } : {}),
    })) {
      chunks.push(resample(chunk.pcm, chunk.sampleRate, SAMPLE_RATE));
    }
    return concatPcm(chunks);
  }

  /** Plays one tone (a beep) and resolves when it has gone out. */
  async playTone(frequencyHz: number, durationMs: number): Promise<void> {
    if (this.isFinished) return;
    const completed = await this.play(toFrames(tone([frequencyHz], durationMs, 8000)));
    if (completed) this.options.note?.('persona', 'tone', `${frequencyHz} Hz, ${durationMs} ms`);
  }

  async hangup(): Promise<void> {
    if (this.isFinished) return;
    // The phone goes down a moment after the last word, so the other side hears the words whole.
    try {
      await this.options.clock.sleep(HANG_UP_AFTER_MS, this.stopped.signal);
    } catch {
      return;
    }
    if (this.isFinished) return;
    this.options.note?.('persona', 'hangup');
    this.transport.close();
    this.finish();
  }

  /** Queues frames; resolves true when the last has gone out, false when cut (signal, hang-up). */
  private play(frames: Buffer[], line?: LineCaption, signal?: AbortSignal): Promise<boolean> {
    if (frames.length === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const items: Outgoing[] = frames.map((frame) => ({ frame, ...(line ? { line } : {}) }));
      let settled = false;
      const done = (completed: boolean) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        resolve(completed);
      };
      const onAbort = () => {
        for (let i = this.outgoing.length - 1; i >= 0; i--)
          if (items.includes(this.outgoing[i]!)) this.outgoing.splice(i, 1);
        if (line) line.cut = true;
        done(false);
      };
      const onClosed = () => {
        if (line && line.sent < line.planned) line.cut = true;
        done(false);
      };
      items[items.length - 1]!.sent = () => done(true);
      signal?.addEventListener('abort', onAbort, { once: true });
      void this.closed.then(onClosed);
      this.outgoing.push(...items);
    });
  }

  /** The 20 ms loop: slot n is due at start + n * 20 ms of the clock. */
  private schedule(): void {
    if (this.isFinished) return;
    const due = this.startedAt + (this.slot + 1) * FRAME_MS;
    this.cancelTimer = this.options.clock.setTimer(
      () => this.tick(),
      Math.max(0, due - this.options.clock.now().getTime()),
    );
  }

  private tick(): void {
    if (this.isFinished) return;
    const now = this.options.clock.now().getTime();
    let slots = Math.floor((now - this.startedAt) / FRAME_MS) - this.slot;
    // A stalled loop does not send seconds of audio at once: missed slots beyond the limit lapse.
    if (slots > MAX_SLOTS_PER_TICK) {
      this.slot += slots - MAX_SLOTS_PER_TICK;
      slots = MAX_SLOTS_PER_TICK;
    }
    for (let i = 0; i < Math.max(1, slots) && !this.isFinished; i++) {
      this.slot++;
      this.sendSlot();
      this.hearSlot();
    }
    this.schedule();
  }

  private sendSlot(): void {
    // Every frame counts, silence too: the sandbox STT on the other side counts the same frames.
    const index = this.sentFrames++;
    const next = this.outgoing.shift();
    if (!next) return this.transport.sendMedia(this.withEcho(SILENT_FRAME));
    if (next.line) {
      if (next.line.start === null) next.line.start = index;
      next.line.sent++;
    }
    this.transport.sendMedia(this.withEcho(next.frame));
    next.sent?.();
  }

  /** The frame with the agent's voice of `delayMs` ago mixed under it, when the line echoes. */
  private withEcho(frame: Buffer): Buffer {
    const ring = this.echoRing;
    if (!ring || this.echoWritten < this.echoDelay) return frame;
    const pcm = decodeMulaw(frame);
    const from = this.echoWritten - this.echoDelay;
    let any = false;
    for (let i = 0; i < pcm.length; i++) {
      const echo = ring[(from + i) % ring.length]! * this.echoGain;
      if (echo !== 0) any = true;
      pcm[i] = Math.max(-32768, Math.min(32767, Math.round(pcm[i]! + echo)));
    }
    return any ? encodeMulaw(pcm) : frame;
  }

  /** The agent's audio (or silence) the persona just heard, kept for the line's echo. */
  private keepForEcho(pcm: Int16Array | null): void {
    const ring = this.echoRing;
    if (!ring) return;
    for (let i = 0; i < FRAME_SAMPLES; i++) ring[(this.echoWritten + i) % ring.length] = pcm?.[i] ?? 0;
    this.echoWritten += FRAME_SAMPLES;
  }

  /** Hears the next frame from the agent, or a silent one when none arrived for this slot. */
  private hearSlot(): void {
    // Keep up with a sender running slightly ahead of this loop: take one more frame when behind.
    const take = this.incoming.length > 3 ? 2 : 1;
    for (let i = 0; i < take; i++) {
      const payload = this.incoming.shift();
      this.hear(payload ? decodeMulaw(payload) : null);
      if (!payload) break;
    }
  }

  private hear(pcm: Int16Array | null): void {
    this.keepForEcho(pcm);
    let score = 0;
    let key = false;
    if (pcm) {
      for (const digit of this.dtmf.push(pcm)) {
        this.options.note?.('agent', 'dtmf', digit);
        this.emit({ type: 'dtmf', at: this.now(), digit });
      }
      const vad = this.vad.process(pcm);
      key = isKeyTone(pcm);
      score = key ? 0 : vad;
    }
    const signal = this.turns.push(score);
    const spoken = this.options.spoken;
    spoken.prune();
    if (signal?.type === 'start' && !this.hearing) {
      this.hearing = true;
      this.hearingSince = signal.startFrame;
      this.emit({ type: 'speech_start', at: this.now() });
    }
    if (!this.hearing) return;
    // What arrives is counted against the sentences the agent said, in order.
    if (pcm && !key) {
      const playing = spoken.pending.find((c) => !c.cut && (!c.complete || c.heard < c.frames));
      if (playing) playing.heard++;
    }
    if (this.turns.inSpeech) return;
    // The agent has been silent long enough; but a sentence still under way (a long pause inside
    // it) keeps the turn open until the rest of it plays or it is cut.
    const underway = spoken.pending.some(
      (c) => c.heard > 0 && !c.cut && (!c.complete || c.heard < Math.floor(c.frames * 0.85)),
    );
    if (underway) return;
    this.endTurn();
  }

  /** The agent's turn is over for the persona: it hears the words of the audio it received. */
  private endTurn(): void {
    const spoken = this.options.spoken;
    const heard = spoken.pending.filter((c) => c.heard > 0);
    const text = heard
      .map((c) => {
        const whole = c.complete && !c.cut && c.heard >= Math.floor(c.frames * 0.85);
        return heardWords(c.words, c.heard, c.frames, whole).join(' ');
      })
      .filter(Boolean)
      .join(' ');
    for (const c of heard) spoken.pending.splice(spoken.pending.indexOf(c), 1);
    this.hearing = false;
    const durationMs = Math.max(0, this.turns.frameIndex - this.turns.silentFor - this.hearingSince + 1) * FRAME_MS;
    if (text) this.options.note?.('agent', 'speech', text);
    this.emit({ type: 'speech', text, at: this.now(), durationMs });
  }

  private onMedia(event: MediaEvent): void {
    if (event.type === 'media') {
      this.incoming.push(event.payload);
      // Frames the loop cannot take (far behind) are dropped: a real line's jitter buffer would too.
      if (this.incoming.length > 250) this.incoming.shift();
    } else if (event.type === 'stop') {
      // The line dropped: what had arrived is still heard, and words under way count as said
      // (a voicemail keeps the message up to the moment the caller hangs up).
      while (this.incoming.length > 0) this.hear(decodeMulaw(this.incoming.shift()!));
      if (this.hearing) this.endTurn();
      this.options.note?.('agent', 'hangup');
      this.emit({ type: 'hangup', at: this.now(), reason: event.reason });
      this.finish();
    }
  }

  private finish(): void {
    if (this.isFinished) return;
    this.isFinished = true;
    this.stopped.abort();
    this.prepared.clear();
    this.cancelTimer?.();
    this.unsubscribe();
    this.outgoing.length = 0;
    this.resolveClosed();
  }

  private emit(event: LegEvent): void {
    this.inbox.push(event);
    this.flush();
  }

  private flush(): void {
    if (this.listeners.size === 0) return;
    while (this.inbox.length > 0) {
      const event = this.inbox.shift()!;
      for (const listener of [...this.listeners]) listener(event);
    }
  }

  private now(): Date {
    return this.options.clock.now();
  }
}
