import { Type } from '@sinclair/typebox';
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
          200: Type.Object({
            data: Type.Object({
              payload: FreeObject({ description: 'The call record as sent' }),
              url: Type.String(),
              created_at: Type.String(),
              call_id: Type.String(),
              user_id: Type.String({ description: 'The account the call belongs to' }),
              delivered: Type.Boolean({ description: 'Whether an attempt succeeded' }),
              metadata: Type.Array(Delivery),
            }),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const found = await services.webhooks.details(request.account.id, request.params.call_id);
      if (!found) throw notFound('Webhook of call');
      const { message, deliveries } = found;
      return {
        data: {
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
        },
        errors: null,
      };
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
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            data: Type.Object({ resent: Type.Array(Type.String()), not_found: Type.Array(Type.String()) }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => ({
      status: 'success' as const,
      data: await services.webhooks.resend(request.account.id, request.body.call_ids),
    }),
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
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            data: Type.Object({ updated: Type.Array(Type.String()), not_found: Type.Array(Type.String()) }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => ({
      status: 'success' as const,
      data: await services.webhooks.create(request.account.id, request.body.call_ids, request.body.webhook_url),
    }),
  );
}
