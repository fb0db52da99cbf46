import { Type } from '@sinclair/typebox';
import type { ErrorObject } from 'ajv';
import type { FastifyRequest } from 'fastify';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { ErrorResponse, errorResponses, Nullable, SuccessMessage } from '../schemas/common.js';
import {
  DEFAULT_INBOUND_CONFIG,
  InboundConfig,
  InboundNumber,
  InboundPurchase,
  InboundUpdate,
  applyInboundUpdate,
  configOf,
  inboundConfigProblems,
} from '../schemas/inbound.js';
import { conflict, notFound, validationError } from '../errors.js';
import { countryOf, normalizePathNumber, normalizePhone } from '../domain/phone.js';
import { isSandboxPersona } from '../store/inbound.js';
import { assertValid, formatValidationErrors } from './validation.js';
import { isRecord } from '../domain/records.js';
import { credentialFromHeader, encryptedKeyHeader } from '../security/credentials.js';
import { adoptTwilioNumber, buyTwilioNumber, TwilioPurchaseError } from '../carriers/twilio/numbers.js';
import { unknownToolErrors } from './agents.js';

const tags = ['Inbound'];

const PhoneParams = Type.Object({
  phone_number: Type.String({
    description: 'E.164 with or without + (or %2B), or 10 US digits: all name the same number',
  }),
});

const DEFAULT_AREA_CODE = { US: '415', CA: '416' } as const;

/** The path number in E.164, or a 400 naming phone_number. */
function pathNumber(raw: string): string {
  const result = normalizePathNumber(raw);
  if (!result.ok) throw validationError([`phone_number ${result.reason}`], 'Invalid phone number in the path');
  return result.e164;
}

/** The schema's problems of a route declared with attachValidation, as the contract's sentences. */
function schemaErrors(request: FastifyRequest): string[] {
  const failed = request.validationError as
    (Error & { validation?: ErrorObject[]; validationContext?: string }) | undefined;
  return failed?.validation ? formatValidationErrors(failed.validation, failed.validationContext) : [];
}

/** `transfer_list.sales must ...` -> `transfer_list`: the setting a problem belongs to. */
function settingOf(problem: string): string {
  return (problem.split(' ')[0] ?? '').split(/[.[:]/)[0] ?? problem;
}

/** Seed 3.2: a failed update lists, per setting, why it did not apply. */
function failedUpdates(problems: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const problem of problems) {
    const key = settingOf(problem);
    out[key] = out[key] ? `${out[key]}; ${problem}` : problem;
  }
  return out;
}

/** Problems that need the account's data: tool ids, the pathway and the persona must be the account's own. */
async function accountProblems(services: Services, accountId: string, body: unknown): Promise<string[]> {
  if (!isRecord(body)) return [];
  const problems = await unknownToolErrors(services, accountId, body.tools);
  const pathwayId = typeof body.pathway_id === 'string' ? body.pathway_id.trim() : '';
  if (pathwayId !== '' && !(await services.pathways.get(accountId, pathwayId))) {
    problems.push(`pathway_id is an unknown pathway: ${JSON.stringify(pathwayId)}`);
  }
  const personaId = typeof body.persona_id === 'string' ? body.persona_id.trim() : '';
  if (personaId !== '' && !(await services.personas.get(accountId, personaId))) {
    problems.push(`persona_id is not a persona of this account: ${JSON.stringify(personaId)}`);
  }
  return problems;
}

/** Where a purchased number must be: consistent country_code, area_code and phone_number. */
function placementProblems(body: unknown): string[] {
  if (!isRecord(body)) return [];
  const problems: string[] = [];
  const country = body.country_code === 'US' || body.country_code === 'CA' ? body.country_code : undefined;
  const area = typeof body.area_code === 'string' && /^[2-9]\d{2}$/.test(body.area_code) ? body.area_code : undefined;
  const wanted = body.phone_number === undefined ? undefined : normalizePhone(body.phone_number);
  if (wanted?.ok) {
    const where = countryOf(wanted.e164);
    if (where !== 'US' && where !== 'CA') {
      problems.push('phone_number must be a US or Canadian number');
    } else if (country && where !== country) {
      problems.push(`phone_number is not a number in ${country}`);
    }
    if (area && !wanted.e164.startsWith(`+1${area}`)) problems.push(`phone_number is not in area code ${area}`);
    if (isSandboxPersona(wanted.e164)) {
      problems.push('phone_number is a sandbox persona number (555-0100 to 555-0199), which cannot be held');
    }
  } else if (area && wanted === undefined) {
    const where = countryOf(`+1${area}5550200`);
    if (where === undefined) problems.push(`area_code ${area} is not an assigned area code`);
    else if (where !== (country ?? 'US')) problems.push(`area_code ${area} is not in ${country ?? 'US'}`);
  }
  return problems;
}

