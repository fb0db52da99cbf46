/**
 * Per-turn latency of an audio call (the call record's `latency` field and `latency` events):
 * how long the caller waited between the end of their speech and the first frame of the agent's
 * answer, and where that time went.
 *
 * Times are taken with a monotonic clock (performance.now) and stored both as offsets and as the
 * wall-clock instants they correspond to. A turn opens when the leg hands the session a finished
 * utterance, and closes when the first frame of the next thing the agent says has been sent.
 */

import { performance } from 'node:perf_hooks';

/** One answered turn. Durations are milliseconds, rounded to 0.1 ms. */
export interface TurnLatency {
  /** 1 for the first answered turn of the call. */
  turn: number;
  /** When the caller's last voiced frame arrived (VAD end of speech), ISO 8601. */
  speech_end_at: string;
  /** End of speech -> the STT's final transcript (includes the turn's trailing silence). Null without a final. */
  stt_ms: number | null;
  /** End of speech -> the leg handed the utterance to the session (end of turn). */
  turn_ms: number;
  /**
   * End of turn -> the agent's reply was ready to be said: the language model's answer (its first
   * sentence, when the reply is streamed and spoken as it is written), or the offline model's; the
   * session may first wait for a merged turn.
   */
  llm_ms: number;
  /**
   * End of turn -> the language model's first token of the reply (text or a function call). Null
   * when no language model answered the turn (the offline model, a pathway's static text).
   */
  llm_first_token_ms: number | null;
  /** Reply ready -> the first synthesised audio. */
  tts_ms: number;
  /** First synthesised audio -> the first frame sent to the carrier (framing, pacing). */
  send_ms: number;
  /** End of speech -> first frame sent: what the caller waited. */
  total_ms: number;
}

export interface LatencySummary {
  turns: number;
  /** Medians and worst of total_ms over the turns (null with no turn). */
  total_ms_p50: number | null;
  total_ms_max: number | null;
  stt_ms_p50: number | null;
  llm_ms_p50: number | null;
  llm_first_token_ms_p50: number | null;
  tts_ms_p50: number | null;
}

/** How the agent yielded when voices started over it (docs/audio.md, Interruptions). */
export interface InterruptionReport {
  /** Times the agent fell silent because a voice started over it. */
  held: number;
  /** ... and went on from where it stopped (a backchannel, a cough, a noise, no words). */
  resumed: number;
  /** ... and stopped for good (their words were an interruption). */
  cut: number;
  /** Of the resumed: after words that were no interruption ("uh huh", "okay"). */
  backchannels: number;
  /** Of the resumed: after a voice that gave no words at all (a cough, a noise, echo that got through). */
  false_interruptions: number;
  /** The end of the voice over it -> the agent going on, median and worst (resumed holds). */
  resume_ms_p50: number | null;
  resume_ms_max: number | null;
  /** The agent's own voice heard back on the line and ignored by the echo guard, ms of audio. */
  echo_ms: number;
  /**
   * Of the held: those that started while the guard was catching echo (some within the last half
   * second), most likely set off by echo that got past it: the self-interruptions to watch.
   */
  echo_holds: number;
  /**
   * Of the held: replies held before any of them was heard, because the caller went on speaking
   * (the agent fell silent for nothing; no pause in its voice).
   */
  reply_holds: number;
  /** Voice onset -> the agent silent at the carrier (its audio sent ahead played out), median and worst. */
  silent_ms_p50: number | null;
  silent_ms_max: number | null;
}

export interface LatencyReport {
  turns: TurnLatency[];
  summary: LatencySummary;
  interruptions: InterruptionReport;
}

/** What the session tells an audio leg, and what the engine reads from it. */
export interface LatencySource {
  /** The agent's reply to the open turn is ready (the session calls it right after the agent answers). */
  replyReady(): void;
  /** The language model's first token of the reply to the open turn arrived. */
  firstToken(): void;
  /** Called with each turn once its first answering frame has gone out; returns the unsubscribe function. */
  onTurn(listener: (entry: TurnLatency) => void): () => void;
  /** Every measured turn so far, with the summary. */
  report(): LatencyReport;
}

interface OpenTurn {
  speechEnd: number;
  sttFinal: number | null;
  turnEnd: number;
  firstToken: number | null;
  reply: number | null;
  ttsFirst: number | null;
}

const round = (ms: number) => Math.round(ms * 10) / 10;

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return round(sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2);
}

export function summarize(turns: readonly TurnLatency[]): LatencySummary {
  const pick = (f: (t: TurnLatency) => number | null) => turns.map(f).filter((v): v is number => typeof v === 'number');
  const totals = pick((t) => t.total_ms);
  return {
    turns: turns.length,
    total_ms_p50: median(totals),
    total_ms_max: totals.length ? round(Math.max(...totals)) : null,
    stt_ms_p50: median(pick((t) => t.stt_ms)),
    llm_ms_p50: median(pick((t) => t.llm_ms)),
    llm_first_token_ms_p50: median(pick((t) => t.llm_first_token_ms)),
    tts_ms_p50: median(pick((t) => t.tts_ms)),
  };
}

/** A hold this soon after the echo guard last caught echo counts as one of `echo_holds`. */
const ECHO_HOLD_MS = 500;

