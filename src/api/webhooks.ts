import { Type, type TSchema } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { FreeObject, Nullable, StringEnum, checked, errorResponses } from '../schemas/common.js';
import { notFound } from '../errors.js';

const tags = ['Webhooks'];

const CallIds = Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: 1000 });

const Delivery = Type.Object({
  sent_at: Type.String(),
  response_code: Nullable(Type.Integer({ description: 'HTTP status of the receiver; null when none came' })),
  response_time: Nullable(Type.Integer({ description: 'Milliseconds until the response' })),
  send_type: StringEnum(['automatic', 'resend'] as const),
  attempt: Type.Integer({ description: 'Attempt number within its send_type' }),
  error: Nullable(Type.String({ description: 'Why the attempt failed (HTTP status, timeout, ...); null on success' })),
});

/** A call's end-of-call webhook and its delivery log, as the hosted API shows it. */
const WebhookLog = Type.Object({
  payload: FreeObject({ description: 'The call record as sent' }),
  url: Type.String(),
  created_at: Type.String(),
  call_id: Type.String(),
  user_id: Type.String({ description: 'The account the call belongs to' }),
  delivered: Type.Boolean({ description: 'Whether an attempt succeeded' }),
  metadata: Type.Array(Delivery),
});

async function webhookLog(services: Services, accountId: string, callId: string) {
  const found = await services.webhooks.details(accountId, callId);
  if (!found) return undefined;
  const { message, deliveries } = found;
  return {
    payload: JSON.parse(message.payload) as Record<string, unknown>,
    url: message.url,
    created_at: message.created_at,
    call_id: message.call_id,
    user_id: message.account_id,
    delivered: message.delivered_at !== null,
    metadata: deliveries.map((d) => ({
      sent_at: d.sent_at,
      response_code: d.response_code,
      response_time: d.response_time_ms,
      send_type: d.send_type as 'automatic' | 'resend',
      attempt: d.attempt,
      error: d.error,
    })),
  };
}

/**
 * The hosted API's answer to a resend or create: the webhook log of each call sent (as it stood
 * before this attempt), and an error per call that could not be; Openline's lists of ids beside it.
 */
const ResendAnswer = <K extends string>(done: K) =>
  Type.Object({
    status: Type.Literal('success'),
    data: Type.Array(WebhookLog),
    errors: Nullable(Type.Array(Type.Object({ error: Type.String(), message: Type.String() }))),
    [done]: Type.Array(Type.String()),
    not_found: Type.Array(Type.String()),
  } as Record<K | 'status' | 'data' | 'errors' | 'not_found', TSchema>);

async function resendAnswer<K extends string>(
  services: Services,
  accountId: string,
  done: K,
  result: Record<K, string[]> & { not_found: string[] },
) {
  const logs = [];
  for (const id of result[done]) {
    const log = await webhookLog(services, accountId, id);
    if (log) logs.push(log);
  }
  return {
    status: 'success' as const,
    data: logs,
    errors:
      result.not_found.length === 0
        ? null
        : result.not_found.map((id) => ({ error: 'not_found', message: `No end-of-call webhook for call ${id}` })),
    ...result,
  };
}

/** End-of-call webhook delivery log and resends: CONTRACT.md section 8. */
export default async function routes(app: Api, services: Services): Promise<void> {
  app.get(
    '/postcall/webhooks/:call_id',
    {
      schema: {
        tags,
        summary: 'End-of-call webhook of a call and its delivery log',
        description:
          'The body that was sent (stored once per call), the URL, and every delivery attempt. ' +
          '404 when the call is unknown or never had a webhook.',
        params: Type.Object({ call_id: Type.String() }),
        response: {
          200: Type.Object({ data: WebhookLog, errors: Type.Null() }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const log = await webhookLog(services, request.account.id, request.params.call_id);
      if (!log) throw notFound('Webhook of call');
      return { data: log, errors: null };
    },
  );

  app.post(
    '/postcall/webhooks/resend',
    {
      schema: {
        tags,
        summary: 'Resend end-of-call webhooks',
        description:
          'Sends the stored webhook of each call once more, now (send_type `resend`). Calls of another ' +
          'account or without a webhook are listed in not_found.',
        body: Type.Object({ call_ids: CallIds }),
        response: { 200: ResendAnswer('resent'), ...errorResponses },
      },
    },
    async (request) =>
      resendAnswer(
        services,
        request.account.id,
        'resent',
        await services.webhooks.resend(request.account.id, request.body.call_ids),
      ),
  );

  app.post(
    '/postcall/webhooks/create',
    {
      schema: {
        tags,
        summary: 'Set the end-of-call webhook of ended calls',
        description:
          'Gives each ended call this webhook URL (replacing the one it had) and sends its record there ' +
          'now (send_type `resend`). Unknown, foreign or still running calls are listed in not_found.',
        body: Type.Object({
          call_ids: CallIds,
          webhook_url: checked(Type.String({ description: 'http:// or https:// URL' }), 'http_url'),
        }),
        response: { 200: ResendAnswer('updated'), ...errorResponses },
      },
    },
    async (request) =>
      resendAnswer(
        services,
        request.account.id,
        'updated',
        await services.webhooks.create(request.account.id, request.body.call_ids, request.body.webhook_url),
      ),
  );
}
