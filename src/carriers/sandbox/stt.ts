/**
 * The sandbox STT: the transcript source of the sandbox's audio mode. It is NOT speech
 * recognition. The sandbox network synthesised every line a persona says, so it knows each line's
 * text and the span of frames the line occupies on the line (the caption side channel,
 * ./audio-line.ts). This STT is an honest oracle over those captions: it counts
 * the frames it actually receives, runs an energy VAD over them, and reveals a line's words only
 * for audio it received and found voiced:
 *
 * - a partial transcript grows in proportion to the part of the line's frames received, updated
 *   on voiced frames;
 * - the final transcript comes when the line's last frame has been received (all its words, if
 *   it was heard voiced at all), or earlier when the audio leg asks to finalize (the words heard
 *   so far); a line cut short yields the words of the part that was sent;
 * - audio with no caption (noise, tones, silence) yields nothing, and a line nobody received
 *   yields nothing either.
 *
 * Real recognition of real callers is Deepgram's (src/providers/stt/deepgram.ts).
 */
import { decodeMulaw } from '../../media/audio.js';
import { EnergyVad } from '../../media/vad-energy.js';
import type { Vad } from '../../media/vad.js';
import { LineCaptions, heardWords, type LineCaption } from './audio-line.js';
import type { SttEvent, SttOptions, SttProvider, SttStream } from '../../providers/stt/types.js';

interface Progress {
  /** Frames of the line received. */
  received: number;
  voiced: number;
  /** Words already shown (partial or final) and words already settled by a final. */
  revealed: number;
  settled: number;
  final: boolean;
}

class SandboxSttStream implements SttStream {
  private readonly listeners = new Set<(event: SttEvent) => void>();
  private readonly progress = new Map<LineCaption, Progress>();
  private index = 0;
  private current: LineCaption | undefined;
  private closed = false;

  constructor(
    private readonly captions: LineCaptions,
    private readonly vad: Vad,
  ) {}

  on(listener: (event: SttEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  write(frame: Buffer): void {
    if (this.closed) return;
    const index = this.index++;
    const score = this.vad.process(decodeMulaw(frame));
    const voiced = typeof score === 'number' && score >= 0.5;
    const line = this.captions.at(index);
    if (this.current && this.current !== line) {
      const end = LineCaptions.endOf(this.current);
      this.settle(this.current, end !== null && index > end);
    }
    this.current = line;
    if (!line) return;
    let p = this.progress.get(line);
    if (!p) {
      p = { received: 0, voiced: 0, revealed: 0, settled: 0, final: false };
      this.progress.set(line, p);
    }
    if (p.final) return;
    p.received++;
    if (voiced) p.voiced++;
    const end = LineCaptions.endOf(line);
    if (end !== null && index >= end) {
      this.settle(line, true);
      this.current = undefined;
      return;
    }
    if (!voiced) return;
    const total = line.planned;
    const words = heardWords(line.words, p.received, total, false);
    if (words.length > p.revealed) {
      p.revealed = words.length;
      this.emit({ type: 'partial', text: words.slice(p.settled).join(' ') });
    }
  }

  /** The audio leg's VAD heard the speaker stop: what was heard of the line under way is final. */
  finalize(): void {
    if (this.closed) return;
    if (this.current && this.progress.has(this.current)) this.settle(this.current, false);
    // Nothing of a line under way: as a recogniser does, an empty final says there is nothing more.
    else this.emit({ type: 'final', text: '', endOfUtterance: true });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    this.progress.clear();
    await this.vad.close?.();
  }

  /**
   * Sends the final for `line`: all its words when its audio was received to the end (and some of
   * it was voiced), else the words heard so far. Finals carry only words not settled before; a line
   * finalized early (the speaker paused) gives its later words in a further final.
   */
  private settle(line: LineCaption, reachedEnd: boolean): void {
    const p = this.progress.get(line);
    if (!p || p.final) return;
    const total = line.planned;
    const whole = reachedEnd && p.voiced > 0 && !line.cut;
    const words = p.voiced > 0 ? heardWords(line.words, p.received, total, whole) : [];
    const fresh = words.slice(p.settled);
    p.settled = p.revealed = Math.max(p.settled, words.length);
    if (reachedEnd) {
      p.final = true;
      this.progress.delete(line);
    }
    this.emit({ type: 'final', text: fresh.join(' '), endOfUtterance: reachedEnd });
  }

  private emit(event: SttEvent): void {
    for (const listener of [...this.listeners]) listener(event);
  }
}

export interface SandboxSttOptions {
  /** The VAD that decides what was voiced. Default: a fresh energy VAD per stream. */
  vad?: () => Vad;
}

/** The sandbox STT of one call: it reveals the words of `captions` (that call's persona lines). */
export class SandboxStt implements SttProvider {
  readonly name = 'sandbox';

  constructor(
    private readonly captions: LineCaptions,
    private readonly options: SandboxSttOptions = {},
  ) {}

  open(options: SttOptions): Promise<SttStream> {
    void options;
    return Promise.resolve(new SandboxSttStream(this.captions, this.options.vad?.() ?? new EnergyVad()));
  }
}
