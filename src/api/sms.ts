import type { FastifyRequest } from 'fastify';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { Type } from '@sinclair/typebox';
import { errorResponses, Nullable } from '../schemas/common.js';
import { listInboundSms } from '../sms/inbound.js';
import { sendSms } from '../sms/send.js';
import { joinConversation } from '../sms/conversations.js';
import { normalizePhone } from '../domain/phone.js';
import {
  A2pRegisterResponse,
  A2pRegistrationRequest,
  A2pStatusRequest,
  A2pStatusResponse,
  POSITION_RULE,
  SmsWebhookRequest,
  SmsWebhookResponse,
  isExecutivePosition,
  normalizeRegistration,
} from '../schemas/a2p.js';
import { notFound, validationError } from '../errors.js';
import { assertValid } from './validation.js';
import { isRecord } from '../domain/records.js';
import { normalizePathNumber } from '../domain/phone.js';
import { ApiError } from '../errors.js';
import { credentialFromHeader } from '../security/credentials.js';
import {
  TwilioA2pError,
  refreshTwilioBrand,
  registerTwilioBrand,
  twilioBundles,
  type TwilioA2pDeps,
} from '../carriers/twilio/a2p.js';

const tags = ['SMS'];

/** The position rule is not expressible as a schema pattern (it is case-insensitive and word-based). */
function positionProblems(body: unknown): string[] {
  const user = isRecord(body) ? body.trusted_user : undefined;
  const position = isRecord(user) ? user.position : undefined;
  if (typeof position !== 'string' || position.trim() === '') return [];
  return isExecutivePosition(position) ? [] : [`trusted_user.position ${POSITION_RULE}`];
}

const registerSchema = {
  tags,
  summary: 'Register an A2P brand',
  description:
    'Submits an A2P 10DLC brand registration. Success means the submission is well formed; the ' +
    'registration is then pending until decided (POST /v1/sms/register/status). On the sandbox carrier ' +
    'it is decided after OPENLINE_SANDBOX_A2P_DELAY_SECONDS (default 60): the EIN 00-0000000 or a ' +
    'businessName containing "FAIL" fails, anything else is approved.',
  body: A2pRegistrationRequest,
  response: { 200: A2pRegisterResponse, ...errorResponses },
};

/** The A2P port's Twilio adapter (src/carriers/twilio/a2p.ts); the sandbox is services.a2p alone. */
function twilioA2p(services: Services): TwilioA2pDeps {
  return {
    a2p: services.a2p,
    client: (account) => services.twilio.client(account),
    account: (accountId, credentialId) => services.twilio.account(accountId, credentialId),
  };
}

function registerHandler(services: Services) {
  const delay = services.config.sandboxA2pDelaySeconds;
  return async (request: FastifyRequest<{ Body: A2pRegistrationRequest }>) => {
    // The selection point: Twilio-backed (the account's own Twilio through encrypted_key, else the
    // server's) registers with Twilio; otherwise the sandbox decides.
    const credential = await credentialFromHeader(request, services);
    const account = await services.twilio.account(request.account.id, credential?.encrypted_key);
    const twilio = account ? twilioBundles(request.body) : undefined;
    assertValid(request, [...positionProblems(request.body), ...(twilio?.problems ?? [])]);
    let registration;
    if (account && twilio?.bundles) {
      try {
        registration = await registerTwilioBrand(
          twilioA2p(services),
          request.account.id,
          { account, credentialId: credential?.encrypted_key ?? null },
          normalizeRegistration(request.body),
          twilio.bundles,
        );
      } catch (error) {
        if (error instanceof TwilioA2pError) throw new ApiError('BAD_REQUEST', error.message);
        throw error;
      }
    } else {
      registration = await services.a2p.create(request.account.id, normalizeRegistration(request.body), delay);
    }
    return {
      status: 'success' as const,
      message: 'A2P brand registration submitted',
      data: {
        registration_id: registration.registration_id,
        status: registration.status,
        created_at: registration.created_at,
      },
    };
  };
}

