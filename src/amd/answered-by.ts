/**
 * `answered_by` (seed 2.3): who answered an outbound call. Everything that decides it lives in
 * this folder: the detector on the audio (acoustic.ts) with its one beep detector
 * (tone-detector.ts), the answer detector that weighs it with the words (answer-detector.ts), and
 * the training and held-out sets it is fitted and judged on (dataset.ts, fit.ts, heldout.ts).
 */
export const ANSWERED_BY = ['human', 'voicemail', 'unknown', 'no-answer'] as const;
export type AnsweredBy = (typeof ANSWERED_BY)[number];
/** What a call that connected was answered by: `no-answer` is for calls that never did. */
export type Answered = Exclude<AnsweredBy, 'no-answer'>;
