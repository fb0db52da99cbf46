import { Type } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, Nullable } from '../schemas/common.js';
import { PhoneInput } from '../schemas/call.js';
import { normalizePhone } from '../domain/phone.js';
import { ApiError, conflict, notFound, validationError } from '../errors.js';
import { createConnectedCall } from '../calls/inbound.js';
import { deliverInboundSms, MAX_SMS_BODY } from '../sms/inbound.js';

const tags = ['Sandbox'];

/** The sandbox network's own controls: ring one of the account's numbers as a caller would. */
export default async function routes(app: Api, services: Services): Promise<void> {
  app.post(
    '/sandbox/inbound',
    {
      schema: {
        tags,
        summary: 'Ring an inbound number on the sandbox network',
        description:
          'A sandbox caller (chosen by `from`, as in the sandbox numbers table) calls one of your inbound numbers, ' +
          'whose agent answers. When `from` is another of your configured numbers, its agent places the call: ' +
          'two agents talk, and each side has its own call record.',
        body: Type.Object({ from: PhoneInput, to: PhoneInput }, { additionalProperties: true }),
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            call_id: Type.String({ description: 'The inbound call on `to`' }),
            caller_call_id: Nullable(Type.String({ description: 'The outbound call of the calling agent, if any' })),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const from = normalizePhone(request.body.from);
      const to = normalizePhone(request.body.to);
      if (!from.ok || !to.ok) throw notFound('Inbound number');
      const callee = await services.inbound.get(accountId, to.e164);
      if (!callee) throw notFound('Inbound number');
      if (await services.blocked.get(accountId, from.e164)) {
        throw conflict(`Call rejected: ${from.e164} is on this account's blocked list`);
      }
      const caller = from.e164 === to.e164 ? undefined : await services.inbound.get(accountId, from.e164);
      const callId = (await createConnectedCall(services, accountId, callee, from.e164, 'inbound')).id;
      if (!caller) {
        const leg = services.sandbox.connectInbound({ from: from.e164, to: to.e164, callId });
        void services.engine.answer(callId, leg);
        return { status: 'success' as const, call_id: callId, caller_call_id: null };
      }
      const callerCallId = (await createConnectedCall(services, accountId, caller, to.e164, 'outbound')).id;
      const [callerLeg, calleeLeg] = services.sandbox.connectAgents({ callId, from: from.e164, to: to.e164 });
      void services.engine.answer(callerCallId, callerLeg);
      void services.engine.answer(callId, calleeLeg);
      return { status: 'success' as const, call_id: callId, caller_call_id: callerCallId };
    },
  );

  app.post(
    '/sandbox/sms',
    {
      schema: {
        tags,
        summary: 'Send an SMS to an inbound number on the sandbox network',
        description:
          'A sandbox phone texts one of your inbound numbers. The message is stored and, when the number has an ' +
          'SMS webhook (POST /v1/sms/webhook/update), POSTed there signed and retried like every webhook, with ' +
          'the body {event, message_id, from, to, body, received_at, carrier, carrier_message_id}. Without a ' +
          'webhook the message is stored only (webhook: null in the reply). Delivery attempts are logged under ' +
          'GET /v1/postcall/webhooks/{message_id}.',
        body: Type.Object(
          {
            from: PhoneInput,
            to: PhoneInput,
            body: Type.String({ minLength: 1, maxLength: MAX_SMS_BODY, description: 'The text of the message' }),
          },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            message_id: Type.String({ description: 'The message id, as in the webhook body' }),
            from: Type.String(),
            to: Type.String(),
            received_at: Type.String(),
            webhook: Nullable(Type.String({ description: 'Where the message is sent; null: stored only' })),
            delivery: Type.Union([Type.Literal('scheduled'), Type.Literal('no_webhook')]),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const from = normalizePhone(request.body.from);
      const to = normalizePhone(request.body.to);
      // The schema checked both numbers already; this narrows the types.
      if (!from.ok) throw validationError([`from ${from.reason}`]);
      if (!to.ok) throw validationError([`to ${to.reason}`]);
      const result = await deliverInboundSms(services, {
        to: to.e164,
        from: from.e164,
        body: request.body.body,
        carrier: 'sandbox',
        accountId,
      });
      if (!result) throw new ApiError('NOT_FOUND', `to: ${to.e164} is not one of your inbound numbers`);
      return {
        status: 'success' as const,
        message_id: result.message_id,
        from: result.from,
        to: result.to,
        received_at: result.received_at,
        webhook: result.webhook,
        delivery: result.webhook ? ('scheduled' as const) : ('no_webhook' as const),
      };
    },
  );
}
