import { Type } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { checked, errorResponses, FreeObject, IdParams, Nullable, StringEnum } from '../schemas/common.js';
import { normalizePathNumber, normalizePhone, normalizeQueryPhone } from '../domain/phone.js';
import { notFound, validationError } from '../errors.js';
import { MAX_SMS_BODY } from '../sms/inbound.js';
import { CONVERSATION_FIELDS, type ConversationFilter, type SmsConfig } from '../sms/conversations.js';
import { normalizeCallSettings, toolResolver } from '../schemas/call-request.js';
import type { CallSettings } from '../schemas/call.js';

const tags = ['SMS'];

const SmsConfigSchema = Type.Object({
  objective: Nullable(Type.String()),
  pathway_id: Nullable(Type.String()),
  pathway_version: Nullable(Type.String()),
  start_node_id: Nullable(Type.String()),
  webhook: Nullable(Type.String()),
  request_data: FreeObject(),
  temperature: Nullable(Type.Number()),
  time_out: Nullable(Type.Number()),
  tools: Type.Array(Type.Unknown()),
  messaging_service_sid: Nullable(Type.String()),
});

const Conversation = Type.Object({
  id: Type.String(),
  agent_number: Type.String(),
  user_number: Type.String(),
  is_active: Type.Boolean(),
  request_data: Nullable(FreeObject()),
  created_at: Type.String(),
  updated_at: Type.String(),
});

const Message = Type.Object({
  id: Type.String(),
  sender: Type.Union([Type.Literal('USER'), Type.Literal('AGENT')]),
  message: Type.String(),
  created_at: Type.String(),
});

/** The hosted list's filter operators, as SQL. */
const OPERATORS: Record<string, ConversationFilter['operator']> = {
  eq: '=',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<=',
  contains: 'like',
  startsWith: 'like',
  endsWith: 'like',
};

/**
 * The hosted list's `filters` (a JSON array of `{field, operator, value}`) as conditions; each
 * problem is pushed to `errors`, naming the filter by its position.
 */
function parseFilters(text: string | undefined, errors: string[]): ConversationFilter[] {
  if (text === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed)) {
    errors.push('filters must be a JSON array of {field, operator, value}');
    return [];
  }
  const filters: ConversationFilter[] = [];
  parsed.forEach((item: unknown, i) => {
    const at = `filters[${i}]`;
    const f = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
    const field = CONVERSATION_FIELDS.find((name) => name === f.field);
    const operator = typeof f.operator === 'string' ? OPERATORS[f.operator] : undefined;
    if (!field) errors.push(`${at}.field must be one of ${CONVERSATION_FIELDS.join(', ')}`);
    if (!operator) errors.push(`${at}.operator must be one of ${Object.keys(OPERATORS).join(', ')}`);
    const raw = f.value;
    let value: string | number | undefined;
    if (field === 'is_active') {
      if (raw === true || raw === 'true') value = 1;
      else if (raw === false || raw === 'false') value = 0;
      else errors.push(`${at}.value must be true or false for is_active`);
    } else if (field === 'message_count') {
      const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
      if (Number.isInteger(n)) value = n;
      else errors.push(`${at}.value must be a whole number for message_count`);
    } else if (field === 'created_at' || field === 'updated_at') {
      const time = typeof raw === 'string' || typeof raw === 'number' ? Date.parse(String(raw)) : NaN;
      if (Number.isNaN(time)) errors.push(`${at}.value must be an ISO 8601 date or time for ${field}`);
      else value = new Date(time).toISOString();
    } else if (field) {
      if (typeof raw !== 'string') errors.push(`${at}.value must be a string for ${field}`);
      else value = raw;
    }
    if (!field || !operator || value === undefined) return;
    const op = f.operator;
    if (operator === 'like') value = `${op === 'startsWith' ? '' : '%'}${String(value)}${op === 'endsWith' ? '' : '%'}`;
    filters.push({ field, operator, value });
  });
  return filters;
}

/**
 * AI conversations over SMS, in the hosted API's shapes: a number's agent settings
 * (`POST /v1/sms/number/update`, `GET /v1/sms/numbers`) and its conversations (list, get,
 * activate or close, send on one). src/sms/conversations.ts answers the texts.
 */
