import { isEnded } from '../domain/call-state.js';
import type { JobPayloads } from '../jobs/catalog.js';
import type { CallStore } from '../store/calls.js';

export interface AfterCallDeps {
  calls: Pick<CallStore, 'byId'>;
  /** Summary and analysis (src/postcall/summary.ts); never throws. */
  summarize(callId: string): Promise<void>;
  /** The end-of-call webhook's message and first attempt (src/outbound/webhooks.ts); never throws. */
  scheduleWebhook(callId: string): Promise<void>;
  /** The text of a call's voicemail.sms (src/sms/voicemail.ts); once per call, never throws. */
  voicemailSms(callId: string): Promise<void>;
  /** The retry of a call that reached a voicemail (the call engine); once per call. */
  retryAfterVoicemail(callId: string): Promise<void>;
}

/**
 * The `postcall` job: what follows a call's end, in order. The voicemail's text first (it is
 * meant for the moment the call reached the voicemail); summary and analysis, so the webhook's
 * body carries them; then the webhook; then the retry after voicemail. Each step is
 * idempotent, so a job run again after a crash repeats nothing that was done.
 */
export async function afterCall(deps: AfterCallDeps, job: JobPayloads['postcall']): Promise<void> {
  const call = await deps.calls.byId(job.call_id);
  if (!call) return;
  // Enqueued just before the final state is written: run again in a moment if it is not yet.
  if (!isEnded(call.queue_status)) throw new Error('the call has not ended yet');
  if (job.voicemail_sms) await deps.voicemailSms(call.id);
  await deps.summarize(call.id);
  await deps.scheduleWebhook(call.id);
  if (job.retry_after_voicemail) await deps.retryAfterVoicemail(call.id);
}