/**
 * Collects the instants of each turn as the leg and the session reach them. Only the steps of a
 * turn in order count: a reply with no open turn (the greeting, a silence prompt) is not a turn,
 * and a second utterance before the reply replaces the first (the session answers both at once).
 */
export class LatencyTracker implements LatencySource {
  private readonly turns: TurnLatency[] = [];
  private readonly listeners = new Set<(entry: TurnLatency) => void>();
  private open: OpenTurn | null = null;
  private readonly holds: number[] = [];
  private readonly releases = { resumed: 0, cut: 0, backchannels: 0, false_interruptions: 0 };
  private readonly resumes: number[] = [];
  private echoMs = 0;
  private replyHolds = 0;
  private echoHolds = 0;
  /** When the guard last caught echo. */
  private lastEchoAt = -Infinity;
  /** Maps the monotonic clock to wall-clock time. */
  private readonly origin = Date.now() - performance.now();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** The caller's turn ended: their speech stopped at `speechEnd`, the STT final came at `sttFinal`. */
  turnEnded(speechEnd: number, sttFinal: number | null): void {
    this.open = { speechEnd, sttFinal, turnEnd: this.now(), firstToken: null, reply: null, ttsFirst: null };
  }

  firstToken(): void {
    if (this.open && this.open.reply === null && this.open.firstToken === null) this.open.firstToken = this.now();
  }

  replyReady(): void {
    if (this.open && this.open.reply === null) this.open.reply = this.now();
  }

  /** The first synthesised audio of something the agent says. */
  ttsAudio(): void {
    if (this.open && this.open.reply !== null && this.open.ttsFirst === null) this.open.ttsFirst = this.now();
  }

  /** A frame of the agent's speech went out: closes the open turn if it was waiting for it. */
  frameSent(): void {
    const t = this.open;
    if (!t || t.reply === null || t.ttsFirst === null) return;
    this.open = null;
    const sent = this.now();
    const entry: TurnLatency = {
      turn: this.turns.length + 1,
      speech_end_at: new Date(this.origin + t.speechEnd).toISOString(),
      stt_ms: t.sttFinal === null ? null : round(t.sttFinal - t.speechEnd),
      turn_ms: round(t.turnEnd - t.speechEnd),
      llm_ms: round(t.reply - t.turnEnd),
      llm_first_token_ms: t.firstToken === null ? null : round(t.firstToken - t.turnEnd),
      tts_ms: round(t.ttsFirst - t.reply),
      send_ms: round(sent - t.ttsFirst),
      total_ms: round(sent - t.speechEnd),
    };
    this.turns.push(entry);
    for (const listener of this.listeners) listener(entry);
  }

  /**
   * The agent fell silent `silentMs` after the onset of a voice over it. A reply held before it
   * was heard (`voicing` false: nothing of the agent was going out) cannot have been held by its echo.
   */
  held(silentMs: number, voicing = true): void {
    this.holds.push(round(silentMs));
    if (!voicing) this.replyHolds++;
    if (voicing && this.now() - this.lastEchoAt <= ECHO_HOLD_MS) this.echoHolds++;
  }

  /**
   * A hold ended: the agent was cut, or went on (after words that were no interruption or after
   * none, `afterMs` after the voice over it ended).
   */
  released(outcome: 'resumed' | 'cut', resumed?: { words: boolean; afterMs: number }): void {
    this.releases[outcome]++;
    if (outcome !== 'resumed' || !resumed) return;
    this.releases[resumed.words ? 'backchannels' : 'false_interruptions']++;
    this.resumes.push(round(Math.max(0, resumed.afterMs)));
  }

  /** `ms` of the agent's own voice came back on the line and was taken for echo. */
  echoHeard(ms: number): void {
    this.echoMs += ms;
    this.lastEchoAt = this.now();
  }

  /** The agent's speech was cut before any frame went out: the turn is not measured. */
  abandon(): void {
    if (this.open && this.open.ttsFirst !== null) this.open = null;
  }

  onTurn(listener: (entry: TurnLatency) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  report(): LatencyReport {
    return {
      turns: [...this.turns],
      summary: summarize(this.turns),
      interruptions: {
        held: this.holds.length,
        ...this.releases,
        silent_ms_p50: median(this.holds),
        silent_ms_max: this.holds.length ? Math.max(...this.holds) : null,
        resume_ms_p50: median(this.resumes),
        resume_ms_max: this.resumes.length ? Math.max(...this.resumes) : null,
        echo_ms: round(this.echoMs),
        echo_holds: this.echoHolds,
        reply_holds: this.replyHolds,
      },
    };
  }
}

/** The one-line message of a `latency` event. */
export function latencyMessage(entry: TurnLatency): string {
  const part = (name: string, ms: number | null) => (ms === null ? '' : `, ${name} ${Math.round(ms)} ms`);
  return (
    `Turn ${entry.turn} latency: ${Math.round(entry.total_ms)} ms from end of speech to first audio` +
    `${part('stt', entry.stt_ms)}${part('llm', entry.llm_ms)}${part('first token', entry.llm_first_token_ms)}` +
    `${part('tts', entry.tts_ms)}${part('send', entry.send_ms)}`
  );
}
