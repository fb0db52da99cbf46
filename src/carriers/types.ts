/**
 * The carrier port. A carrier places calls and delivers each connected call as a CallLeg; the
 * call engine drives every leg the same way, whatever network it is on (sandbox, Twilio, SIP).
 *
 * Legs carry text (the sandbox's text mode: utterances with their speaking time) or audio frames
 * (mu-law 8 kHz, 20 ms: media streams, RTP); the engine turns audio into the same speech events
 * through VAD and STT, so the session logic above never depends on the mode.
 */

import type { CallRequest } from '../schemas/call-request.js';
import type { Answered } from '../amd/answered-by.js';

/** What the far end of a leg does, as the engine hears it. */
export type LegEvent =
  /** The far end began speaking (barge-in and turn-taking react to this). */
  | { type: 'speech_start'; at: Date }
  /**
   * What the far end has said so far in the utterance under way (an interim transcript, as
   * streaming STT gives one): lets barge-in tell a real interruption from a backchannel.
   */
  | { type: 'speech_partial'; text: string; at: Date }
  /**
   * The far end's voice stopped (a short silence), before its turn is known to be over: a
   * backchannel over the agent has ended. Audio legs only.
   */
  | { type: 'speech_paused'; at: Date }
  /** The far end finished an utterance. durationMs is how long it spoke. */
  | { type: 'speech'; text: string; at: Date; durationMs: number }
  /** A single tone such as an answering machine's beep. */
  | { type: 'tone'; at: Date; frequencyHz: number; durationMs: number }
  /** A key pressed at the far end (inbound DTMF). */
  | { type: 'dtmf'; at: Date; digit: string }
  /** One 20 ms frame of mu-law 8 kHz audio (audio mode only). */
  | { type: 'audio'; at: Date; payload: Buffer }
  /**
   * The carrier's own answering-machine detection (Twilio's async AMD) decided who answered.
   * `messageEnded`: a machine's greeting is over (its beep passed), so a message can be left now.
   * The session's answer detector takes it like a decision of its own, when it has none yet.
   */
  | { type: 'answered_by'; at: Date; answeredBy: Answered; messageEnded: boolean }
  /**
   * A speech provider failed for good (audio legs): the recogniser could not be reopened, or the
   * voice and its fallback could not say a sentence. The call cannot go on as a conversation.
   */
  | { type: 'provider_failed'; at: Date; kind: 'stt' | 'tts'; provider: string; message: string }
  /**
   * The far end hung up (or the network dropped the call). Always the last event. `error`: why the
   * call failed, when it did (the media never connected): the call ends as a call_error.
   */
  | { type: 'hangup'; at: Date; reason: 'remote' | 'network'; error?: string };

export type LegListener = (event: LegEvent) => void;

export interface SpeakResult {
  /** The part of the text that was heard before it ended or was cut off. */
  played: string;
  interrupted: boolean;
}

/**
 * How a transfer went. `endedBy`: a carrier that bridged the call to the target itself (SIP when
 * REFER is refused) resolves only when the bridge ends, naming who ended it. `resumed`: the
 * transfer failed and the far end is on the line with the agent (Twilio puts the caller back on
 * the call's media after a Dial that reached nobody; SIP and the sandbox keep them on it while
 * the target rings): the conversation goes on.
 */
export type TransferResult =
  { ok: true; endedBy?: 'USER' | 'ASSISTANT' } | { ok: false; reason: string; resumed?: boolean };

/** What is said: all at once, or as it is written (a language model's streamed reply). */
export type SpeechText = string | AsyncIterable<string>;

export interface CallLeg {
  readonly mode: 'text' | 'audio';
  /** Subscribes to the far end; returns the unsubscribe function. */
  on(listener: LegListener): () => void;
  /**
   * Says `text` to the far end: all of it, or a reply as it is written (an audio leg starts with
   * its first sentence). Resolves when it has been played, or early when `signal` aborts
   * (barge-in) with what was played so far.
   */
  speak(text: SpeechText, options?: { signal?: AbortSignal }): Promise<SpeakResult>;
  /**
   * Holds what is being said at once (the caller may be cutting in), without losing it: resume()
   * goes on from the same word, speak()'s abort signal drops it. Audio legs only. `heard`: the
   * words said over it that let it go on (a backchannel), empty when there were none (a cough, a
   * noise): the call's interruption figures count them apart.
   */
  pause?(): void;
  resume?(heard?: string): void;
  /** Sends DTMF digits (0-9, *, #; `w` waits half a second), as tones the far end can hear. */
  sendDtmf(digits: string): Promise<void>;
  /** Hands the far end over to `to`; the leg ends for us when this succeeds. */
  transfer(to: string): Promise<TransferResult>;
  /** Ends the call from our side. Idempotent. */
  hangup(): Promise<void>;
}

export interface DialRequest {
  callId: string;
  /** E.164. */
  to: string;
  /** E.164 caller id, or null for the carrier's default. */
  from: string | null;
  /** How long to let it ring before giving up. */
  ringTimeoutMs: number;
  /** Aborts dialing (the call was stopped while ringing). */
  signal: AbortSignal;
  /**
   * The call's normalized settings: audio carriers build the call's audio leg from them (voice,
   * language, keywords, interruption_threshold, pronunciation_guide, background_track, record,
   * answered_by_enabled) and pick the account's own carrier credentials by encrypted_key.
   */
  request?: CallRequest;
  /** The account placing the call. */
  accountId?: string;
  /** The carrier credentials (encrypted_key) the call was placed with, if any. */
  credentialId?: string | null;
  /**
   * Called by the carrier once the far end knows the call (Twilio's CallSid, SIP's Call-ID), before
   * it is answered; the engine stores it on the record. Carriers report, they never write calls.
   */
  placed?: (facts: { carrier: string; carrierCallId: string }) => Promise<void>;
}

export type DialResult =
  | { status: 'answered'; leg: CallLeg }
  | { status: 'no-answer' }
  | { status: 'busy' }
  /** The network could not place the call (unreachable area, invalid route): queue_error. */
  | { status: 'failed'; reason: string };

export interface Carrier {
  readonly name: string;
  dial(request: DialRequest): Promise<DialResult>;
  /**
   * The number a call that names no `from` comes from (seed 2.1: a shared pool of the service's
   * numbers), so that its record says who called; null when the carrier has none to give.
   */
  callerId?(request: DialRequest): Promise<string | null>;
}
