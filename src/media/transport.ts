/**
 * The media port: the wire between Openline and a carrier's audio for one call, whatever carries
 * it (a Twilio media stream websocket, the sandbox's audio mode, RTP on a SIP trunk). It moves
 * 20 ms mu-law frames both ways plus the few control messages every such protocol has: marks
 * (told back when the audio sent before them has played), clear (drop audio not yet played:
 * barge-in) and DTMF heard on the line.
 *
 * The audio call leg (src/media/audio-leg.ts) turns a MediaTransport into a CallLeg by running VAD,
 * STT and TTS over it, so the call session above never knows audio from text.
 */

export type MediaEvent =
  /** One inbound frame: 160 bytes of mu-law (20 ms). `timestampMs` counts from the stream's start. */
  | { type: 'media'; payload: Buffer; timestampMs: number }
  /** A key pressed at the far end, as the carrier reports it out of band. */
  | { type: 'dtmf'; digit: string }
  /** The far end has played everything sent before the mark of this name. */
  | { type: 'mark'; name: string }
  /** The stream ended (the far end hung up or the carrier closed it). Always the last event. */
  | { type: 'stop'; reason: 'remote' | 'network'; error?: string };

export type MediaListener = (event: MediaEvent) => void;

export interface MediaTransport {
  /** Subscribes to what arrives; returns the unsubscribe function. */
  on(listener: MediaListener): () => void;
  /** Sends one outbound frame (160 bytes of mu-law). The caller paces frames at 20 ms. */
  sendMedia(payload: Buffer): void;
  /** Asks to be told (a `mark` event) when everything sent so far has played. */
  sendMark(name: string): void;
  /** Drops outbound audio the far end has buffered but not played yet. */
  clear(): void;
  /**
   * True when clear() really drops audio the far end holds (a Twilio media stream): the audio leg
   * then clears it the moment a voice starts over the agent, and sends it again if the agent goes
   * on. Absent: what was sent plays out (RTP, WebRTC, the sandbox line, which buffer nothing of ours).
   */
  readonly dropsOnClear?: boolean;
  /** Ends the stream from our side. Idempotent. */
  close(): void;
  /**
   * Sends one 20 ms frame of a key's tone as the key itself, out of band (RFC 4733 on RTP), when
   * the far end takes key events: `first` and `last` frame of the key. False: send the tone
   * in-band with sendMedia, as for transports without it.
   */
  sendKey?(digit: string, part: { first: boolean; last: boolean }): boolean;
}
