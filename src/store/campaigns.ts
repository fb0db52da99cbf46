import { slicer } from '../slices.js';
import { randomUUID } from 'node:crypto';
import type { ExpressionBuilder, Kysely } from 'kysely';
import type { Database } from './types.js';
import type { Clock } from '../clock.js';
import { fromJson, toJson } from './json.js';
import {
  nextCampaignState,
  type CampaignAction,
  type CampaignConfig,
  type CampaignDetail,
  type CampaignState,
  type CampaignSummary,
  type StoredStep,
} from '../schemas/campaign.js';

/**
 * campaign_numbers.state: `pending` until the dialer takes the number (the dialer adds its own
 * states); `skipped` once the campaign is stopped before the number was dialled.
 */
export const NUMBER_PENDING = 'pending';
export const NUMBER_SKIPPED = 'skipped';

export interface CampaignNumberInput {
  phone_number: string;
  request_data: Record<string, unknown> | null;
  metadata: Record<string, unknown> | null;
}

export interface NewCampaign {
  name: string;
  /** Normalized call settings (CallRequest without phone_number, task, pathway_id, start_time). */
  request_data: Record<string, unknown>;
  sequences: StoredStep[];
  config: CampaignConfig;
  from_number: string | null;
  numbers: CampaignNumberInput[];
}

export type TransitionResult =
  | { ok: true; state: CampaignState }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'state'; state: string };

type Counters = Omit<CampaignSummary, 'campaign_id' | 'campaign_name' | 'campaign_state' | 'created_at' | 'count'>;

const ZERO: Counters = {
  human_ended: 0,
  assistant_ended: 0,
  human_answered: 0,
  voicemail_answered: 0,
  unknown_answered: 0,
  transferred_count: 0,
};

// 500 rows x 12 columns stays far below the bound-parameter limits of SQLite (32766) and
// PostgreSQL (65535) while keeping the number of round trips small.
const INSERT_CHUNK = 500;

type CampaignRow = Database['campaigns'];

/** A campaign's numbers by state and calls by outcome (GET /v1/campaigns/{id}/progress). */
export interface CampaignProgress {
  campaign_id: string;
  campaign_state: string;
  numbers: {
    total: number;
    pending: number;
    dialing: number;
    done: number;
    skipped: number;
    finished: number;
    /** Numbers called at least once (a stopped campaign's skipped numbers may have been). */
    called: number;
    /** Pending numbers that wait for a retry at a later time (next_retry_at: the first of them). */
    waiting_retry: number;
    next_retry_at: string | null;
  };
  calls: {
    placed: number;
    live: number;
    completed: number;
    failed: number;
    answered: number;
    voicemail: number;
    unknown: number;
    no_answer: number;
  };
}

/**
 * How many of the calls a person answered, as the dialer reads it (outcomeOf): answered_by human,
 * or, without detection, a call that connected (someone ended it) and completed. The campaign
 * list's `human_answered` and its progress's `answered` both count this.
 */
function countAnsweredByPerson(eb: ExpressionBuilder<Database, 'calls'>) {
  return eb.fn.count(
    eb
      .case()
      .when(
        eb.or([
          eb('answered_by', '=', 'human'),
          eb.and([
            eb('answered_by', 'is', null),
            eb('queue_status', 'in', ['complete', 'complete_error']),
            eb('call_ended_by', 'is not', null),
          ]),
        ]),
      )
      .then(1)
      .end(),
  );
}

