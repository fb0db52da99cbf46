import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { isEnded } from '../domain/call-state.js';
import type { JobPayloads } from '../jobs/catalog.js';
import type { JobQueue } from '../jobs/queue.js';
import type { Call, CallStore } from '../store/calls.js';
import { fromJson } from '../store/json.js';
import type { WebhookDelivery, WebhookMessage, WebhookStore } from '../store/webhooks.js';
import { toCallRecord } from '../calls/record.js';
import type { CallEventCategory } from '../calls/events.js';
import { DEFAULT_TIMEOUT_MS, OutboundError, type OutboundClient } from './http.js';
import { webhookHeaders } from './signing.js';

/**
 * Waits before automatic attempt 2, 3, ... of an end-of-call webhook: 5 s, 30 s, 2 min, 10 min,
 * 30 min, 1 h, 2 h, then every 4 h six times. 14 attempts over about 27.7 h, close to Svix's 8
 * attempts over 27.6 h and past the 24 h CONTRACT.md section 8 asks for, so a receiver that is
 * down for a day still gets the call. Each attempt is its own durable job, so the schedule
 * survives restarts.
 */
export const RETRY_DELAYS_MS: readonly number[] = [
  5_000,
  30_000,
  2 * 60_000,
  10 * 60_000,
  30 * 60_000,
  3_600_000,
  2 * 3_600_000,
  ...new Array<number>(6).fill(4 * 3_600_000),
];
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

/** Streamed events are best-effort: one try, and a short wait so a slow receiver costs little. */
const EVENT_TIMEOUT_MS = 5_000;
/**
 * Streamed events of one call waiting for a slow receiver, at most: past this, new ones are
 * dropped (and logged) rather than piling up behind its timeouts for the rest of the call.
 */
export const MAX_EVENT_BACKLOG = 20;

export interface WebhookLogger {
  info(object: object, message: string): void;
  error(object: object, message: string): void;
}

export interface WebhookDeps {
  calls: CallStore;
  store: WebhookStore;
  queue: JobQueue;
  clock: Clock;
  client: OutboundClient;
  /** The account's signing secret (AccountStore.webhookSecret). */
  secret(accountId: string): Promise<string>;
  recordOptions: { publicUrl: string; endpointUrl: string };
  log?: WebhookLogger | undefined;
  /** Every delivery attempt's outcome (the metrics' counter). */
  onDelivery?(delivered: boolean): void;
}

/**
 * End-of-call webhooks (seed 6.1, CONTRACT.md section 8) and streamed events (seed 6.2).
 *
 * When a call with a `webhook` ends, its record (exactly the Call Details body) is stored once as
 * the message and attempt 1 is enqueued. Every attempt is logged. A failed attempt turns a
 * `complete` call into `complete_error` (seed 3.1) with the reason in error_message; a later
 * success (a retry or a resend) turns it back into `complete` with the error_message it had.
 */
export class WebhookService {
  /**
   * Per call, the tail of its streamed events (sent one after another so they arrive in order) and
   * how many of them are not yet sent or given up (MAX_EVENT_BACKLOG).
   */
  private readonly eventChains = new Map<string, { tail: Promise<void>; waiting: number }>();
  /** Real milliseconds an end-of-call delivery may take (the client's 10 s default; tests shorten it). */
  deliveryTimeoutMs = DEFAULT_TIMEOUT_MS;

  constructor(private readonly d: WebhookDeps) {}

  /** The engine's hook once a call has written its final state. Never throws (the call is over either way). */
  async callEnded(callId: string): Promise<void> {
    try {
      const row = await this.d.calls.byId(callId);
      if (!row || !isEnded(row.queue_status)) return;
      const url = row.request.webhook;
      if (!url) return;
      await this.d.store.createMessage({
        call_id: row.id,
        account_id: row.account_id,
        url,
        payload: await this.payload(row),
      });
      await this.d.queue.enqueue('webhook', { call_id: row.id, attempt: 1, send_type: 'automatic' });
    } catch (error) {
      this.d.log?.error({ err: error, call_id: callId }, 'end-of-call webhook could not be scheduled');
    }
  }

