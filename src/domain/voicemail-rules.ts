/** What happens when a call reaches a voicemail (seed 2.1 voicemail_action). */
export type VoicemailAction = 'hangup' | 'leave_message' | 'ignore';

/** What answered, as the engine detected it. */
export type Answerer = 'voicemail' | 'ivr';

export interface VoicemailSettings {
  voicemail_message: string | null;
  voicemail_action: VoicemailAction;
  /** answered_by_enabled or amd. */
  amd: boolean;
}

/**
 * `leave_message_and_end`: say voicemail_message, then hang up.
 * `end`: hang up at once. `continue`: the agent goes on (navigates the IVR, or ignores it).
 */
export type VoicemailDecision =
  | { action: 'leave_message_and_end'; message: string; rule: number }
  | { action: 'end'; rule: number }
  | { action: 'continue'; navigate: boolean; rule: number };

/**
 * The four voicemail / IVR rules of seed 2.1, processed apart from the agent's own decisions:
 * 1. Voicemail: voicemail_message set -> leave it and end; else end at once (whatever amd says).
 * 2. IVR: amd -> navigate and continue; else `ignore` -> continue ignoring the IVR; else
 *    voicemail_message set -> leave it and end; else end.
 * 3. A set voicemail_message is left regardless of voicemail_action.
 * 4. With amd or `ignore`, messages are still left at voicemails but IVRs are not hung up on.
 */
export function decideVoicemail(answerer: Answerer, s: VoicemailSettings): VoicemailDecision {
  const message = s.voicemail_message && s.voicemail_message.trim() !== '' ? s.voicemail_message : null;
  if (answerer === 'voicemail') {
    // To the letter of rule 1: without a voicemail_message the call ends at once, whatever
    // voicemail_action says (leave_message needs the message to leave).
    return message ? { action: 'leave_message_and_end', message, rule: 1 } : { action: 'end', rule: 1 };
  }
  if (s.amd) return { action: 'continue', navigate: true, rule: 2 };
  if (s.voicemail_action === 'ignore') return { action: 'continue', navigate: false, rule: 2 };
  if (message) return { action: 'leave_message_and_end', message, rule: 2 };
  return { action: 'end', rule: 2 };
}