/** A2P registration and SMS webhooks: seed 2.9, 2.10, 4.10, 4.11 and CONTRACT section 9. */
export default async function routes(app: Api, services: Services): Promise<void> {
  app.post(
    '/sms/register',
    // Schema problems and the position rule are reported together.
    { attachValidation: true, schema: registerSchema },
    registerHandler(services),
  );

  app.post(
    '/sms/register/status',
    {
      schema: {
        tags,
        summary: 'Status of an A2P brand registration',
        description:
          "The body's status is the registration's: pending, approved or failed (as the hosted service answers).",
        body: A2pStatusRequest,
        response: { 200: A2pStatusResponse, ...errorResponses },
      },
    },
    async (request) => {
      const registration = await refreshTwilioBrand(
        twilioA2p(services),
        request.account.id,
        request.body.registration_id,
      );
      if (!registration) throw notFound('Registration');
      return {
        status: registration.status,
        registration_id: registration.registration_id,
        brandType: 'STANDARD',
        failureReason: registration.failure_reason,
      };
    },
  );

  app.post(
    '/sms/webhook/update',
    {
      schema: {
        tags,
        summary: 'Set the SMS webhook of an inbound number',
        description: 'webhook: a URL called when an SMS arrives on the number; null, false or "" clears it.',
        body: SmsWebhookRequest,
        response: { 200: SmsWebhookResponse, ...errorResponses },
      },
    },
    async (request) => {
      const number = normalizePathNumber(String(request.body.phone_number));
      if (!number.ok) throw validationError([`phone_number ${number.reason}`]);
      const { webhook } = request.body;
      const value = typeof webhook === 'string' && webhook !== '' ? webhook : null;
      if (!(await services.a2p.setSmsWebhook(request.account.id, number.e164, value))) {
        throw notFound('Inbound number');
      }
      return { status: 'success' as const, phone_number: number.e164, webhook: value };
    },
  );

  app.post(
    '/sms/send',
    {
      schema: {
        tags,
        summary: 'Send an SMS',
        description:
          'From one of your numbers: `{phone_number, message, from?}` or the form `{user_number, agent_number, ' +
          'agent_message}`. Without from/agent_number, the first number the account holds sends it. Through ' +
          'Twilio for a Twilio number; on the sandbox it is delivered at once.',
        body: Type.Object(
          {
            phone_number: Type.Optional(Type.Union([Type.String(), Type.Number()])),
            message: Type.Optional(Type.String({ minLength: 1, maxLength: 1600 })),
            from: Type.Optional(Type.String()),
            user_number: Type.Optional(Type.Union([Type.String(), Type.Number()])),
            agent_number: Type.Optional(Type.String()),
            agent_message: Type.Optional(Type.String({ minLength: 1, maxLength: 1600 })),
          },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            message: Type.String(),
            message_id: Type.String(),
            to: Type.String(),
            from: Type.String(),
            body: Type.String(),
            sent_at: Type.String(),
            carrier: Type.String(),
            carrier_message_id: Nullable(Type.String()),
            conversation_id: Nullable(Type.String({ description: 'Null when the number has no SMS agent' })),
            data: Type.Object(
              {
                message: Type.String(),
                conversation_id: Nullable(Type.String()),
                message_id: Type.String(),
              },
              { description: 'The hosted API answer: the message and its conversation' },
            ),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const b = request.body;
      // The two body shapes real clients send; the second names its fields as the agent's.
      const agentForm = b.user_number !== undefined || b.agent_message !== undefined;
      const [toField, bodyField, fromField] = agentForm
        ? (['user_number', 'agent_message', 'agent_number'] as const)
        : (['phone_number', 'message', 'from'] as const);
      const errors: string[] = [];
      const rawTo = b[toField];
      const to = rawTo === undefined ? undefined : normalizePhone(rawTo);
      if (rawTo === undefined) errors.push(`${toField} is required`);
      else if (to && !to.ok) errors.push(`${toField} ${to.reason}`);
      const text = b[bodyField];
      if (text === undefined) errors.push(`${bodyField} is required`);
      const rawFrom = b[fromField];
      const from = rawFrom === undefined ? undefined : normalizePhone(rawFrom);
      if (from && !from.ok) errors.push(`${fromField} ${from.reason}`);
      assertValid(request, errors);
      const sent = await sendSms(services, request.account.id, {
        to: to && to.ok ? to.e164 : '',
        from: from && from.ok ? from.e164 : undefined,
        body: text ?? '',
        fromField,
      });
      // Sent from a number with an SMS agent, the text opens (or goes on) the person's conversation,
      // so that their answer is read with it, as the hosted API does.
      const conversationId =
        (await services.storage.db.transaction().execute(async (trx) => {
          const id = await joinConversation(trx, services.clock, {
            account_id: request.account.id,
            to_number: sent.from,
            from_number: sent.to,
          });
          if (id) {
            await trx
              .updateTable('sms_messages')
              .set({ conversation_id: id })
              .where('id', '=', sent.message_id)
              .execute();
          }
          return id;
        })) ?? null;
      return {
        status: 'success' as const,
        message: 'SMS sent',
        ...sent,
        conversation_id: conversationId,
        data: { message: 'SMS sent successfully', conversation_id: conversationId, message_id: sent.message_id },
        errors: null,
      };
    },
  );

  app.get(
    '/sms/messages',
    {
      schema: {
        tags,
        summary: 'SMS received on your numbers',
        description:
          'Messages received on your inbound numbers, newest first, whether or not they had an SMS webhook. ' +
          'phone_number narrows to one of your numbers; limit is 1-1000 (default 100).',
        querystring: Type.Object({
          phone_number: Type.Optional(Type.String()),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
          direction: Type.Optional(
            Type.Union([Type.Literal('inbound'), Type.Literal('outbound')], {
              description: 'inbound (default): received; outbound: sent with POST /v1/sms/send',
            }),
          ),
        }),
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            messages: Type.Array(
              Type.Object({
                message_id: Type.String(),
                from: Type.String(),
                to: Type.String(),
                body: Type.String(),
                received_at: Type.String(),
                carrier: Type.String(),
                webhook: Nullable(Type.String({ description: 'Where it was sent; null: stored only' })),
              }),
            ),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      let to: string | undefined;
      if (request.query.phone_number !== undefined) {
        const number = normalizePathNumber(request.query.phone_number);
        if (!number.ok) throw validationError([`phone_number ${number.reason}`]);
        to = number.e164;
      }
      const messages = await listInboundSms(services.storage.db, request.account.id, {
        ...(to !== undefined ? { to } : {}),
        ...(request.query.limit !== undefined ? { limit: request.query.limit } : {}),
        ...(request.query.direction !== undefined ? { direction: request.query.direction } : {}),
      });
      return { status: 'success' as const, messages };
    },
  );
}

/** POST /api/registerA2PBrand: the seed's other name for POST /v1/sms/register. */
export async function registerA2PAlias(app: Api, services: Services): Promise<void> {
  app.post(
    '/api/registerA2PBrand',
    {
      attachValidation: true,
      schema: { ...registerSchema, summary: 'Register an A2P brand (alias of POST /v1/sms/register)' },
    },
    registerHandler(services),
  );
}