  private async payload(row: Call): Promise<string> {
    return JSON.stringify(toCallRecord(row, await this.d.calls.transcripts(row.id), this.d.recordOptions));
  }

  /** The `webhook` job: one attempt, logged; schedules the next automatic attempt when it fails. */
  async deliver(job: JobPayloads['webhook']): Promise<void> {
    const message = await this.d.store.message(job.call_id);
    if (!message) return;
    // A resend got through in the meantime: the rest of the schedule is moot.
    if (job.send_type === 'automatic' && message.delivered_at) return;
    const attempt =
      job.send_type === 'automatic' ? job.attempt : (await this.d.store.attempts(job.call_id, 'resend')) + 1;
    const sentAt = this.d.clock.now();
    const headers = webhookHeaders(await this.d.secret(message.account_id), {
      id: message.id,
      timestamp: Math.floor(sentAt.getTime() / 1000),
      body: message.payload,
    });
    let responseCode: number | null = null;
    let responseTime: number | null = null;
    let failure: string | null = null;
    try {
      const response = await this.d.client.request({
        method: 'POST',
        url: message.url,
        headers: { ...headers, 'user-agent': 'Openline-Webhooks/1' },
        body: message.payload,
        timeoutMs: this.deliveryTimeoutMs,
      });
      responseCode = response.status;
      responseTime = response.durationMs;
      if (response.status < 200 || response.status > 299) failure = `HTTP ${response.status}`;
    } catch (error) {
      if (!(error instanceof OutboundError)) throw error;
      failure = error.message;
    }
    await this.d.store.logDelivery({
      call_id: message.call_id,
      account_id: message.account_id,
      url: message.url,
      attempt,
      sent_at: sentAt.toISOString(),
      response_code: responseCode,
      response_time_ms: responseTime,
      error: failure,
      send_type: job.send_type,
    });
    this.d.onDelivery?.(failure === null);
    if (failure === null) {
      await this.d.store.markDelivered(message.call_id);
      // Back to what the call read when it ended (status `canceled` or `completed`, its own error_message).
      const ended = fromJson<{ status?: string; error_message?: string | null }>(message.payload, {});
      await this.d.calls.transition(message.call_id, ['complete_error'], {
        queue_status: 'complete',
        status: ended.status === 'canceled' ? 'canceled' : 'completed',
        error_message: ended.error_message ?? null,
      });
      return;
    }
    this.d.log?.info({ call_id: message.call_id, attempt, error: failure }, 'end-of-call webhook failed');
    // Only a call that completed can become complete_error (seed 3.1); error states stay as they are.
    await this.d.calls.transition(message.call_id, ['complete', 'complete_error'], {
      queue_status: 'complete_error',
      status: 'complete_error',
      error_message: `End-of-call webhook failed: ${failure}`,
    });
    if (job.send_type === 'automatic' && job.attempt < MAX_ATTEMPTS) {
      const delay = RETRY_DELAYS_MS[job.attempt - 1] ?? 0;
      await this.d.queue.enqueue(
        'webhook',
        { call_id: message.call_id, attempt: job.attempt + 1, send_type: 'automatic' },
        { runAt: new Date(this.d.clock.now().getTime() + delay) },
      );
    }
  }

  /** GET /v1/postcall/webhooks/{call_id}: the message and its delivery log, or undefined. */
  async details(
    accountId: string,
    callId: string,
  ): Promise<{ message: WebhookMessage; deliveries: WebhookDelivery[] } | undefined> {
    const message = await this.d.store.message(callId, accountId);
    return message && { message, deliveries: await this.d.store.deliveries(callId) };
  }

  /** POST /v1/postcall/webhooks/resend: one more attempt now for each call that has a message. */
  async resend(accountId: string, callIds: string[]): Promise<{ resent: string[]; not_found: string[] }> {
    const resent: string[] = [];
    const notFound: string[] = [];
    for (const id of callIds) {
      if (await this.d.store.message(id, accountId)) {
        await this.enqueueResend(id);
        resent.push(id);
      } else {
        notFound.push(id);
      }
    }
    return { resent, not_found: notFound };
  }

