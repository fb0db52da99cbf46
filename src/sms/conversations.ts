import type { ExpressionBuilder, Kysely, Transaction } from 'kysely';
import type { Clock } from '../clock.js';
import type { JobQueue } from '../jobs/queue.js';
import type { Agent, Turn } from '../agent/types.js';
import type { CallRequest, CallTool, ToolResolver } from '../schemas/call-request.js';
import { normalizeCallSettings } from '../schemas/call-request.js';
import type { CallSettings } from '../schemas/call.js';
import { findTool, toolCalledNote, toolOutcomeNote, type ToolResult } from '../agent/tools.js';
import type { Database } from '../store/types.js';
import { fromJson } from '../store/json.js';
import { WebhookStore } from '../store/webhooks.js';
import { newId } from '../security/secrets.js';

/** A number's SMS agent settings, in the hosted API's shape (POST /v1/sms/number/update). */
export interface SmsConfig {
  /** What the agent is there for (its prompt); used when no pathway is set. */
  objective: string | null;
  pathway_id: string | null;
  pathway_version: string | null;
  start_node_id: string | null;
  /** Where each reply is POSTed with the conversation's history. */
  webhook: string | null;
  /** Variables of every conversation on the number. */
  request_data: Record<string, unknown>;
  temperature: number | null;
  /** Minutes of silence after which a conversation is over (the next message opens a new one). */
  time_out: number | null;
  tools: unknown[];
  messaging_service_sid: string | null;
}

/** Custom tool runs within one reply, at most: an agent that keeps asking for tools still answers. */
const MAX_TOOL_STEPS = 3;

export const EMPTY_SMS_CONFIG: SmsConfig = {
  objective: null,
  pathway_id: null,
  pathway_version: null,
  start_node_id: null,
  webhook: null,
  request_data: {},
  temperature: null,
  time_out: null,
  tools: [],
  messaging_service_sid: null,
};

export interface SmsConversation {
  id: string;
  agent_number: string;
  user_number: string;
  is_active: boolean;
  request_data: Record<string, unknown> | null;
  created_at: string;
  updated_at: string;
}

export interface ConversationMessage {
  id: string;
  sender: 'USER' | 'AGENT';
  message: string;
  created_at: string;
}

type Db = Kysely<Database> | Transaction<Database>;

