import { Type } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, Nullable } from '../schemas/common.js';
import { PhoneInput } from '../schemas/call.js';
import { normalizePathNumber, normalizePhone } from '../domain/phone.js';
import { notFound, validationError } from '../errors.js';
import type { BlockedNumber as BlockedNumberRow } from '../store/blocked.js';

const tags = ['Blocked numbers'];

const BlockedNumber = Type.Object({
  phone_number: Type.String(),
  reason: Nullable(Type.String()),
  created_at: Type.String(),
});

/** A blocked number as the hosted API shows a block rule. Every rule here is account-wide. */
const BlockRule = Type.Object({
  id: Type.String({ description: 'The blocked number itself (E.164): rules are one per number' }),
  blocked_number: Type.String(),
  is_global: Type.Literal(true),
  inbound_number: Type.Null(),
  org_id: Type.String({ description: 'The account' }),
  reason: Nullable(Type.String()),
  is_active: Type.Literal(true),
  created_at: Type.String(),
  updated_at: Type.String(),
});

function blockRule(accountId: string, row: BlockedNumberRow) {
  return {
    id: row.phone_number,
    blocked_number: row.phone_number,
    is_global: true as const,
    inbound_number: null,
    org_id: accountId,
    reason: row.reason,
    is_active: true as const,
    created_at: row.created_at,
    updated_at: row.created_at,
  };
}

/** A block rule id (the number, `+` written as is or as %2B) as the number, or a 404. */
function blockedPathNumber(raw: string): string {
  const phone = normalizePathNumber(raw);
  if (!phone.ok) throw notFound('Blocked number');
  return phone.e164;
}

/**
 * Blocked numbers: Send Call, batches and campaigns refuse to call them (a 400 naming the number),
 * and calls from them to the account's numbers are rejected by the carrier. Both Openline's form
 * (`{phone_number}`) and the hosted API's block rules (`{numbers, is_global}`, `{data, errors}`) work.
 */
export default async function routes(app: Api, services: Services): Promise<void> {
  app.post(
    '/blocked_numbers',
    {
      schema: {
        tags,
        summary: 'Block numbers',
        description:
          '`{phone_number, reason?}`, or the hosted form `{numbers: [...], is_global: true, reason?}` (at most 10). ' +
          'Blocks apply to the whole account: a block for one inbound number only is not supported.',
        body: Type.Object(
          {
            phone_number: Type.Optional(PhoneInput),
            numbers: Type.Optional(Type.Array(PhoneInput, { minItems: 1, maxItems: 10 })),
            is_global: Type.Optional(Type.Boolean()),
            inbound_number: Type.Optional(Type.String()),
            reason: Type.Optional(Type.String({ maxLength: 500 })),
          },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            blocked_number: BlockedNumber,
            data: Type.Object({ created_count: Type.Integer(), blocks: Type.Array(BlockRule) }),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { phone_number, numbers, is_global, inbound_number, reason } = request.body;
      const field = numbers !== undefined ? 'numbers' : 'phone_number';
      const given = numbers ?? (phone_number === undefined ? [] : [phone_number]);
      const errors: string[] = [];
      if (given.length === 0) errors.push('phone_number is required (or numbers, a list of up to 10)');
      if (is_global === false || inbound_number !== undefined) {
        errors.push(
          'is_global must be true: blocks apply to every number of the account (per-number blocks are not supported)',
        );
      }
      const phones = given.map((raw, i) => {
        const phone = normalizePhone(raw);
        if (!phone.ok) errors.push(`${field === 'numbers' ? `numbers[${i}]` : field} ${phone.reason}`);
        return phone.ok ? phone.e164 : '';
      });
      if (errors.length > 0) throw validationError(errors);
      const rows: BlockedNumberRow[] = [];
      for (const phone of phones) rows.push(await services.blocked.add(request.account.id, phone, reason ?? null));
      return {
        status: 'success' as const,
        blocked_number: rows[0]!,
        data: { created_count: rows.length, blocks: rows.map((row) => blockRule(request.account.id, row)) },
        errors: null,
      };
    },
  );

  app.get(
    '/blocked_numbers',
    {
      schema: {
        tags,
        summary: 'List blocked numbers',
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            blocked_numbers: Type.Array(BlockedNumber),
            data: Type.Object({
              blocks: Type.Array(BlockRule),
              total_count: Type.Integer(),
              filters: Type.Object({ inbound_number: Type.Null(), active_only: Type.Literal(true) }),
            }),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const rows = await services.blocked.list(request.account.id);
      return {
        status: 'success' as const,
        blocked_numbers: rows,
        data: {
          blocks: rows.map((row) => blockRule(request.account.id, row)),
          total_count: rows.length,
          filters: { inbound_number: null, active_only: true as const },
        },
        errors: null,
      };
    },
  );

  app.get(
    '/blocked_numbers/:block_id',
    {
      schema: {
        tags,
        summary: 'A block rule',
        description: 'The id is the blocked number (any form of it; `+` as is or as %2B).',
        params: Type.Object({ block_id: Type.String() }),
        response: { 200: Type.Object({ data: BlockRule, errors: Type.Null() }), ...errorResponses },
      },
    },
    async (request) => {
      const row = await services.blocked.get(request.account.id, blockedPathNumber(request.params.block_id));
      if (!row) throw notFound('Blocked number');
      return { data: blockRule(request.account.id, row), errors: null };
    },
  );

  app.post(
    '/blocked_numbers/:block_id/edit',
    {
      schema: {
        tags,
        summary: 'Edit a block rule',
        description:
          'The hosted form: `reason` replaces the reason; `is_active: false` lifts the block (the rule is then ' +
          'gone: Openline keeps no inactive rules) and `true` keeps or restores it.',
        params: Type.Object({ block_id: Type.String() }),
        body: Type.Object(
          {
            reason: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
            is_active: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: true, 'x-update': true },
        ),
        response: {
          200: Type.Object({
            data: Type.Object({ ...BlockRule.properties, is_active: Type.Boolean() }),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const phone = blockedPathNumber(request.params.block_id);
      const existing = await services.blocked.get(accountId, phone);
      if (!existing) throw notFound('Blocked number');
      const reason = request.body.reason === undefined ? existing.reason : request.body.reason;
      if (request.body.is_active === false) {
        await services.blocked.remove(accountId, phone);
        return { data: { ...blockRule(accountId, { ...existing, reason }), is_active: false }, errors: null };
      }
      const row = await services.blocked.add(accountId, phone, reason);
      return { data: blockRule(accountId, row), errors: null };
    },
  );

  app.delete(
    '/blocked_numbers/:block_id',
    {
      schema: {
        tags,
        summary: 'Unblock a number',
        description: 'The id is the blocked number (any form of it; `+` as is or as %2B).',
        params: Type.Object({ block_id: Type.String() }),
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            message: Type.String(),
            data: Type.Object({ message: Type.String(), deleted_block_id: Type.String() }),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const phone = blockedPathNumber(request.params.block_id);
      if (!(await services.blocked.remove(request.account.id, phone))) throw notFound('Blocked number');
      return {
        status: 'success' as const,
        message: 'Number unblocked',
        data: { message: 'Block rule deleted successfully', deleted_block_id: phone },
        errors: null,
      };
    },
  );
}
