import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import type { JobQueue } from '../jobs/queue.js';
import type { Database } from '../store/types.js';
import { WebhookStore } from '../store/webhooks.js';
import { newId } from '../security/secrets.js';
import { normalizePhone } from '../domain/phone.js';
import { joinConversation } from './conversations.js';

/** What delivering an inbound SMS needs: a subset of Services (pass the Services object itself). */
export interface InboundSmsDeps {
  storage: { db: Kysely<Database> };
  clock: Clock;
  queue: JobQueue;
}

/** An SMS a carrier received on one of the numbers Openline holds. */
export interface InboundSms {
  /** The Openline number the message was sent to (E.164; other forms of the seed's rules are normalized). */
  to: string;
  /** The sender: a phone number (normalized to E.164 when it is one), a short code or an alphanumeric id. */
  from: string;
  body: string;
  /** The carrier that brought it: `sandbox`, `twilio`, ... */
  carrier: string;
  /** The carrier's own id of the message (Twilio's MessageSid). A repeated id stores and sends nothing new. */
  carrierMessageId?: string | null | undefined;
  /** When the carrier received it; default now (the service clock). */
  receivedAt?: Date | undefined;
  /** Only deliver when this account holds `to` (the sandbox route acts for one account). */
  accountId?: string | undefined;
}

export interface InboundSmsResult {
  /** Openline's id of the message: the webhook body's message_id, and the key of its delivery log. */
  message_id: string;
  account_id: string;
  to: string;
  from: string;
  received_at: string;
  /** The number's SMS webhook the message is sent to; null when the number has none (stored only). */
  webhook: string | null;
  /** True when the carrier had already brought this message (same carrierMessageId): nothing was sent again. */
  duplicate: boolean;
}

/** The body POSTed to the number's SMS webhook (documented in docs/api-notes.md, Webhooks). */
export interface InboundSmsPayload {
  event: 'sms.received';
  message_id: string;
  from: string;
  to: string;
  body: string;
  received_at: string;
  carrier: string;
  carrier_message_id: string | null;
}

/** Longest body accepted: 10 concatenated segments of 160 characters, as carriers deliver at most. */
export const MAX_SMS_BODY = 1600;

type Row = Database['sms_messages'];

function toResult(row: Row, duplicate: boolean): InboundSmsResult {
  return {
    message_id: row.id,
    account_id: row.account_id,
    to: row.to_number,
    from: row.from_number,
    received_at: row.received_at,
    webhook: row.webhook,
    duplicate,
  };
}

const phoneOr = (value: string): string => {
  const phone = normalizePhone(value);
  return phone.ok ? phone.e164 : value.trim();
};

/**
 * Takes an SMS a carrier received (the sandbox's POST /v1/sandbox/sms, Twilio's messaging
 * webhook) to the account holding `to`: stores it and, when the number has an SMS webhook
 * (POST /v1/sms/webhook/update), sends it there through the webhook machinery of every webhook
 * (src/outbound/webhooks.ts: the `webhook` job, signed with the account's secret, retried with
 * backoff for a day, every attempt logged under GET /v1/postcall/webhooks/{message_id}).
 *
 * Returns undefined when no account holds `to` (or not the account given): the caller answers
 * that the number is unknown. The message and its webhook message are stored in one transaction;
 * the first attempt is enqueued after the commit under its idempotent job id.
 */