/** Campaigns (seed 2.7, CONTRACT.md section 9) and their numbers. */
export class CampaignStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  /** Stores the campaign and all its numbers in one transaction; returns the campaign id. */
  async create(accountId: string, campaign: NewCampaign): Promise<string> {
    const now = this.clock.now().toISOString();
    const id = randomUUID();
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('campaigns')
        .values({
          id,
          account_id: accountId,
          created_at: now,
          updated_at: now,
          name: campaign.name,
          state: 'active',
          request_data: toJson(campaign.request_data),
          sequences: toJson(campaign.sequences),
          config: toJson(campaign.config),
          from_number: campaign.from_number,
          current_step: 0,
          number_count: campaign.numbers.length,
        })
        .execute();
      const slice = slicer();
      for (let start = 0; start < campaign.numbers.length; start += INSERT_CHUNK) {
        // 100,000 numbers take about half a second to insert: other requests run in between.
        await slice();
        const rows = campaign.numbers.slice(start, start + INSERT_CHUNK).map((n, i) => ({
          id: randomUUID(),
          campaign_id: id,
          position: start + i,
          phone_number: n.phone_number,
          request_data: n.request_data ? toJson(n.request_data) : null,
          metadata: n.metadata ? toJson(n.metadata) : null,
          state: NUMBER_PENDING,
          step: 0,
          attempts: 0,
          next_at: null,
          updated_at: now,
        }));
        await trx.insertInto('campaign_numbers').values(rows).execute();
      }
    });
    return id;
  }

  /**
   * Counters per campaign from the calls placed for it, in one aggregate query (CONTRACT.md
   * section 9): ended by USER / ASSISTANT, answered_by, transferred.
   */
  private async counters(accountId: string, campaignId?: string): Promise<Map<string, Counters>> {
    const countWhen = (
      eb: ExpressionBuilder<Database, 'calls'>,
      column: 'call_ended_by' | 'answered_by',
      value: string,
    ) => eb.fn.count(eb.case().when(column, '=', value).then(1).end());
    let query = this.db
      .selectFrom('calls')
      .where('account_id', '=', accountId)
      .where('campaign_id', 'is not', null)
      .groupBy('campaign_id')
      .select((eb) => [
        'campaign_id',
        countWhen(eb, 'call_ended_by', 'USER').as('human_ended'),
        countWhen(eb, 'call_ended_by', 'ASSISTANT').as('assistant_ended'),
        countAnsweredByPerson(eb).as('human_answered'),
        countWhen(eb, 'answered_by', 'voicemail').as('voicemail_answered'),
        countWhen(eb, 'answered_by', 'unknown').as('unknown_answered'),
        eb.fn.count(eb.case().when('transferred_to', 'is not', null).then(1).end()).as('transferred_count'),
      ]);
    if (campaignId !== undefined) query = query.where('campaign_id', '=', campaignId);
    const rows = await query.execute();
    // PostgreSQL returns count() as a bigint string.
    return new Map(
      rows.map((r) => [
        String(r.campaign_id),
        {
          human_ended: Number(r.human_ended),
          assistant_ended: Number(r.assistant_ended),
          human_answered: Number(r.human_answered),
          voicemail_answered: Number(r.voicemail_answered),
          unknown_answered: Number(r.unknown_answered),
          transferred_count: Number(r.transferred_count),
        },
      ]),
    );
  }

  async list(accountId: string): Promise<CampaignSummary[]> {
    const [rows, counters] = await Promise.all([
      this.db
        .selectFrom('campaigns')
        .select(['id', 'name', 'state', 'created_at', 'number_count'])
        .where('account_id', '=', accountId)
        .orderBy('created_at')
        .orderBy('id')
        .execute(),
      this.counters(accountId),
    ]);
    return rows.map((row) => ({
      campaign_id: row.id,
      campaign_name: row.name,
      campaign_state: row.state,
      created_at: row.created_at,
      count: Number(row.number_count),
      ...(counters.get(row.id) ?? ZERO),
    }));
  }

  async get(accountId: string, id: string): Promise<CampaignDetail | undefined> {
    const row = await this.row(accountId, id);
    if (!row) return undefined;
    const counters = (await this.counters(accountId, id)).get(id) ?? ZERO;
    const sequences = fromJson<StoredStep[]>(row.sequences, []);
    return {
      id: row.id,
      campaign_id: row.id,
      campaign_name: row.name,
      created_at: row.created_at,
      updated_at: row.updated_at,
      request_data: fromJson<Record<string, unknown>>(row.request_data, {}),
      sequences,
      campaign_config: fromJson<CampaignConfig>(row.config, {} as CampaignConfig),
      campaign_state: row.state,
      phone_number: row.from_number,
      curr_seq: sequences[Number(row.current_step)]?.seqId ?? null,
      count: Number(row.number_count),
      ...counters,
    };
  }

  private row(accountId: string, id: string): Promise<CampaignRow | undefined> {
    return this.db
      .selectFrom('campaigns')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  /**
   * Applies an action of CAMPAIGN_TRANSITIONS. The update is conditional on the state read, so a
   * concurrent change (another API call, the dialer completing the campaign) is reported, not
   * overwritten. Stopping also skips every number still pending.
   */
  async transition(accountId: string, id: string, action: CampaignAction): Promise<TransitionResult> {
    return this.db.transaction().execute(async (trx): Promise<TransitionResult> => {
      const current = await trx
        .selectFrom('campaigns')
        .select('state')
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .executeTakeFirst();
      if (!current) return { ok: false, reason: 'not_found' };
      const next = nextCampaignState(current.state, action);
      if (!next) return { ok: false, reason: 'state', state: current.state };
      const now = this.clock.now().toISOString();
      const result = await trx
        .updateTable('campaigns')
        .set({ state: next, updated_at: now })
        .where('id', '=', id)
        .where('state', '=', current.state)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) {
        const again = await trx.selectFrom('campaigns').select('state').where('id', '=', id).executeTakeFirst();
        return again ? { ok: false, reason: 'state', state: again.state } : { ok: false, reason: 'not_found' };
      }
      if (action === 'stop') {
        await trx
          .updateTable('campaign_numbers')
          .set({ state: NUMBER_SKIPPED, updated_at: now })
          .where('campaign_id', '=', id)
          .where('state', '=', NUMBER_PENDING)
          .execute();
      }
      return { ok: true, state: next };
    });
  }

  /**
   * Where the campaign stands (GET /v1/campaigns/{id}/progress, `openline campaign watch`): its
   * numbers by state and its calls by outcome; undefined when the account has no such campaign.
   */
  async progress(accountId: string, id: string): Promise<CampaignProgress | undefined> {
    const row = await this.row(accountId, id);
    if (!row) return undefined;
    const states = await this.numberStates(accountId, id);
    const countWhen = (
      eb: ExpressionBuilder<Database, 'calls'>,
      column: 'queue_status' | 'answered_by',
      values: string[],
    ) => eb.fn.count(eb.case().when(column, 'in', values).then(1).end());
    const calls = await this.db
      .selectFrom('calls')
      .where('campaign_id', '=', id)
      .where('account_id', '=', accountId)
      .select((eb) => [
        eb.fn.countAll().as('placed'),
        countWhen(eb, 'queue_status', ['new', 'queued', 'allocated', 'started']).as('live'),
        countWhen(eb, 'queue_status', ['complete', 'complete_error']).as('completed'),
        countWhen(eb, 'queue_status', ['pre_queue_error', 'queue_error', 'call_error']).as('failed'),
        countAnsweredByPerson(eb).as('answered'),
        countWhen(eb, 'answered_by', ['voicemail']).as('voicemail'),
        countWhen(eb, 'answered_by', ['unknown']).as('unknown'),
        countWhen(eb, 'answered_by', ['no-answer']).as('no_answer'),
      ])
      .executeTakeFirstOrThrow();
    const now = this.clock.now().toISOString();
    const tally = await this.db
      .selectFrom('campaign_numbers')
      .where('campaign_id', '=', id)
      .select((eb) => [
        eb.fn.count(eb.case().when('attempts', '>', 0).then(1).end()).as('called'),
        eb.fn
          .count(
            eb
              .case()
              .when(eb.and([eb('state', '=', NUMBER_PENDING), eb('attempts', '>', 0), eb('next_at', '>', now)]))
              .then(1)
              .end(),
          )
          .as('waiting'),
        eb.fn
          .min(
            eb
              .case()
              .when(eb.and([eb('state', '=', NUMBER_PENDING), eb('attempts', '>', 0), eb('next_at', '>', now)]))
              .then(eb.ref('next_at'))
              .end(),
          )
          .as('next_retry_at'),
      ])
      .executeTakeFirstOrThrow();
    const numbers = {
      total: Number(row.number_count),
      pending: states[NUMBER_PENDING] ?? 0,
      dialing: states.dialing ?? 0,
      done: states.done ?? 0,
      skipped: states[NUMBER_SKIPPED] ?? 0,
    };
    return {
      campaign_id: row.id,
      campaign_state: row.state,
      numbers: {
        ...numbers,
        finished: numbers.done + numbers.skipped,
        called: Number(tally.called),
        waiting_retry: Number(tally.waiting),
        next_retry_at: (tally.next_retry_at as string | null) ?? null,
      },
      calls: {
        placed: Number(calls.placed),
        live: Number(calls.live),
        completed: Number(calls.completed),
        failed: Number(calls.failed),
        answered: Number(calls.answered),
        voicemail: Number(calls.voicemail),
        unknown: Number(calls.unknown),
        no_answer: Number(calls.no_answer),
      },
    };
  }

  /** How many of the campaign's numbers are in each state (for tests and the dialer). */
  async numberStates(accountId: string, campaignId: string): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('campaign_numbers')
      .select((eb) => ['state', eb.fn.countAll().as('n')])
      .where('campaign_id', '=', campaignId)
      .where('campaign_id', 'in', (eb) => eb.selectFrom('campaigns').select('id').where('account_id', '=', accountId))
      .groupBy('state')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
  }
}