export default async function routes(app: Api, services: Services): Promise<void> {
  app.post(
    '/sms/number/update',
    {
      schema: {
        tags,
        summary: 'Set the SMS agent of a number',
        description:
          'With an `objective` (the agent’s prompt) or a `pathway_id`, the agent answers every text the number receives, in a conversation per person, with the language model (or the offline model), and POSTs each reply with the history to `webhook`. Fields not sent are kept; null clears.',
        body: Type.Object(
          {
            phone_number: Type.Union([Type.String({ minLength: 1 }), Type.Number()]),
            objective: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
            pathway_id: Type.Optional(Nullable(Type.String())),
            pathway_version: Type.Optional(Nullable(Type.Union([Type.String(), Type.Integer({ minimum: 0 })]))),
            start_node_id: Type.Optional(Nullable(Type.String())),
            webhook: Type.Optional(Nullable(checked(Type.String(), 'http_url'))),
            request_data: Type.Optional(Nullable(Type.Union([FreeObject(), Type.Array(Type.Unknown())]))),
            temperature: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1 }))),
            time_out: Type.Optional(Nullable(Type.Number({ exclusiveMinimum: 0, description: 'Minutes' }))),
            tools: Type.Optional(Nullable(Type.Array(Type.Unknown()))),
            messaging_service_sid: Type.Optional(Nullable(Type.String())),
          },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object({
            data: Type.Object({ message: Type.String(), sms_config: SmsConfigSchema }),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const body = request.body;
      const number = normalizePathNumber(String(body.phone_number));
      if (!number.ok) throw validationError([`phone_number ${number.reason}`]);
      if (!(await services.inbound.get(request.account.id, number.e164))) throw notFound('Inbound number');
      const input: Partial<SmsConfig> = {};
      if (body.objective !== undefined) input.objective = body.objective || null;
      if (body.pathway_id !== undefined) input.pathway_id = body.pathway_id || null;
      if (body.pathway_version !== undefined)
        input.pathway_version = body.pathway_version === null ? null : String(body.pathway_version);
      if (body.start_node_id !== undefined) input.start_node_id = body.start_node_id || null;
      if (body.webhook !== undefined) input.webhook = body.webhook || null;
      // An array of {key: value} objects (as the hosted docs show it) is merged into one object.
      if (body.request_data !== undefined)
        input.request_data = Array.isArray(body.request_data)
          ? Object.assign({}, ...body.request_data.filter((x) => typeof x === 'object' && x !== null))
          : (body.request_data ?? {});
      if (body.temperature !== undefined) input.temperature = body.temperature;
      if (body.time_out !== undefined) input.time_out = body.time_out;
      if (body.tools !== undefined) input.tools = body.tools ?? [];
      if (body.messaging_service_sid !== undefined) input.messaging_service_sid = body.messaging_service_sid;
      if (input.tools && input.tools.length > 0) {
        // The tools are checked as a call's are: ids of the account's own, or whole definitions.
        const errors: string[] = [];
        const tools = input.tools as CallSettings['tools'];
        await normalizeCallSettings({ tools }, toolResolver(services, request.account.id), errors, {
          requirePhone: false,
          requireTask: false,
        });
        if (errors.length > 0) throw validationError(errors);
      }
      if (input.pathway_id && !(await services.pathways.get(request.account.id, input.pathway_id)))
        throw validationError([`pathway_id ${input.pathway_id} is not a pathway of this account`]);
      const config = await services.smsConversations.configure(request.account.id, number.e164, input);
      return { data: { message: `SMS config updated for number ${number.e164}`, sms_config: config }, errors: null };
    },
  );

  app.get(
    '/sms/numbers',
    {
      schema: {
        tags,
        summary: 'List the numbers with SMS settings',
        response: {
          200: Type.Object({
            data: Type.Array(
              Type.Object({
                phone_number: Type.String(),
                sms_config: SmsConfigSchema,
                conversation_count: Type.Integer(),
              }),
            ),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => ({ data: await services.smsConversations.numbers(request.account.id), errors: null }),
  );

  app.get(
    '/sms/conversations',
    {
      schema: {
        tags,
        summary: 'List SMS conversations',
        description:
          'Pages of `pageSize` (25 by default) as the hosted API gives them, newest first unless `sortBy` and ' +
          '`sortDir` say otherwise, with `extra.pagination`. `filters` is a JSON array of ' +
          '`{field, operator, value}` on created_at, updated_at, user_number, agent_number, is_active or ' +
          'message_count, with eq, gt, gte, lt, lte, contains, startsWith or endsWith.',
        querystring: Type.Object({
          phone_number: Type.Optional(Type.String({ description: 'Conversations of this number (ours or theirs)' })),
          page: Type.Optional(Type.Integer({ minimum: 1, description: 'Counted from 1' })),
          pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'The same as pageSize' })),
          sortBy: Type.Optional(StringEnum(CONVERSATION_FIELDS)),
          sortDir: Type.Optional(StringEnum(['asc', 'desc'] as const)),
          filters: Type.Optional(Type.String({ description: 'A JSON array of {field, operator, value}' })),
        }),
        response: {
          200: Type.Object({
            data: Type.Array(
              Type.Object({
                ...Conversation.properties,
                message_count: Type.Integer(),
                last_message: Nullable(Type.String({ description: 'The text of the latest message' })),
              }),
            ),
            errors: Type.Null(),
            extra: Type.Object({
              pagination: Type.Object({
                totalItems: Type.Integer(),
                totalPages: Type.Integer(),
                currentPage: Type.Integer(),
                pageSize: Type.Integer(),
              }),
            }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const q = request.query;
      const errors: string[] = [];
      let phone: string | undefined;
      if (q.phone_number !== undefined) {
        const parsed = normalizeQueryPhone(q.phone_number);
        if (parsed.ok) phone = parsed.e164;
        else errors.push(`phone_number ${parsed.reason}`);
      }
      const filters = parseFilters(q.filters, errors);
      if (errors.length > 0) throw validationError(errors);
      const page = q.page ?? 1;
      const pageSize = q.pageSize ?? q.limit ?? 25;
      const { rows, total } = await services.smsConversations.list(request.account.id, {
        ...(phone && { phone }),
        filters,
        ...(q.sortBy && { sortBy: q.sortBy }),
        ...(q.sortDir && { sortDir: q.sortDir }),
        limit: pageSize,
        offset: (page - 1) * pageSize,
      });
      return {
        data: rows,
        errors: null,
        extra: {
          pagination: { totalItems: total, totalPages: Math.ceil(total / pageSize), currentPage: page, pageSize },
        },
      };
    },
  );

  app.get(
    '/sms/conversations/:id',
    {
      schema: {
        tags,
        summary: 'An SMS conversation with its messages',
        params: IdParams,
        response: {
          200: Type.Object({
            data: Type.Intersect([Conversation, Type.Object({ messages: Type.Array(Message) })]),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const conversation = await services.smsConversations.get(request.account.id, request.params.id);
      if (!conversation) throw notFound('Conversation');
      return { data: conversation, errors: null };
    },
  );

  app.patch(
    '/sms/conversations/:id',
    {
      schema: {
        tags,
        summary: 'Close or reopen an SMS conversation',
        description: 'is_active false: the agent stops answering; the person’s next text opens a new conversation.',
        params: IdParams,
        body: Type.Object({ is_active: Type.Boolean() }, { additionalProperties: true }),
        response: {
          200: Type.Object({
            message: Type.String(),
            conversation: Type.Object({ id: Type.String(), is_active: Type.Boolean(), updated_at: Type.String() }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const updated = await services.smsConversations.setActive(
        request.account.id,
        request.params.id,
        request.body.is_active,
      );
      if (!updated) throw notFound('Conversation');
      return {
        message: 'Conversation updated successfully',
        conversation: { id: updated.id, is_active: updated.is_active, updated_at: updated.updated_at },
      };
    },
  );

  app.post(
    '/sms/create',
    {
      schema: {
        tags,
        summary: 'Put a message into an SMS conversation',
        description:
          'Records `message` in the conversation of `user_number` and `agent_number` (one of your numbers) ' +
          'without sending it: the pair’s active conversation, or a new one (`new_conversation: true` always ' +
          'starts one). `sender` is USER (default) or AGENT.',
        body: Type.Object(
          {
            user_number: Type.Union([Type.String(), Type.Number()]),
            agent_number: Type.Union([Type.String(), Type.Number()]),
            message: Type.String({ minLength: 1, maxLength: MAX_SMS_BODY }),
            message_sid: Type.Optional(Type.String({ description: 'Accepted; not used' })),
            sender: Type.Optional(StringEnum(['USER', 'AGENT'] as const)),
            new_conversation: Type.Optional(Type.Boolean()),
            request_data: Type.Optional(FreeObject()),
          },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object({
            data: Type.Object({ message: Type.String(), conversation_id: Type.String(), message_id: Type.String() }),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const b = request.body;
      const user = normalizePhone(b.user_number);
      const agent = normalizePhone(b.agent_number);
      const errors: string[] = [];
      if (!user.ok) errors.push(`user_number ${user.reason}`);
      if (!agent.ok) errors.push(`agent_number ${agent.reason}`);
      if (!user.ok || !agent.ok) throw validationError(errors);
      const number = await services.inbound.get(request.account.id, agent.e164);
      if (!number) throw validationError([`agent_number ${agent.e164} is not a number of this account`]);
      const seeded = await services.smsConversations.seed(request.account.id, {
        agent_number: agent.e164,
        user_number: user.e164,
        message: b.message,
        sender: b.sender ?? 'USER',
        fresh: b.new_conversation === true,
        request_data: b.request_data ?? null,
        carrier: number.carrier,
      });
      return { data: { message: 'SMS conversation created successfully', ...seeded }, errors: null };
    },
  );

  app.post(
    '/sms/conversations/:id/messages',
    {
      schema: {
        tags,
        summary: 'Send a message on an SMS conversation',
        description: 'A person taking over: the text goes to the conversation’s user from its number.',
        params: IdParams,
        body: Type.Object(
          { message: Type.String({ minLength: 1, maxLength: MAX_SMS_BODY }), sender: Type.Optional(Type.String()) },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object({
            data: Type.Object({ message_id: Type.String(), conversation_id: Type.String() }),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const id = await services.smsConversations.post(request.account.id, request.params.id, request.body.message);
      if (!id) throw notFound('Conversation');
      return { data: { message_id: id, conversation_id: request.params.id }, errors: null };
    },
  );
}
