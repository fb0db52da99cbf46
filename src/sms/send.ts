import type { Services } from '../services.js';
import { newId } from '../security/secrets.js';
import { ApiError, validationError } from '../errors.js';

/** A text message an account sent (POST /v1/sms/send). */
export interface SentSms {
  message_id: string;
  to: string;
  from: string;
  body: string;
  sent_at: string;
  carrier: string;
  carrier_message_id: string | null;
}

/**
 * Sends a text message from one of the account's numbers (`from`, or else the first it holds):
 * through Twilio for a number held there (its account: the server's or the number's own
 * credentials), or into the sandbox network for a sandbox number, where it is delivered at once.
 * The message is kept with direction `outbound` (GET /v1/sms/messages?direction=outbound).
 */
export async function sendSms(
  services: Services,
  accountId: string,
  message: { to: string; from: string | undefined; body: string; fromField: string },
): Promise<SentSms> {
  const numbers = await services.inbound.senders(accountId);
  const number = message.from === undefined ? numbers[0] : numbers.find((n) => n.phone_number === message.from);
  if (!number) {
    throw validationError([
      message.from === undefined
        ? `${message.fromField} is required: this account holds no number to send from (POST /v1/inbound/purchase)`
        : `${message.fromField} ${message.from} is not a number of this account`,
    ]);
  }
  const now = services.clock.now().toISOString();
  let carrierMessageId: string | null = null;
  if (number.carrier === 'twilio') {
    const account = await services.twilio.account(accountId, number.credential_id);
    if (!account) throw new ApiError('PROVIDER_UNAVAILABLE', 'No Twilio credentials for this number');
    try {
      const sent = await (
        await services.twilio.client(account)
      ).messages.create({ to: message.to, from: number.phone_number, body: message.body });
      carrierMessageId = sent.sid;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      throw new ApiError(
        'PROVIDER_UNAVAILABLE',
        `Twilio did not accept the message${typeof code === 'number' ? ` (error ${code})` : ''}`,
      );
    }
  }
  const row = {
    id: newId('sms_'),
    account_id: accountId,
    to_number: message.to,
    from_number: number.phone_number,
    body: message.body,
    carrier: number.carrier,
    carrier_message_id: carrierMessageId,
    received_at: now,
    created_at: now,
    webhook: null,
    direction: 'outbound',
    conversation_id: null,
  };
  await services.storage.db.insertInto('sms_messages').values(row).execute();
  return {
    message_id: row.id,
    to: row.to_number,
    from: row.from_number,
    body: row.body,
    sent_at: now,
    carrier: row.carrier,
    carrier_message_id: carrierMessageId,
  };
}