const toConversation = (row: Database['sms_conversations']): SmsConversation => ({
  id: row.id,
  agent_number: row.agent_number,
  user_number: row.user_number,
  is_active: row.is_active === 1,
  request_data: fromJson<Record<string, unknown> | null>(row.request_data, null),
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/** A listed conversation: its number of messages and the text of the latest. */
export type ListedConversation = SmsConversation & { message_count: number; last_message: string | null };

/** What the hosted list sorts and filters conversations by: a column, or the number of messages. */
export const CONVERSATION_FIELDS = [
  'created_at',
  'updated_at',
  'user_number',
  'agent_number',
  'is_active',
  'message_count',
] as const;
export type ConversationField = (typeof CONVERSATION_FIELDS)[number];

/** A condition of the hosted list's `filters`. */
export interface ConversationFilter {
  field: ConversationField;
  operator: '=' | '>' | '>=' | '<' | '<=' | 'like';
  value: string | number;
}

export interface ConversationQuery {
  /** Conversations of this number, ours or theirs. */
  phone?: string;
  filters?: ConversationFilter[];
  sortBy?: ConversationField;
  sortDir?: 'asc' | 'desc';
  limit?: number;
  offset?: number;
}

/** The number of messages of the conversation a query is on. */
const messageCount = (eb: ExpressionBuilder<Database, 'sms_conversations'>) =>
  eb
    .selectFrom('sms_messages as m')
    .select(eb.fn.countAll().as('n'))
    .whereRef('m.conversation_id', '=', 'sms_conversations.id');

/** Stored settings, with the defaults of fields added since they were stored. */
const parseConfig = (text: string): SmsConfig => ({ ...EMPTY_SMS_CONFIG, ...fromJson<Partial<SmsConfig>>(text, {}) });

/** A number's agent settings, when it has an agent for texts. */
export async function smsConfigOf(db: Db, phone: string): Promise<SmsConfig | undefined> {
  const row = await db.selectFrom('sms_configs').select('config').where('phone_number', '=', phone).executeTakeFirst();
  if (!row) return undefined;
  const config = parseConfig(row.config);
  return config.objective || config.pathway_id ? config : undefined;
}

/**
 * The conversation an inbound text joins on a number with an SMS agent: the person's active one
 * (unless it went quiet for longer than the number's `time_out`), else a new one. Runs in the
 * transaction that stores the message. Undefined when the number has no agent for texts.
 */
export async function joinConversation(
  trx: Db,
  clock: Clock,
  message: { account_id: string; to_number: string; from_number: string },
): Promise<string | undefined> {
  const config = await smsConfigOf(trx, message.to_number);
  if (!config) return undefined;
  const now = clock.now();
  const active = await trx
    .selectFrom('sms_conversations')
    .selectAll()
    .where('agent_number', '=', message.to_number)
    .where('user_number', '=', message.from_number)
    .where('is_active', '=', 1)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  const quietFor = active ? now.getTime() - Date.parse(active.updated_at) : 0;
  if (active && (config.time_out === null || quietFor <= config.time_out * 60_000)) {
    await trx
      .updateTable('sms_conversations')
      .set({ updated_at: now.toISOString() })
      .where('id', '=', active.id)
      .execute();
    return active.id;
  }
  if (active) await trx.updateTable('sms_conversations').set({ is_active: 0 }).where('id', '=', active.id).execute();
  const id = newId('conv_');
  await trx
    .insertInto('sms_conversations')
    .values({
      id,
      account_id: message.account_id,
      agent_number: message.to_number,
      user_number: message.from_number,
      is_active: 1,
      request_data: null,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
    })
    .execute();
  return id;
}

export interface SmsConversationDeps {
  db: Kysely<Database>;
  clock: Clock;
  queue: JobQueue;
  /** The mind of a conversation: a pathway runner, the language model, or the offline model. */
  agentFor(request: CallRequest, accountId: string): Agent;
  /** Sends a text from one of the account's numbers; returns the stored message's id. */
  send(accountId: string, message: { to: string; from: string; body: string }): Promise<string>;
  /** Looks up the custom tools (and knowledge bases) a number's settings name, as for calls. */
  tools(accountId: string): ToolResolver;
  /** Runs one of the account's custom tools, as a call does. */
  runTool(accountId: string, tool: CallTool, input: unknown, variables: Record<string, unknown>): Promise<ToolResult>;
  log?: { warn(object: object, message: string): void };
}

/**
 * AI conversations over SMS (docs/sms.md): a number with agent settings answers every text it
 * receives in the person's conversation, with the language model, a pathway or the offline model,
 * as the `sms_reply` job (durable: a reply is not lost to a restart). Replies go out like any
 * text of the number (Twilio, or the sandbox), and to the number's SMS webhook with the history.
 */
export class SmsConversations {
  /** A conversation's agent, kept while it lasts: a pathway runner remembers where it is. */
  private readonly agents = new Map<string, Agent>();

  constructor(private readonly d: SmsConversationDeps) {}

  async configure(accountId: string, phone: string, input: Partial<SmsConfig>): Promise<SmsConfig> {
    const current = (await smsConfigOf(this.d.db, phone)) ?? EMPTY_SMS_CONFIG;
    const config: SmsConfig = { ...current };
    for (const key of Object.keys(EMPTY_SMS_CONFIG) as (keyof SmsConfig)[])
      if (input[key] !== undefined) (config as unknown as Record<string, unknown>)[key] = input[key];
    const row = {
      phone_number: phone,
      account_id: accountId,
      config: JSON.stringify(config),
      updated_at: this.d.clock.now().toISOString(),
    };
    await this.d.db
      .insertInto('sms_configs')
      .values(row)
      .onConflict((oc) => oc.column('phone_number').doUpdateSet({ config: row.config, updated_at: row.updated_at }))
      .execute();
    return config;
  }

  /** The account's numbers with their SMS settings and how many conversations each had. */
  async numbers(
    accountId: string,
  ): Promise<{ phone_number: string; sms_config: SmsConfig; conversation_count: number }[]> {
    const rows = await this.d.db
      .selectFrom('sms_configs')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('phone_number')
      .execute();
    // One count per number, in one query.
    const counts = await this.d.db
      .selectFrom('sms_conversations')
      .select(['agent_number', (e) => e.fn.countAll<number>().as('n')])
      .where('account_id', '=', accountId)
      .groupBy('agent_number')
      .execute();
    const countOf = new Map(counts.map((c) => [c.agent_number, Number(c.n)]));
    return rows.map((row) => ({
      phone_number: row.phone_number,
      sms_config: parseConfig(row.config),
      conversation_count: countOf.get(row.phone_number) ?? 0,
    }));
  }

  /**
   * A page of the account's conversations, each with its number of messages and the last one, and
   * how many match in all (the hosted list's `extra.pagination`).
   */
  async list(
    accountId: string,
    options: ConversationQuery = {},
  ): Promise<{ rows: ListedConversation[]; total: number }> {
    const base = this.d.db
      .selectFrom('sms_conversations')
      .where('account_id', '=', accountId)
      .where((eb) => {
        const conditions = (options.filters ?? []).map((f) => {
          const column = f.field === 'message_count' ? messageCount(eb) : eb.ref(`sms_conversations.${f.field}`);
          return eb(column, f.operator, f.value);
        });
        const phone = options.phone;
        if (phone !== undefined)
          conditions.push(eb.or([eb('agent_number', '=', phone), eb('user_number', '=', phone)]));
        return eb.and(conditions);
      });
    const direction = options.sortDir ?? 'desc';
    const [rows, counted] = await Promise.all([
      base
        .selectAll()
        .select((eb) => [
          messageCount(eb).as('message_count'),
          eb
            .selectFrom('sms_messages as m')
            .select('m.body')
            .whereRef('m.conversation_id', '=', 'sms_conversations.id')
            .orderBy('m.created_at', 'desc')
            .orderBy('m.id', 'desc')
            .limit(1)
            .as('last_message'),
        ])
        .orderBy(options.sortBy ?? 'created_at', direction)
        .orderBy('id', direction)
        .limit(options.limit ?? 25)
        .offset(options.offset ?? 0)
        .execute(),
      base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
    ]);
    return {
      rows: rows.map((row) => ({
        ...toConversation(row),
        message_count: Number(row.message_count ?? 0),
        last_message: row.last_message ?? null,
      })),
      total: Number(counted.n),
    };
  }

  private row(accountId: string, id: string): Promise<Database['sms_conversations'] | undefined> {
    return this.d.db
      .selectFrom('sms_conversations')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  async get(
    accountId: string,
    id: string,
  ): Promise<(SmsConversation & { messages: ConversationMessage[] }) | undefined> {
    const row = await this.row(accountId, id);
    if (!row) return undefined;
    return { ...toConversation(row), messages: await this.messages(id) };
  }

  async setActive(accountId: string, id: string, active: boolean): Promise<SmsConversation | undefined> {
    await this.d.db
      .updateTable('sms_conversations')
      .set({ is_active: active ? 1 : 0, updated_at: this.d.clock.now().toISOString() })
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .execute();
    if (!active) this.agents.delete(id);
    const row = await this.row(accountId, id);
    return row && toConversation(row);
  }

  /** A message the account sends on the conversation itself (a person taking over): it goes out to the user. */
  /**
   * A message put into the conversation of two numbers without being sent (POST /v1/sms/create):
   * the pair's active conversation, or a new one (always a new one with `fresh`, the active one
   * closed). An AGENT message reads as the agent's, a USER message as the person's, in the history
   * the agent answers from.
   */
  async seed(
    accountId: string,
    input: {
      agent_number: string;
      user_number: string;
      message: string;
      sender: 'USER' | 'AGENT';
      fresh: boolean;
      request_data: Record<string, unknown> | null;
      carrier: string;
    },
  ): Promise<{ conversation_id: string; message_id: string }> {
    const now = this.d.clock.now().toISOString();
    return this.d.db.transaction().execute(async (trx) => {
      const active = await trx
        .selectFrom('sms_conversations')
        .select('id')
        .where('account_id', '=', accountId)
        .where('agent_number', '=', input.agent_number)
        .where('user_number', '=', input.user_number)
        .where('is_active', '=', 1)
        .orderBy('created_at', 'desc')
        .executeTakeFirst();
      if (active && input.fresh)
        await trx.updateTable('sms_conversations').set({ is_active: 0 }).where('id', '=', active.id).execute();
      let conversationId = active && !input.fresh ? active.id : undefined;
      if (conversationId) {
        await trx.updateTable('sms_conversations').set({ updated_at: now }).where('id', '=', conversationId).execute();
      } else {
        conversationId = newId('conv_');
        await trx
          .insertInto('sms_conversations')
          .values({
            id: conversationId,
            account_id: accountId,
            agent_number: input.agent_number,
            user_number: input.user_number,
            is_active: 1,
            request_data: input.request_data ? JSON.stringify(input.request_data) : null,
            created_at: now,
            updated_at: now,
          })
          .execute();
      }
      const fromUser = input.sender === 'USER';
      const messageId = newId('sms_');
      await trx
        .insertInto('sms_messages')
        .values({
          id: messageId,
          account_id: accountId,
          to_number: fromUser ? input.agent_number : input.user_number,
          from_number: fromUser ? input.user_number : input.agent_number,
          body: input.message,
          carrier: input.carrier,
          carrier_message_id: null,
          received_at: now,
          created_at: now,
          webhook: null,
          direction: fromUser ? 'inbound' : 'outbound',
          conversation_id: conversationId,
        })
        .execute();
      return { conversation_id: conversationId, message_id: messageId };
    });
  }

  async post(accountId: string, id: string, body: string): Promise<string | undefined> {
    const conversation = await this.get(accountId, id);
    if (!conversation) return undefined;
    const messageId = await this.d.send(accountId, {
      to: conversation.user_number,
      from: conversation.agent_number,
      body,
    });
    await this.tag(messageId, id);
    return messageId;
  }

  /** The `sms_reply` job: the agent answers the inbound text `messageId` in its conversation. */
  async reply(messageId: string): Promise<void> {
    const { db } = this.d;
    const message = await db.selectFrom('sms_messages').selectAll().where('id', '=', messageId).executeTakeFirst();
    if (!message?.conversation_id) return;
    // Done already (the job ran before a crash): a reply follows the message.
    const answered = await db
      .selectFrom('sms_messages')
      .select('id')
      .where('conversation_id', '=', message.conversation_id)
      .where('direction', '=', 'outbound')
      .where('created_at', '>=', message.created_at)
      .executeTakeFirst();
    if (answered) return;
    const conversation = await db
      .selectFrom('sms_conversations')
      .selectAll()
      .where('id', '=', message.conversation_id)
      .executeTakeFirst();
    const config = await smsConfigOf(db, message.to_number);
    if (!conversation || conversation.is_active !== 1 || !config) return;

    const request = await this.requestOf(conversation, config);
    const history = (await this.messages(conversation.id)).filter((m) => m.id !== message.id);
    // What the agent did in answering each earlier text follows that text, as on a call.
    const actions = await db
      .selectFrom('sms_agent_actions')
      .select(['message_id', 'text'])
      .where('conversation_id', '=', conversation.id)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    const transcript: Turn[] = history.flatMap((m): Turn[] => [
      { role: m.sender === 'USER' ? 'user' : 'assistant', text: m.message },
      ...actions.filter((a) => a.message_id === m.id).map((a): Turn => ({ role: 'agent-action', text: a.text })),
    ]);
    let agent = this.agents.get(conversation.id);
    if (!agent) {
      agent = this.d.agentFor(request, conversation.account_id);
      this.agents.set(conversation.id, agent);
      if (this.agents.size > 1000) this.agents.delete(this.agents.keys().next().value!);
    }
    const context = {
      callId: conversation.id,
      request,
      inbound: true,
      variables: {
        ...request.request_data,
        phone_number: conversation.user_number,
        from: conversation.agent_number,
        ...fromJson<Record<string, unknown>>(conversation.variables, {}),
      },
      transcript,
    };
    const note = async (text: string) => {
      context.transcript.push({ role: 'agent-action', text });
      await db
        .insertInto('sms_agent_actions')
        .values({
          id: newId('sat_'),
          conversation_id: conversation.id,
          message_id: message.id,
          text,
          created_at: this.d.clock.now().toISOString(),
        })
        .execute();
    };
    let answer = await agent.respond({ kind: 'heard', text: message.body }, context);
    const said = [answer.say?.trim()];
    // A custom tool the agent asks for runs before it answers, as on a call: its result (new
    // variables, or why it failed) is what the agent answers from next.
    for (let step = 0; answer.action?.type === 'tool' && step < MAX_TOOL_STEPS; step++) {
      const { name, input } = answer.action;
      const tool = findTool(request.tools, name);
      await note(toolCalledNote(tool?.name ?? name, input));
      const result: ToolResult = tool
        ? await this.d.runTool(conversation.account_id, tool, input, context.variables)
        : { ok: false, variables: {}, spokenResult: '', error: 'no such tool on this number' };
      await note(toolOutcomeNote(tool?.name ?? name, result));
      if (result.ok && Object.keys(result.variables).length > 0) {
        Object.assign(context.variables, result.variables);
        const kept = { ...fromJson<Record<string, unknown>>(conversation.variables, {}), ...result.variables };
        conversation.variables = JSON.stringify(kept);
        await db
          .updateTable('sms_conversations')
          .set({ variables: conversation.variables })
          .where('id', '=', conversation.id)
          .execute();
      }
      answer = await agent.respond(
        {
          kind: 'tool_result',
          name,
          ok: result.ok,
          result: result.variables,
          ...(result.error !== null && { error: result.error }),
        },
        context,
      );
      said.push(answer.say?.trim());
    }
    const text = said.filter((part) => part).join(' ');
    if (text) {
      const replyId = await this.d.send(conversation.account_id, {
        to: conversation.user_number,
        from: conversation.agent_number,
        body: text,
      });
      await this.tag(replyId, conversation.id);
      if (config.webhook) await this.notify(conversation, config.webhook, replyId);
    }
    // The agent ended the conversation: the next text opens a new one.
    if (answer.action?.type === 'finish') await this.setActive(conversation.account_id, conversation.id, false);
  }

  private async requestOf(conversation: Database['sms_conversations'], config: SmsConfig): Promise<CallRequest> {
    const errors: string[] = [];
    const settings = await normalizeCallSettings(
      {
        ...(config.objective && { task: config.objective }),
        ...(config.pathway_id && { pathway_id: config.pathway_id }),
        ...(config.pathway_version !== null &&
          /^\d+$/.test(config.pathway_version) && { pathway_version: Number(config.pathway_version) }),
        ...(config.temperature !== null && { temperature: config.temperature }),
        ...(config.tools.length > 0 && { tools: config.tools as CallSettings['tools'] }),
        request_data: {
          ...config.request_data,
          ...fromJson<Record<string, unknown>>(conversation.request_data, {}),
        },
      },
      this.d.tools(conversation.account_id),
      errors,
      { requirePhone: false, requireTask: false },
    );
    return { ...settings, phone_number: conversation.user_number, from: conversation.agent_number };
  }

  private async messages(conversationId: string): Promise<ConversationMessage[]> {
    const rows = await this.d.db
      .selectFrom('sms_messages')
      .selectAll()
      .where('conversation_id', '=', conversationId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map((r) => ({
      id: r.id,
      sender: r.direction === 'inbound' ? 'USER' : 'AGENT',
      message: r.body,
      created_at: r.created_at,
    }));
  }

  private async tag(messageId: string, conversationId: string): Promise<void> {
    await this.d.db
      .updateTable('sms_messages')
      .set({ conversation_id: conversationId })
      .where('id', '=', messageId)
      .execute();
  }

  /** The reply and the history, to the number's SMS webhook (signed and retried like every webhook). */
  private async notify(conversation: Database['sms_conversations'], url: string, replyId: string): Promise<void> {
    const messages = await this.messages(conversation.id);
    const payload = {
      event: 'sms.reply',
      conversation_id: conversation.id,
      agent_number: conversation.agent_number,
      user_number: conversation.user_number,
      message: messages.find((m) => m.id === replyId)?.message ?? '',
      messages,
    };
    await new WebhookStore(this.d.db, this.d.clock).createMessage({
      call_id: replyId,
      account_id: conversation.account_id,
      url,
      payload: JSON.stringify(payload),
    });
    await this.d.queue.enqueue('webhook', { call_id: replyId, attempt: 1, send_type: 'automatic' });
  }
}
