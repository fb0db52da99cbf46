import type { CallLeg, LegEvent, LegListener, SpeakResult, SpeechText } from '../carriers/types.js';

/** A leg event as the far end makes it (the time is stamped on emitting). */
export type FarEvent = { [K in LegEvent['type']]: Omit<Extract<LegEvent, { type: K }>, 'at'> }[LegEvent['type']];

/**
 * A leg whose far end a test plays: it says everything at once (keeping what was said), transfers
 * at once, and the test emits the far end's events.
 */
export class ScriptedLeg implements CallLeg {
  readonly said: string[] = [];
  hungUp = false;
  private listeners: LegListener[] = [];

  constructor(readonly mode: 'text' | 'audio' = 'text') {}

  on(listener: LegListener): () => void {
    this.listeners.push(listener);
    return () => (this.listeners = this.listeners.filter((l) => l !== listener));
  }

  emit(event: FarEvent): void {
    for (const listener of this.listeners) listener({ ...event, at: new Date() } as LegEvent);
  }

  async speak(text: SpeechText): Promise<SpeakResult> {
    let words = '';
    if (typeof text === 'string') words = text;
    else for await (const piece of text) words += piece;
    this.said.push(words);
    return { played: words, interrupted: false };
  }

  sendDtmf(): Promise<void> {
    return Promise.resolve();
  }

  transfer(): Promise<{ ok: true }> {
    return Promise.resolve({ ok: true });
  }

  hangup(): Promise<void> {
    this.hungUp = true;
    return Promise.resolve();
  }
}

/**
 * An audio leg played by a test: its answering-machine verdicts (`answered_by`) and the
 * recogniser's words are emitted as the detector over the audio and the recogniser would; it
 * carries no frames.
 */
export class AudioScriptedLeg extends ScriptedLeg {
  constructor() {
    super('audio');
  }

  onAudio(): () => void {
    return () => undefined;
  }
}