  /**
   * POST /v1/postcall/webhooks/create: gives ended calls a webhook URL (replacing the one they had)
   * and sends the record there now, as one attempt logged as a resend.
   */
  async create(accountId: string, callIds: string[], url: string): Promise<{ updated: string[]; not_found: string[] }> {
    const updated: string[] = [];
    const notFound: string[] = [];
    for (const id of callIds) {
      const row = await this.d.calls.get(accountId, id);
      if (!row || !isEnded(row.queue_status)) {
        notFound.push(id);
        continue;
      }
      const existing = await this.d.store.message(id, accountId);
      // A stored body is kept: rebuilt now it would carry the complete_error the old URL caused.
      await this.d.store.replaceMessage({
        call_id: id,
        account_id: accountId,
        url,
        payload: existing?.payload ?? (await this.payload(row)),
      });
      await this.enqueueResend(id);
      updated.push(id);
    }
    return { updated, not_found: notFound };
  }

  private async enqueueResend(callId: string): Promise<void> {
    // A resend's job id only needs to be unique; its logged attempt number is counted at send time.
    await this.d.queue.enqueue('webhook', { call_id: callId, attempt: Date.now(), send_type: 'resend' });
  }

  /**
   * A streamed event (seed 6.2): POSTed, signed like the end-of-call webhook, when the call asked
   * for its category. Best-effort: one try with a short timeout, never awaited by the call.
   */
  event(callId: string, category: CallEventCategory, message: string, logLevel = 'info'): void {
    const chain = this.eventChains.get(callId) ?? { tail: Promise.resolve(), waiting: 0 };
    if (chain.waiting >= MAX_EVENT_BACKLOG) {
      this.d.log?.info({ call_id: callId, category }, 'streamed event dropped: the receiver is too far behind');
      return;
    }
    chain.waiting++;
    chain.tail = chain.tail
      .then(() => this.sendEvent(callId, category, message, logLevel))
      .finally(() => {
        if (--chain.waiting === 0 && this.eventChains.get(callId) === chain) this.eventChains.delete(callId);
      });
    this.eventChains.set(callId, chain);
  }

  private async sendEvent(
    callId: string,
    category: CallEventCategory,
    message: string,
    logLevel: string,
  ): Promise<void> {
    try {
      const row = await this.d.calls.byId(callId);
      if (!row) return;
      const request = row.request;
      if (!request.webhook || !request.webhook_events?.includes(category)) return;
      const body = JSON.stringify({ message, call_id: callId, category, log_level: logLevel });
      const headers = webhookHeaders(await this.d.secret(row.account_id), {
        id: `evt_${randomUUID()}`,
        timestamp: Math.floor(this.d.clock.now().getTime() / 1000),
        body,
      });
      await this.d.client.request({
        method: 'POST',
        url: request.webhook,
        headers: { ...headers, 'user-agent': 'Openline-Webhooks/1' },
        body,
        timeoutMs: EVENT_TIMEOUT_MS,
        maxBytes: 64 * 1024,
      });
    } catch (error) {
      this.d.log?.info({ call_id: callId, category, err: error }, 'streamed event not delivered');
    }
  }

  /**
   * One signed POST of `body` to an account's URL through the guarded client (agent test results):
   * null when the receiver took it (2xx), else why not.
   */
  async post(accountId: string, url: string, id: string, body: string): Promise<string | null> {
    const headers = webhookHeaders(await this.d.secret(accountId), {
      id,
      timestamp: Math.floor(this.d.clock.now().getTime() / 1000),
      body,
    });
    try {
      const response = await this.d.client.request({
        method: 'POST',
        url,
        headers: { ...headers, 'user-agent': 'Openline-Webhooks/1' },
        body,
        timeoutMs: this.deliveryTimeoutMs,
      });
      this.d.onDelivery?.(response.status >= 200 && response.status <= 299);
      return response.status >= 200 && response.status <= 299 ? null : `HTTP ${response.status}`;
    } catch (error) {
      if (!(error instanceof OutboundError)) throw error;
      this.d.onDelivery?.(false);
      return error.message;
    }
  }

  /** Streamed events still being sent (shutdown waits for them). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.eventChains.values()].map((chain) => chain.tail));
  }
}