export async function deliverInboundSms(deps: InboundSmsDeps, sms: InboundSms): Promise<InboundSmsResult | undefined> {
  const { db } = deps.storage;
  const to = phoneOr(sms.to);
  const from = phoneOr(sms.from);
  const holder = await db
    .selectFrom('inbound_numbers')
    .select(['account_id', 'sms_webhook'])
    .where('phone_number', '=', to)
    .executeTakeFirst();
  if (!holder || (sms.accountId !== undefined && holder.account_id !== sms.accountId)) return undefined;

  const carrierMessageId = sms.carrierMessageId ?? null;
  const existing = () =>
    db
      .selectFrom('sms_messages')
      .selectAll()
      .where('carrier', '=', sms.carrier)
      .where('carrier_message_id', '=', carrierMessageId)
      .executeTakeFirst();
  if (carrierMessageId !== null) {
    const seen = await existing();
    if (seen) {
      await resume(deps, seen);
      return toResult(seen, true);
    }
  }

  const now = deps.clock.now();
  const row: Row = {
    id: newId('sms_'),
    account_id: holder.account_id,
    to_number: to,
    from_number: from,
    body: sms.body,
    carrier: sms.carrier,
    carrier_message_id: carrierMessageId,
    received_at: (sms.receivedAt ?? now).toISOString(),
    created_at: now.toISOString(),
    webhook: holder.sms_webhook,
    direction: 'inbound',
    conversation_id: null,
  };
  const payload: InboundSmsPayload = {
    event: 'sms.received',
    message_id: row.id,
    from,
    to,
    body: sms.body,
    received_at: row.received_at,
    carrier: sms.carrier,
    carrier_message_id: carrierMessageId,
  };
  const stored = await db.transaction().execute(async (trx) => {
    // A number with an agent for texts: the message joins the person's conversation.
    row.conversation_id = (await joinConversation(trx, deps.clock, row)) ?? null;
    // Two deliveries of one carrier message may race: the unique (carrier, carrier_message_id) decides.
    const inserted = await trx
      .insertInto('sms_messages')
      .values(row)
      .onConflict((oc) => oc.columns(['carrier', 'carrier_message_id']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) return false;
    if (row.webhook) {
      // The webhook machinery keys its messages by subject: a call id, or this SMS's id.
      await new WebhookStore(trx, deps.clock).createMessage({
        call_id: row.id,
        account_id: row.account_id,
        url: row.webhook,
        payload: JSON.stringify(payload),
      });
    }
    return true;
  });
  if (!stored) {
    const seen = await existing();
    if (!seen) throw new Error('inbound SMS neither stored nor found');
    return toResult(seen, true);
  }
  if (row.webhook) await deps.queue.enqueue('webhook', { call_id: row.id, attempt: 1, send_type: 'automatic' });
  if (row.conversation_id) await deps.queue.enqueue('sms_reply', { message_id: row.id });
  return toResult(row, false);
}

/**
 * A carrier repeating a message whose first attempt was never sent (the process stopped between
 * storing it and enqueueing the attempt) gets it sent now. Nothing happens when an attempt has
 * run (it is logged) or is queued (the job id is idempotent).
 */
async function resume(deps: InboundSmsDeps, row: Row): Promise<void> {
  // The agent's reply (the job skips a message already answered; its id is idempotent).
  if (row.conversation_id) await deps.queue.enqueue('sms_reply', { message_id: row.id });
  if (!row.webhook) return;
  const store = new WebhookStore(deps.storage.db, deps.clock);
  const message = await store.message(row.id);
  if (!message || message.delivered_at || (await store.deliveries(row.id)).length > 0) return;
  await deps.queue.enqueue('webhook', { call_id: row.id, attempt: 1, send_type: 'automatic' });
}

/** A stored inbound SMS, as the API shows it. */
export interface StoredSms {
  message_id: string;
  from: string;
  to: string;
  body: string;
  received_at: string;
  carrier: string;
  webhook: string | null;
}

/** The account's received messages, newest first (optionally those of one number). */
export async function listInboundSms(
  db: Kysely<Database>,
  accountId: string,
  options: { to?: string; limit?: number; direction?: 'inbound' | 'outbound' } = {},
): Promise<StoredSms[]> {
  let query = db
    .selectFrom('sms_messages')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('direction', '=', options.direction ?? 'inbound')
    .orderBy('received_at', 'desc')
    .orderBy('id')
    .limit(options.limit ?? 100);
  // One of the account's numbers: the one a message came to, or the one it was sent from.
  if (options.to !== undefined)
    query = query.where(options.direction === 'outbound' ? 'from_number' : 'to_number', '=', options.to);
  const rows = await query.execute();
  return rows.map((r) => ({
    message_id: r.id,
    from: r.from_number,
    to: r.to_number,
    body: r.body,
    received_at: r.received_at,
    carrier: r.carrier,
    webhook: r.webhook,
  }));
}
