/**
 * The typed job catalog: every job's payload, and how its idempotent id derives from its entity,
 * so that enqueueing the same work twice is harmless.
 */
export interface JobPayloads {
  /**
   * Place an outbound call that is queued (or scheduled). `wait` counts the times it waited for
   * the account's concurrent-call limit (each wait is a job of its own).
   */
  dial: { call_id: string; wait?: number };
  /**
   * One delivery attempt of a call's end-of-call webhook. Automatic attempts are numbered 1, 2, ...
   * and each failed one enqueues the next at its time (src/outbound/webhooks.ts); a resend is
   * numbered by the resends before it.
   */
  webhook: { call_id: string; attempt: number; send_type: 'automatic' | 'resend' };
  /** The SMS agent answers an inbound text in its conversation (src/sms/conversations.ts). */
  sms_reply: { message_id: string };
  /**
   * What follows a call's end (src/postcall/after-call.ts): summary and analysis, the end-of-call
   * webhook, (`voicemail_sms`) the text of `voicemail.sms` and (`retry_after_voicemail`) the
   * call's retry. Enqueued just before the call's final state is written, so that no crash can
   * lose it.
   */
  postcall: { call_id: string; retry_after_voicemail?: boolean; voicemail_sms?: boolean };
  /**
   * One look at an agent test run (src/agent-tests/scenario-runs.ts): while its call is being
   * placed or is live, the next look (`check` + 1) is enqueued two seconds later; once the call
   * ended, the run is judged and its webhooks sent.
   */
  agent_test_run: { run_id: string; check: number };
}

export type JobName = keyof JobPayloads;

export const JOB_IDS: { [N in JobName]: (payload: JobPayloads[N]) => string } = {
  dial: (p) => (p.wait ? `dial:${p.call_id}:wait:${p.wait}` : `dial:${p.call_id}`),
  webhook: (p) => `webhook:${p.call_id}:${p.send_type === 'resend' ? 'resend:' : ''}${p.attempt}`,
  sms_reply: (p) => `sms_reply:${p.message_id}`,
  postcall: (p) => `postcall:${p.call_id}`,
  agent_test_run: (p) => `agent_test_run:${p.run_id}:${p.check}`,
};

export interface JobPolicy {
  maxAttempts: number;
  /** The backoff before attempt n (1-based), in ms. */
  backoffMs: (attempt: number) => number;
  /**
   * Real seconds a job may run unsettled before a queue shared by several processes (pg-boss)
   * takes its process for dead and runs it again (see JobRun.settle).
   */
  expireSeconds: number;
}

/** Retry policy per job. */
export const JOB_POLICY: { [N in JobName]: JobPolicy } = {
  // Settled once its call is allocated (a fraction of a second): a dial job taken by a process
  // that died before it allocated the call is run again a minute later.
  dial: { maxAttempts: 3, backoffMs: (n) => 1000 * 2 ** (n - 1), expireSeconds: 60 },
  // Only storage failures throw here: a failed delivery schedules its own next attempt instead.
  // One attempt lasts at most the delivery timeout (10 s).
  webhook: { maxAttempts: 5, backoffMs: (n) => 5000 * 2 ** (n - 1), expireSeconds: 300 },
  // A model that failed (or a carrier that refused the text) is tried again a little later.
  sms_reply: { maxAttempts: 3, backoffMs: (n) => 5000 * 2 ** (n - 1), expireSeconds: 120 },
  // Runs again while the call's final state is not yet written (it follows the job by
  // milliseconds, or recovery writes it after a crash). A summary waits on the model's timeout
  // (30 s by default), within the minute: a process that died mid-summary has its post-call work
  // picked up by another (or itself restarted) about a minute later. Should a longer model timeout
  // outlast the minute, the job may run twice at once: each step is idempotent (a stored summary
  // is kept, the webhook's job id is the call's).
  postcall: { maxAttempts: 6, backoffMs: (n) => 500 * 2 ** (n - 1), expireSeconds: 60 },
  // A look takes milliseconds; it throws only on storage failures or while the run's webhook fails.
  agent_test_run: { maxAttempts: 5, backoffMs: (n) => 5000 * 2 ** (n - 1), expireSeconds: 120 },
};
