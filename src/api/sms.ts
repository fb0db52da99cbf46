import type { FastifyRequest } from 'fastify';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses } from '../schemas/common.js';
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
import { assertValid, isRecord } from './validation.js';
import { normalizePathNumber } from '../domain/phone.js';

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

function registerHandler(services: Services) {
  const delay = services.config.sandboxA2pDelaySeconds;
  return async (request: FastifyRequest<{ Body: A2pRegistrationRequest }>) => {
    assertValid(request, positionProblems(request.body));
    const registration = await services.a2p.create(request.account.id, normalizeRegistration(request.body), delay);
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
      const registration = await services.a2p.get(request.account.id, request.body.registration_id);
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
      const number = normalizePathNumber(request.body.phone_number);
      if (!number.ok) throw validationError([`phone_number ${number.reason}`]);
      const { webhook } = request.body;
      const value = typeof webhook === 'string' && webhook !== '' ? webhook : null;
      if (!(await services.a2p.setSmsWebhook(request.account.id, number.e164, value))) {
        throw notFound('Inbound number');
      }
      return { status: 'success' as const, phone_number: number.e164, webhook: value };
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