/** Inbound numbers: seed 2.4 and 4.4, CONTRACT.md sections 5 and 9. */
export default async function routes(app: Api, services: Services): Promise<void> {
  await registerInboundLabelRoute(app, services);
  await registerInboundInsertRoute(app, services);
  app.post(
    '/inbound/purchase',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Purchase an inbound number',
        description:
          'On the sandbox carrier: allocates a free number +1 <area_code> 555-0200..0999 (default area code 415 ' +
          'in the US, 416 in Canada) or the phone_number asked for, with any setting of Update Inbound Details.',
        body: InboundPurchase,
        response: {
          200: Type.Object({ status: Type.Literal('success'), ...InboundNumber.properties }),
          ...errorResponses,
          409: ErrorResponse,
        },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const problems = [
        ...schemaErrors(request),
        ...placementProblems(request.body),
        ...(await accountProblems(services, accountId, request.body)),
      ];
      if (problems.length > 0) throw validationError([...new Set(problems)]);
      const body = request.body;
      const { config } = applyInboundUpdate(DEFAULT_INBOUND_CONFIG, body);
      let number: InboundNumber | undefined;
      const credential = await credentialFromHeader(request, services);
      // On the account's own SIP trunk: nothing to buy, the number is the trunk's (docs/sip.md).
      if (credential?.provider === 'sip') {
        if (body.phone_number === undefined)
          throw validationError(["phone_number is required with a SIP trunk's encrypted_key: the trunk's number"]);
        const wanted = normalizePhone(body.phone_number);
        if (!wanted.ok) throw validationError([`phone_number: ${body.phone_number} is not a phone number`]);
        number = await services.inbound.create(accountId, wanted.e164, config, {
          carrier: 'sip',
          credentialId: credential.encrypted_key,
        });
        if (!number) throw conflict(`${wanted.e164} is already held`);
        return { status: 'success' as const, ...number };
      }
      // Twilio-backed (the account's own Twilio through encrypted_key, else the server's): a real number.
      const twilio = await services.twilio.account(accountId, credential?.encrypted_key);
      if (twilio) {
        const wanted = body.phone_number === undefined ? undefined : normalizePhone(body.phone_number);
        let phone: string;
        try {
          phone = await buyTwilioNumber(await services.twilio.client(twilio), {
            country: body.country_code ?? 'US',
            areaCode: body.area_code,
            phoneNumber: wanted?.ok ? wanted.e164 : undefined,
            ...services.twilio.numberWebhooks(),
          });
        } catch (error) {
          if (error instanceof TwilioPurchaseError) throw conflict(error.message);
          throw error;
        }
        number = await services.inbound.create(accountId, phone, config, {
          carrier: 'twilio',
          credentialId: credential?.encrypted_key ?? null,
        });
        if (!number) throw conflict(`${phone} is already held`);
        return { status: 'success' as const, ...number };
      }
      if (body.phone_number !== undefined) {
        const wanted = normalizePhone(body.phone_number);
        const phone = wanted.ok ? wanted.e164 : body.phone_number;
        number = await services.inbound.create(accountId, phone, config, { carrier: 'sandbox' });
        if (!number) throw conflict(`${phone} is already held`);
      } else {
        const country = body.country_code ?? 'US';
        const areaCode = body.area_code ?? DEFAULT_AREA_CODE[country];
        number = await services.inbound.allocateSandbox(accountId, areaCode, config);
        if (!number) throw conflict(`No sandbox number is free in area code ${areaCode}`);
      }
      return { status: 'success' as const, ...number };
    },
  );

  app.get(
    '/inbound',
    {
      schema: {
        tags,
        summary: 'List inbound numbers',
        description: 'Every number the account holds, oldest first, with its configuration.',
        response: {
          200: Type.Object({ status: Type.Literal('success'), inbound_numbers: Type.Array(InboundNumber) }),
          ...errorResponses,
        },
      },
    },
    async (request) => ({
      status: 'success' as const,
      inbound_numbers: await services.inbound.list(request.account.id),
    }),
  );

  app.get(
    '/outbound',
    {
      schema: {
        tags,
        summary: 'List outbound numbers',
        description:
          'The numbers the account can call from (`from`): its numbers, oldest first, each with when a call was last placed from it (`last_initiated`, null when none was).',
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            outbound_numbers: Type.Array(
              Type.Object({
                phone_number: Type.String(),
                created_at: Type.String(),
                last_initiated: Nullable(Type.String()),
              }),
            ),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const [numbers, last] = await Promise.all([
        services.inbound.list(accountId),
        services.calls.lastPlacedFrom(accountId),
      ]);
      return {
        status: 'success' as const,
        outbound_numbers: numbers.map((n) => ({
          phone_number: n.phone_number,
          created_at: n.created_at,
          last_initiated: last.get(n.phone_number) ?? null,
        })),
      };
    },
  );

  app.get(
    '/inbound/:phone_number',
    {
      schema: {
        tags,
        summary: 'Get an inbound number',
        params: PhoneParams,
        response: {
          200: Type.Object({ status: Type.Literal('success'), ...InboundNumber.properties }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const number = await services.inbound.get(request.account.id, pathNumber(request.params.phone_number));
      if (!number) throw notFound('Inbound number');
      return { status: 'success' as const, ...number };
    },
  );

  // DELETE as clients send it; POST .../delete as the hosted API documents it.
  for (const [method, url] of [
    ['DELETE', '/inbound/:phone_number'],
    ['POST', '/inbound/:phone_number/delete'],
  ] as const)
    app.route({
      method,
      url,
      schema: {
        hide: method === 'POST',
        tags,
        summary: 'Remove an inbound number',
        description:
          'Openline stops answering it and forgets its settings; the carrier keeps the number (release it ' +
          'there, e.g. in the Twilio console). Also served as POST /v1/inbound/{phone_number}/delete.',
        params: PhoneParams,
        response: { 200: SuccessMessage, ...errorResponses },
      },
      handler: async (request) => {
        const phone = pathNumber(request.params.phone_number);
        if (!(await services.inbound.remove(request.account.id, phone))) throw notFound('Inbound number');
        return { status: 'success' as const, message: `Successfully deleted number from database: ${phone}` };
      },
    });

  app.post(
    '/inbound/:phone_number',
    {
      // The update is all or nothing: every problem, schema or not, is reported with failed_updates.
      attachValidation: true,
      schema: {
        tags,
        summary: 'Update inbound details',
        description:
          'Only the settings sent change; null resets one to its default. A non-empty pathway_id resets prompt, ' +
          'first_sentence, model, dynamic_data, tools and transfer_list unless they are sent too. If any setting ' +
          'is invalid nothing is applied and failed_updates says why.',
        params: PhoneParams,
        body: InboundUpdate,
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            message: Type.String(),
            updates: Type.Partial(InboundConfig),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const phone = pathNumber(request.params.phone_number);
      const existing = await services.inbound.get(accountId, phone);
      if (!existing) throw notFound('Inbound number');
      const reject = (problems: string[]) =>
        validationError([...new Set(problems)], 'Inbound number not updated: no setting was applied', {
          failed_updates: failedUpdates(problems),
        });
      const problems = [...schemaErrors(request), ...(await accountProblems(services, accountId, request.body))];
      if (problems.length > 0) throw reject(problems);
      // The header is sent along by clients on every request: only an account's SIP trunk's key does anything here.
      const key = encryptedKeyHeader(request);
      const credential = key === undefined ? undefined : await services.credentials.resolve(accountId, key);
      let updates: Partial<InboundConfig> = {};
      const saved = await services.inbound.modifyConfig(accountId, phone, (number) => {
        const change = applyInboundUpdate(configOf(number), request.body);
        const invalid = inboundConfigProblems(change.config);
        if (invalid.length > 0) throw reject(invalid);
        updates = change.updates;
        return change.config;
      });
      if (!saved) throw notFound('Inbound number');
      // With an account's SIP trunk's encrypted_key, the number is that trunk's: its calls come from there.
      if (credential?.provider === 'sip' && key !== undefined)
        await services.inbound.bindCarrier(accountId, phone, 'sip', key);
      return { status: 'success' as const, message: 'Inbound number updated', updates };
    },
  );
}

/**
 * Bring Your Own Twilio: `POST /v1/inbound/insert {numbers}` with the `encrypted_key` of the
 * account's Twilio credentials (or the server's own Twilio without one) adds numbers that Twilio
 * account already holds: each is looked up there and its voice and SMS webhooks pointed at
 * Openline. Numbers that could not be added are listed with why; none added is a 400.
 */
export async function registerInboundInsertRoute(app: Api, services: Services): Promise<void> {
  app.post(
    '/inbound/insert',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Add numbers from your own Twilio account',
        description:
          "With the encrypted_key header of Twilio credentials (POST /v1/accounts), or with the server's own " +
          'Twilio: each number must be one the Twilio account holds; its voice and SMS webhooks are pointed at ' +
          'Openline and it answers with the default inbound settings (change them with POST /v1/inbound/{number}).',
        body: Type.Object(
          {
            numbers: Type.Array(Type.String({ description: 'E.164, with the leading +' }), {
              minItems: 1,
              maxItems: 100,
            }),
          },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            message: Type.String(),
            inserted: Type.Array(Type.String()),
            failed: Type.Array(Type.Object({ phone_number: Type.String(), reason: Type.String() })),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      assertValid(request);
      const accountId = request.account.id;
      const credential = await credentialFromHeader(request, services);
      if (credential?.provider === 'sip')
        throw validationError([
          'encrypted_key names a SIP trunk: add its numbers with POST /v1/inbound/purchase {phone_number}',
        ]);
      const twilio = await services.twilio.account(accountId, credential?.encrypted_key);
      if (!twilio)
        throw validationError([
          'encrypted_key is required: the Twilio account that holds the numbers (register it with POST /v1/accounts)',
        ]);
      const client = await services.twilio.client(twilio);
      const urls = services.twilio.numberWebhooks();
      const inserted: string[] = [];
      const failed: { phone_number: string; reason: string }[] = [];
      for (const [i, given] of request.body.numbers.entries()) {
        const phone = normalizePhone(given);
        if (!phone.ok) {
          failed.push({ phone_number: given, reason: `numbers[${i}] ${phone.reason}` });
          continue;
        }
        if (isSandboxPersona(phone.e164) || (await services.inbound.isHeld(phone.e164))) {
          failed.push({ phone_number: phone.e164, reason: `numbers[${i}] is already held` });
          continue;
        }
        const why = await adoptTwilioNumber(client, phone.e164, urls);
        if (why) {
          failed.push({ phone_number: phone.e164, reason: `numbers[${i}] ${why}` });
          continue;
        }
        const number = await services.inbound.create(accountId, phone.e164, DEFAULT_INBOUND_CONFIG, {
          carrier: 'twilio',
          credentialId: credential?.encrypted_key ?? null,
        });
        if (number) inserted.push(number.phone_number);
        else failed.push({ phone_number: phone.e164, reason: `numbers[${i}] is already held` });
      }
      if (inserted.length === 0)
        throw validationError(
          failed.map((f) => f.reason),
          'No number inserted',
        );
      return {
        status: 'success' as const,
        message: `Inserted ${inserted.length} of ${request.body.numbers.length} numbers`,
        inserted,
        failed,
      };
    },
  );
}

/**
 * The older label route, `POST /inbound/update_label` (also under /v1), as the hosted API's CLI
 * sends it: `{phoneNumber, newLabel}` (or `phone_number`, `label`); an empty label clears it.
 */
export async function registerInboundLabelRoute(app: Api, services: Services): Promise<void> {
  app.post(
    '/inbound/update_label',
    {
      schema: {
        hide: true,
        tags,
        summary: "Set or clear an inbound number's label",
        body: Type.Object({}, { additionalProperties: true }),
        response: {
          200: Type.Object({ status: Type.Literal('success'), label: Nullable(Type.String()) }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const body = request.body as Record<string, unknown>;
      const phone = body.phoneNumber ?? body.phone_number;
      const label = body.newLabel !== undefined ? body.newLabel : body.label;
      const problems: string[] = [];
      const normalized = normalizePhone(phone);
      if (phone === undefined) problems.push('phoneNumber is required: the inbound number to label');
      else if (!normalized.ok) problems.push(`phoneNumber ${normalized.reason}`);
      if (label !== null && label !== undefined && typeof label !== 'string')
        problems.push('newLabel must be a string');
      else if (typeof label === 'string' && label.length > 200)
        problems.push('newLabel must be at most 200 characters');
      if (problems.length > 0 || !normalized.ok) throw validationError(problems);
      const text = typeof label === 'string' && label.trim() !== '' ? label.trim() : null;
      const saved = await services.inbound.modifyConfig(request.account.id, normalized.e164, (number) => ({
        ...configOf(number),
        label: text,
      }));
      if (!saved) throw notFound('Inbound number');
      return { status: 'success' as const, label: saved.label };
    },
  );
}
