import { Type } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, Nullable } from '../schemas/common.js';
import { PhoneInput } from '../schemas/call.js';
import { normalizePathNumber, normalizePhone } from '../domain/phone.js';
import { notFound, validationError } from '../errors.js';

const tags = ['Blocked numbers'];

const BlockedNumber = Type.Object({
  phone_number: Type.String(),
  reason: Nullable(Type.String()),
  created_at: Type.String(),
});

/**
 * Blocked numbers: Send Call, batches and campaigns refuse to call them (a 400 naming the number),
 * and calls from them to the account's numbers are rejected by the carrier.
 */
export default async function routes(app: Api, services: Services): Promise<void> {
  app.post(
    '/blocked_numbers',
    {
      schema: {
        tags,
        summary: 'Block a number',
        body: Type.Object(
          { phone_number: PhoneInput, reason: Type.Optional(Type.String({ maxLength: 500 })) },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object({ status: Type.Literal('success'), blocked_number: BlockedNumber }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const phone = normalizePhone(request.body.phone_number);
      if (!phone.ok) throw validationError([`phone_number ${phone.reason}`]);
      const row = await services.blocked.add(request.account.id, phone.e164, request.body.reason ?? null);
      return { status: 'success' as const, blocked_number: row };
    },
  );

  app.get(
    '/blocked_numbers',
    {
      schema: {
        tags,
        summary: 'List blocked numbers',
        response: {
          200: Type.Object({ status: Type.Literal('success'), blocked_numbers: Type.Array(BlockedNumber) }),
          ...errorResponses,
        },
      },
    },
    async (request) => ({
      status: 'success' as const,
      blocked_numbers: await services.blocked.list(request.account.id),
    }),
  );

  app.delete(
    '/blocked_numbers/:phone_number',
    {
      schema: {
        tags,
        summary: 'Unblock a number',
        params: Type.Object({ phone_number: Type.String() }),
        response: { 200: Type.Object({ status: Type.Literal('success'), message: Type.String() }), ...errorResponses },
      },
    },
    async (request) => {
      const phone = normalizePathNumber(request.params.phone_number);
      if (!phone.ok || !(await services.blocked.remove(request.account.id, phone.e164))) {
        throw notFound('Blocked number');
      }
      return { status: 'success' as const, message: 'Number unblocked' };
    },
  );
}
