import type { AudioLeg } from '../media/audio-leg.js';
import { CallGrid } from '../media/wav.js';

/** What a listener receives: 16-bit little-endian mono PCM at 16 kHz, both sides mixed. */
export const LISTEN_SAMPLE_RATE = 16_000;

export interface Listener {
  /** One chunk of audio (about 100 ms). */
  audio(chunk: Buffer): void;
  /** The call ended (or this process stopped): no more audio. */
  end(): void;
}

interface LiveCall {
  leg: AudioLeg;
  listeners: Set<Listener>;
  /** Taps on the leg while anyone listens. */
  tap?: { grid: CallGrid; off: () => void };
}

/** Mixes a chunk of interleaved stereo 8 kHz samples into mono 16 kHz bytes (linear interpolation). */
export function mixForListening(stereo: Int16Array): Buffer {
  const frames = stereo.length / 2;
  const out = Buffer.alloc(frames * 4);
  let previous = 0;
  for (let i = 0; i < frames; i++) {
    const mixed = Math.max(-32768, Math.min(32767, stereo[2 * i]! + stereo[2 * i + 1]!));
    out.writeInt16LE(Math.round((previous + mixed) / 2), 4 * i);
    out.writeInt16LE(mixed, 4 * i + 2);
    previous = mixed;
  }
  return out;
}

/**
 * Live listening (POST /v1/calls/{id}/listen): the audio of the calls this process runs, both sides
 * on one time line (the recording's grid, with a short hold), mixed and sent to whoever listens.
 * Nothing is tapped while nobody listens.
 */
export class LiveListening {
  private readonly calls = new Map<string, LiveCall>();

  /** An audio call began; the function returned ends its listeners when the call ends. */
  attach(callId: string, leg: AudioLeg): () => void {
    const live: LiveCall = { leg, listeners: new Set() };
    this.calls.set(callId, live);
    return () => {
      if (this.calls.get(callId) !== live) return;
      this.calls.delete(callId);
      this.untap(live);
      for (const listener of live.listeners) listener.end();
      live.listeners.clear();
    };
  }

  /** True while the call runs here with audio. */
  isLive(callId: string): boolean {
    return this.calls.has(callId);
  }

  /** Adds a listener; undefined when the call does not run here. Returns the function that removes it. */
  listen(callId: string, listener: Listener): (() => void) | undefined {
    const live = this.calls.get(callId);
    if (!live) return undefined;
    live.listeners.add(listener);
    if (!live.tap) {
      const grid = new CallGrid(
        (stereo) => {
          const chunk = mixForListening(stereo);
          for (const l of live.listeners) l.audio(chunk);
        },
        { holdMs: 100, flushMs: 100 },
      );
      const offIn = live.leg.onAudio((payload) => grid.inbound(payload));
      const offOut = live.leg.onSent((payload) => grid.outbound(payload));
      live.tap = {
        grid,
        off: () => {
          offIn();
          offOut();
        },
      };
    }
    return () => {
      live.listeners.delete(listener);
      if (live.listeners.size === 0) this.untap(live);
    };
  }

  private untap(live: LiveCall): void {
    live.tap?.off();
    live.tap = undefined;
  }

  /** Listeners now, across calls (the metrics' gauge, tests). */
  get listenerCount(): number {
    let n = 0;
    for (const live of this.calls.values()) n += live.listeners.size;
    return n;
  }
}
