import type { Services } from '../services.js';
import { ApiError } from '../errors.js';
import { renderSpoken } from '../domain/template.js';
import { sendSms } from './send.js';

const SENT = 'Voicemail SMS sent';
const NOT_SENT = 'Voicemail SMS not sent';

/**
 * The text of a call's `voicemail.sms`, sent once the call reached a voicemail (the `postcall`
 * job): through sendSms, so it is kept and listed as any outbound SMS. It goes to `to`, else
 * the person's number; from `from`, else the call's own number when the account holds it, else
 * the account's first number. The call's transcript says whether it went out; that line also
 * keeps a job run again from sending it twice. Never throws.
 */
export async function sendVoicemailSms(services: Services, callId: string): Promise<void> {
  const call = await services.calls.byId(callId);
  const sms = call?.request.voicemail_sms;
  if (!call || !sms) return;
  const lines = await services.calls.transcripts(call.id);
  if (lines.some((line) => line.text.startsWith(SENT) || line.text.startsWith(NOT_SENT))) return;
  const person = call.inbound ? call.from_number : call.to_number;
  const ours = call.inbound ? call.to_number : call.from_number;
  const senders = await services.inbound.senders(call.account_id);
  const from = sms.from ?? (senders.some((n) => n.phone_number === ours) ? (ours ?? undefined) : undefined);
  let note: string;
  try {
    const to = sms.to ?? person;
    if (!to) throw new ApiError('VALIDATION_ERROR', 'the call has no number to text (give voicemail.sms.to)');
    await sendSms(services, call.account_id, {
      to,
      from,
      body: renderSpoken(sms.message, call.variables ?? call.request.request_data),
      fromField: 'voicemail.sms.from',
    });
    note = SENT;
  } catch (error) {
    const reason = error instanceof ApiError ? (error.errors?.[0] ?? error.message) : 'the message could not be sent';
    note = `${NOT_SENT}: ${reason}`;
  }
  await services.calls.addTranscript(call.id, { text: note, user: 'agent-action' });
}
