/**
 * The typed job catalog: every job's payload, and how its idempotent id derives from its entity,
 * so that enqueueing the same work twice is harmless.
 */
export interface JobPayloads {
  /** Place an outbound call that is queued (or scheduled). */
  dial: { call_id: string };
}

export type JobName = keyof JobPayloads;

export const JOB_IDS: { [N in JobName]: (payload: JobPayloads[N]) => string } = {
  dial: (p) => `dial:${p.call_id}`,
};

/** Retry policy per job: attempts, and the backoff before attempt n (1-based) in ms. */
export const JOB_POLICY: { [N in JobName]: { maxAttempts: number; backoffMs: (attempt: number) => number } } = {
  dial: { maxAttempts: 3, backoffMs: (n) => 1000 * 2 ** (n - 1) },
};
