import type { Kysely, Selectable } from 'kysely';
import type { Database, WebhookDeliveriesTable, WebhookMessagesTable } from './types.js';
import { newId } from '../security/secrets.js';
import type { Clock } from '../clock.js';

export type WebhookMessage = Selectable<WebhookMessagesTable>;
export type WebhookDelivery = Selectable<WebhookDeliveriesTable>;
export type SendType = 'automatic' | 'resend';

/** End-of-call webhook messages and their delivery log (migration 004). */
export class WebhookStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  /** Stores the message of a call once; a second call (a replayed job) leaves the first as it is. */
  async createMessage(message: { call_id: string; account_id: string; url: string; payload: string }): Promise<void> {
    await this.db
      .insertInto('webhook_messages')
      .values({ ...message, id: newId('msg_'), created_at: this.clock.now().toISOString(), delivered_at: null })
      .onConflict((oc) => oc.column('call_id').doNothing())
      .execute();
  }

  /** Points a call's message at a new URL with a fresh body (POST /v1/postcall/webhooks/create). */
  async replaceMessage(message: { call_id: string; account_id: string; url: string; payload: string }): Promise<void> {
    await this.db
      .insertInto('webhook_messages')
      .values({ ...message, id: newId('msg_'), created_at: this.clock.now().toISOString(), delivered_at: null })
      .onConflict((oc) =>
        oc.column('call_id').doUpdateSet({ url: message.url, payload: message.payload, delivered_at: null }),
      )
      .execute();
  }

  async message(callId: string, accountId?: string): Promise<WebhookMessage | undefined> {
    let query = this.db.selectFrom('webhook_messages').selectAll().where('call_id', '=', callId);
    if (accountId !== undefined) query = query.where('account_id', '=', accountId);
    return query.executeTakeFirst();
  }

  async markDelivered(callId: string): Promise<void> {
    await this.db
      .updateTable('webhook_messages')
      .set({ delivered_at: this.clock.now().toISOString() })
      .where('call_id', '=', callId)
      .execute();
  }

  async logDelivery(entry: Omit<WebhookDelivery, 'id'>): Promise<void> {
    await this.db
      .insertInto('webhook_deliveries')
      .values({ ...entry, id: newId() })
      .execute();
  }

  async deliveries(callId: string): Promise<WebhookDelivery[]> {
    return this.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('call_id', '=', callId)
      .orderBy('sent_at')
      .orderBy('attempt')
      .execute();
  }

  /** Attempts of one kind so far (numbers the next attempt of a resend). */
  async attempts(callId: string, sendType: SendType): Promise<number> {
    const row = await this.db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('call_id', '=', callId)
      .where('send_type', '=', sendType)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }
}
