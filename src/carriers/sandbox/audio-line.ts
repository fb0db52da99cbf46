/**
 * The wire of the sandbox's audio mode: an in-process pair of MediaTransports (what one end sends,
 * the other receives as 20 ms mu-law frames, in order), and the caption side channel through which
 * the sandbox knows the words of the audio it carries.
 *
 * Captions are what a transcript oracle needs and nothing more: each line a persona synthesises is
 * registered with the span of frames it occupies on the line; each sentence our agent's TTS
 * synthesises is registered with its length. The sandbox STT (src/carriers/sandbox/stt.ts) and
 * the persona's ear reveal a caption's words only as its audio is actually received and heard as
 * voiced, so a line cut short, or never heard, yields the words that were heard and no more.
 */
import type { MediaEvent, MediaListener, MediaTransport } from '../../media/transport.js';
import { FRAME_MS } from '../../media/audio.js';

/** The words of a text, as a recogniser would give them. */
export function captionWords(text: string): string[] {
  return text.split(/\s+/).filter((w) => w.length > 0);
}

/** One line a persona says: its text and where its frames are in the persona-to-agent stream. */
export interface LineCaption {
  readonly text: string;
  readonly words: readonly string[];
  /** Index of the line's first frame in the stream, once it has been sent. */
  start: number | null;
  /** Frames the whole line takes. */
  readonly planned: number;
  /** Frames sent so far. */
  sent: number;
  /** The line was cut (barge-in, hang-up): `sent` frames are all there will be. */
  cut: boolean;
}

/**
 * The persona-to-agent captions, indexed by frame: the persona's end counts the frames it sends
 * and places each line on that count; the sandbox STT counts the frames it receives (the pair
 * loses none and keeps their order), so both counts name the same frames.
 */
export class LineCaptions {
  private readonly lines: LineCaption[] = [];

  add(text: string, planned: number): LineCaption {
    const line: LineCaption = { text, words: captionWords(text), start: null, planned, sent: 0, cut: false };
    this.lines.push(line);
    // Old lines are of no use once far behind; keep the list short on long calls.
    if (this.lines.length > 200) this.lines.shift();
    return line;
  }

  /** The line frame `index` belongs to, if any. */
  at(index: number): LineCaption | undefined {
    for (let i = this.lines.length - 1; i >= 0; i--) {
      const line = this.lines[i]!;
      if (line.start === null || index < line.start) continue;
      return index < line.start + line.sent || (!line.cut && index < line.start + line.planned) ? line : undefined;
    }
    return undefined;
  }

  /** The line's last frame index (of what was, or will be, sent). */
  static endOf(line: LineCaption): number | null {
    if (line.start === null) return null;
    return line.start + (line.cut ? line.sent : line.planned) - 1;
  }
}

/** One sentence our agent's TTS synthesised. */
export interface SpokenCaption {
  readonly text: string;
  readonly words: readonly string[];
  /** 20 ms frames of audio synthesised so far. */
  frames: number;
  /** Synthesis finished: `frames` is the whole sentence. */
  complete: boolean;
  /** Cut before it all played (the agent was interrupted, or its synthesis aborted). */
  cut: boolean;
  /** Frames of it the persona has heard. */
  heard: number;
}

/**
 * The agent-to-persona captions, in the order the agent said them. The agent's audio leg paces
 * its frames itself, so they are placed by order and length: the persona's ear binds each stretch
 * of speech it hears to the next sentence and counts the frames it heard of it.
 */
export class SpokenCaptions {
  readonly pending: SpokenCaption[] = [];

  open(text: string): SpokenCaption {
    const caption: SpokenCaption = {
      text,
      words: captionWords(text),
      frames: 0,
      complete: false,
      cut: false,
      heard: 0,
    };
    this.pending.push(caption);
    return caption;
  }

  /** The agent's outbound audio was cleared: nothing synthesised so far will play any further. */
  cutAll(): void {
    for (const caption of this.pending) caption.cut = true;
  }

  /** Drops sentences that will never be heard (cut or synthesised empty before any frame arrived). */
  prune(): void {
    while (this.pending.length > 0) {
      const first = this.pending[0]!;
      if (first.heard > 0 || !(first.cut || (first.complete && first.frames === 0))) break;
      this.pending.shift();
    }
  }

  /** Sentences already heard in full are done with. */
  consumeHeard(): SpokenCaption[] {
    const done: SpokenCaption[] = [];
    while (this.pending.length > 0) {
      const first = this.pending[0]!;
      const whole = first.complete && first.heard >= first.frames;
      if (!whole && !(first.cut && first.heard > 0)) break;
      done.push(this.pending.shift()!);
    }
    return done;
  }
}

/** The words of `caption` heard so far: in proportion to its audio, all of it once heard whole. */
export function heardWords(words: readonly string[], heard: number, total: number, whole: boolean): string[] {
  if (whole) return [...words];
  if (total <= 0) return [];
  return words.slice(0, Math.floor((words.length * Math.min(heard, total)) / total));
}

/** One end of an in-process media line. */
export class InProcessMedia implements MediaTransport {
  private peer: InProcessMedia | null = null;
  private readonly listeners = new Set<MediaListener>();
  private readonly inbox: Array<MediaEvent | (() => void)> = [];
  private flushing = false;
  private isClosed = false;
  private sent = 0;
  /** Called when this end asks to clear its unplayed audio. */
  onClear: (() => void) | null = null;

  constructor(readonly label: string) {}

  static pair(labels: [string, string] = ['agent', 'persona']): [InProcessMedia, InProcessMedia] {
    const a = new InProcessMedia(labels[0]);
    const b = new InProcessMedia(labels[1]);
    a.peer = b;
    b.peer = a;
    return [a, b];
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Frames this end has sent. */
  get framesSent(): number {
    return this.sent;
  }

  on(listener: MediaListener): () => void {
    this.listeners.add(listener);
    this.schedule();
    return () => this.listeners.delete(listener);
  }

  sendMedia(payload: Buffer): void {
    if (this.isClosed || !this.peer) return;
    const timestampMs = this.sent++ * FRAME_MS;
    this.peer.deliver({ type: 'media', payload: Buffer.from(payload), timestampMs });
  }

  /** The far end plays frames as they arrive: the mark comes back once the frames before it were delivered. */
  sendMark(name: string): void {
    if (this.isClosed || !this.peer) return;
    this.peer.deliver(() => this.deliver({ type: 'mark', name }));
  }

  /** Nothing is buffered on the line itself; whoever listens for clears (captions) is told. */
  clear(): void {
    if (!this.isClosed) this.onClear?.();
  }

  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    const peer = this.peer;
    if (peer && !peer.isClosed) {
      peer.deliver({ type: 'stop', reason: 'remote' });
      peer.isClosed = true;
    }
  }

  /** The network drops the line: both ends hear a `network` stop. */
  drop(): void {
    for (const end of [this, this.peer]) {
      if (!end || end.isClosed) continue;
      end.isClosed = true;
      end.deliver({ type: 'stop', reason: 'network' });
    }
  }

  private deliver(event: MediaEvent | (() => void)): void {
    this.inbox.push(event);
    this.schedule();
  }

  private schedule(): void {
    if (this.flushing || this.inbox.length === 0 || this.listeners.size === 0) return;
    this.flushing = true;
    queueMicrotask(() => {
      this.flushing = false;
      try {
        while (this.inbox.length > 0 && this.listeners.size > 0) {
          const item = this.inbox.shift()!;
          if (typeof item === 'function') item();
          else for (const listener of [...this.listeners]) listener(item);
        }
      } finally {
        this.schedule();
      }
    });
  }
}
