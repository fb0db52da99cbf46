import type { CallEvent } from '../calls/events.js';
import type { Kysely, Selectable } from 'kysely';
import type { CallsTable, Database, TranscriptsTable } from './types.js';
import type { Clock } from '../clock.js';
import { newId } from '../security/secrets.js';
import { bool, fromJson, isTrue } from './json.js';
import { canTransition, type QueueStatus } from '../domain/call-state.js';
import type { CallRequest } from '../schemas/call-request.js';
import type { CallRecord } from '../schemas/call-record.js';

type CallRow = Selectable<CallsTable>;
export type TranscriptRow = Selectable<TranscriptsTable>;

/** Columns stored as JSON text or as 0/1 flags: the store parses them, nobody else. */
type StoredColumns =
  | 'request'
  | 'metadata'
  | 'variables'
  | 'analysis_schema'
  | 'analysis'
  | 'latency'
  | 'inbound'
  | 'completed'
  | 'record';

/**
 * A call as the rest of Openline sees it: every column typed, JSON parsed once here when read and
 * written back as JSON here when changed. The record (src/calls/record.ts), the engine, the
 * session and the carriers all take this one object.
 */
export type Call = Omit<CallRow, StoredColumns> & {
  /** The Send Call request the call was made with (validated when it was accepted). */
  request: CallRequest;
  metadata: Record<string, unknown> | null;
  /** The call's variables as the agent left them. */
  variables: Record<string, unknown> | null;
  analysis_schema: Record<string, unknown> | null;
  analysis: Record<string, unknown> | null;
  /** Per-turn latency of an audio call (src/media/latency.ts). */
  latency: CallRecord['latency'];
  inbound: boolean;
  completed: boolean;
  record: boolean;
};

/** What a writer may change on a call (never its id, account or creation time). */
export type CallChanges = Partial<Omit<Call, 'id' | 'account_id' | 'created_at'>>;

function toCall(row: CallRow): Call {
  return {
    ...row,
    request: fromJson<CallRequest>(row.request, {} as CallRequest),
    metadata: fromJson<Record<string, unknown> | null>(row.metadata, null),
    variables: fromJson<Record<string, unknown> | null>(row.variables, null),
    analysis_schema: fromJson<Record<string, unknown> | null>(row.analysis_schema, null),
    analysis: fromJson<Record<string, unknown> | null>(row.analysis, null),
    latency: fromJson<CallRecord['latency']>(row.latency, null),
    inbound: isTrue(row.inbound),
    completed: isTrue(row.completed),
    record: isTrue(row.record),
  };
}

const json = (value: unknown): string | null => (value === null || value === undefined ? null : JSON.stringify(value));

/** The columns a change writes. */
function toColumns(changes: CallChanges): Partial<CallRow> {
  const { request, metadata, variables, analysis_schema, analysis, latency, inbound, completed, record, ...plain } =
    changes;
  return {
    ...plain,
    ...(request !== undefined && { request: JSON.stringify(request) }),
    ...(metadata !== undefined && { metadata: json(metadata) }),
    ...(variables !== undefined && { variables: json(variables) }),
    ...(analysis_schema !== undefined && { analysis_schema: json(analysis_schema) }),
    ...(analysis !== undefined && { analysis: json(analysis) }),
    ...(latency !== undefined && { latency: json(latency) }),
    ...(inbound !== undefined && { inbound: bool(inbound) }),
    ...(completed !== undefined && { completed: bool(completed) }),
    ...(record !== undefined && { record: bool(record) }),
  };
}

/** States in which a call has not ended yet. */
export const OPEN_STATES = ['new', 'queued', 'allocated', 'started'] as const;

/** Which calls a list counts: the conditions of a CallFilter. */
export interface CallMatch {
  to_number?: string;
  from_number?: string;
  batch_id?: string;
  campaign_id?: string;
  answered_by?: string;
  queue_status?: QueueStatus;
  /** Created after this time (exclusive). */
  created_after?: string;
  /** Created before this time (exclusive). */
  created_before?: string;
  inbound?: boolean;
  completed?: boolean;
  pathway_id?: string;
  /** call_length (minutes) above this (exclusive); calls without a length do not match. */
  longer_than?: number;
  /** call_length (minutes) below this (exclusive); calls without a length do not match. */
  shorter_than?: number;
}

export interface CallFilter extends CallMatch {
  ascending?: boolean;
  limit: number;
  /** Calls to skip first (the hosted API's `from`). */
  offset?: number;
  /** Position after which to continue: created_at and id of the last call of the previous page. */
  after?: { created_at: string; id: string };
}

export interface NewCall {
  request: CallRequest;
  batch_id?: string | null;
  campaign_id?: string | null;
  credential_id?: string | null;
  carrier?: string;
  /** The carrier's own id of the call (Twilio's CallSid, SIP's Call-ID), when it is known at once. */
  carrier_call_id?: string | null;
  /** Inbound: the call came from request.phone_number to this number of ours. */
  inbound?: boolean;
  ourNumber?: string;
  /** Inbound with no caller number (a web call): the record's `from` is null. */
  noCaller?: boolean;
  retry_of?: string | null;
}

/** A call-state change the lifecycle does not allow: a bug in the caller, never written. */
export class IllegalTransition extends Error {
  constructor(callId: string, from: readonly QueueStatus[], to: QueueStatus) {
    super(`illegal call state change ${from.join('|')} -> ${to} (call ${callId})`);
    this.name = 'IllegalTransition';
  }
}

/** Calls and their transcripts. */
export class CallStore {
  /**
   * Clients poll call details while a call runs. When this process is the database's only writer
   * (SQLite), a call and its transcript are kept in memory between changes; every write below
   * drops the call's entry. With PostgreSQL other processes write too, so nothing is kept.
   */
  private readonly cache: Map<string, { row: Call; transcripts: TranscriptRow[] | undefined }> | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    options: { soleWriter?: boolean } = {},
  ) {
    this.cache = options.soleWriter ? new Map() : undefined;
  }

  /** Counts writes, so that a read that overlapped one does not cache what it read. */
  private writes = 0;

  private forget(id: string): void {
    this.writes++;
    this.cache?.delete(id);
  }

  private remember(row: CallRow, seen: number): Call {
    const call = toCall(row);
    if (!this.cache || seen !== this.writes) return call;
    if (this.cache.size >= 5000) this.cache.clear();
    this.cache.set(row.id, { row: call, transcripts: this.cache.get(row.id)?.transcripts });
    return call;
  }

  /** Stores an accepted call as queued (the seed's `new` lasts only for the request itself). */
  async create(accountId: string, call: NewCall): Promise<Call> {
    const now = this.clock.now().toISOString();
    const { request } = call;
    const row: CallRow = {
      id: newId(),
      account_id: accountId,
      created_at: now,
      updated_at: now,
      to_number: call.inbound ? (call.ourNumber ?? request.phone_number) : request.phone_number,
      from_number: call.inbound ? (call.noCaller ? null : request.phone_number) : request.from,
      batch_id: call.batch_id ?? null,
      campaign_id: call.campaign_id ?? null,
      inbound: bool(call.inbound),
      queue_status: 'queued',
      status: 'queued',
      completed: 0,
      answered_by: null,
      scheduled_at: request.start_time && request.start_time > now ? request.start_time : null,
      started_at: null,
      end_at: null,
      ended_at: null,
      error_message: null,
      call_length: null,
      corrected_duration: null,
      price: null,
      call_ended_by: null,
      transferred_to: null,
      max_duration: request.max_duration,
      record: bool(request.record),
      recording_path: null,
      latency: null,
      summary: null,
      request: JSON.stringify(request),
      metadata: request.metadata === null ? null : JSON.stringify(request.metadata),
      variables: null,
      analysis_schema: request.analysis_schema === null ? null : JSON.stringify(request.analysis_schema),
      analysis: null,
      pathway_logs: null,
      concatenated_transcript: null,
      credential_id: call.credential_id ?? null,
      carrier: call.carrier ?? 'sandbox',
      carrier_call_id: call.carrier_call_id ?? null,
      retry_of: call.retry_of ?? null,
      pathway_id: request.pathway_id ?? null,
      stop_requested_at: null,
      lease_until: null,
      trace_id: null,
    };
    await this.db.insertInto('calls').values(row).execute();
    return toCall(row);
  }

  async get(accountId: string, id: string): Promise<Call | undefined> {
    const cached = this.cache?.get(id)?.row;
    if (cached) return cached.account_id === accountId ? cached : undefined;
    const seen = this.writes;
    const row = await this.db
      .selectFrom('calls')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && this.remember(row, seen);
  }

  /** Any account's call: for the engine, which acts on behalf of the call's owner. */
  async byId(id: string): Promise<Call | undefined> {
    const row = await this.db.selectFrom('calls').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toCall(row);
  }

  /** Of these live calls, the ones whose stop was requested. */
  async stopRequested(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom('calls')
      .select('id')
      .where('id', 'in', ids)
      .where('stop_requested_at', 'is not', null)
      .execute();
    return rows.map((r) => r.id);
  }

  /** Renews the lease of the live calls this process runs. */
  async renewLeases(ids: string[], until: string): Promise<void> {
    if (ids.length === 0) return;
    for (const id of ids) this.forget(id);
    await this.db.updateTable('calls').set({ lease_until: until }).where('id', 'in', ids).execute();
  }

  /**
   * Live calls whose process is gone: their lease ran out before `now` (or, with `all`, every
   * live call: on SQLite the only process that could run them is the one starting up).
   */
  async orphaned(now: string, all: boolean): Promise<string[]> {
    let query = this.db.selectFrom('calls').select('id').where('queue_status', 'in', ['allocated', 'started']);
    if (!all) query = query.where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]));
    return (await query.execute()).map((r) => r.id);
  }

  /** The id of the call placed as this call's retry after voicemail, if there is one. */
  async retryOf(callId: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('calls').select('id').where('retry_of', '=', callId).executeTakeFirst();
    return row?.id;
  }

  /** Queued calls, for re-enqueueing their dial jobs after a crash. */
  async queuedIds(): Promise<string[]> {
    const rows = await this.db.selectFrom('calls').select('id').where('queue_status', '=', 'queued').execute();
    return rows.map((r) => r.id);
  }

  async transcripts(callId: string): Promise<TranscriptRow[]> {
    const entry = this.cache?.get(callId);
    if (entry?.transcripts) return entry.transcripts;
    const seen = this.writes;
    const rows = await this.db
      .selectFrom('transcripts')
      .selectAll()
      .where('call_id', '=', callId)
      .orderBy('id')
      .execute();
    if (entry && seen === this.writes && this.cache?.get(callId) === entry) entry.transcripts = rows;
    return rows;
  }

  /** The account's calls that match the filter's conditions (not its position, order or limit). */
  private matching(accountId: string, filter: CallMatch) {
    let query = this.db.selectFrom('calls').where('account_id', '=', accountId);
    if (filter.to_number) query = query.where('to_number', '=', filter.to_number);
    if (filter.from_number) query = query.where('from_number', '=', filter.from_number);
    if (filter.batch_id) query = query.where('batch_id', '=', filter.batch_id);
    if (filter.campaign_id) query = query.where('campaign_id', '=', filter.campaign_id);
    if (filter.answered_by) query = query.where('answered_by', '=', filter.answered_by);
    if (filter.queue_status) query = query.where('queue_status', '=', filter.queue_status);
    if (filter.created_after) query = query.where('created_at', '>', filter.created_after);
    if (filter.created_before) query = query.where('created_at', '<', filter.created_before);
    if (filter.inbound !== undefined) query = query.where('inbound', '=', bool(filter.inbound));
    if (filter.completed !== undefined) query = query.where('completed', '=', bool(filter.completed));
    if (filter.pathway_id) query = query.where('pathway_id', '=', filter.pathway_id);
    if (filter.longer_than !== undefined) query = query.where('call_length', '>', filter.longer_than);
    if (filter.shorter_than !== undefined) query = query.where('call_length', '<', filter.shorter_than);
    return query;
  }

  /** When the account last placed a call from each number it has called from (GET /v1/outbound). */
  async lastPlacedFrom(accountId: string): Promise<Map<string, string>> {
    const rows = await this.db
      .selectFrom('calls')
      .select((eb) => ['from_number', eb.fn.max('created_at').as('last')])
      .where('account_id', '=', accountId)
      .where('inbound', '=', bool(false))
      .where('from_number', 'is not', null)
      .groupBy('from_number')
      .execute();
    return new Map(rows.map((r) => [String(r.from_number), String(r.last)]));
  }

  /**
   * How many of the account's calls match the filter's conditions, over all pages (GET /v1/calls'
   * total_count); with none, all the calls it has made and received (GET /v1/me's total_calls).
   */
  async count(accountId: string, filter: CallMatch = {}): Promise<number> {
    const row = await this.matching(accountId, filter)
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async list(accountId: string, filter: CallFilter): Promise<Call[]> {
    const direction = filter.ascending ? 'asc' : 'desc';
    let query = this.matching(accountId, filter).selectAll();
    const after = filter.after;
    if (after) {
      const op = filter.ascending ? '>' : '<';
      query = query.where((eb) =>
        eb.or([
          eb('created_at', op, after.created_at),
          eb.and([eb('created_at', '=', after.created_at), eb('id', op, after.id)]),
        ]),
      );
    }
    query = query.orderBy('created_at', direction).orderBy('id', direction).limit(filter.limit);
    return (await (filter.offset ? query.offset(filter.offset) : query).execute()).map(toCall);
  }

  /** Calls of the account that have not ended (queued, scheduled, allocated or live). */
  async listOpen(accountId: string): Promise<Call[]> {
    const rows = await this.db
      .selectFrom('calls')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('queue_status', 'in', [...OPEN_STATES])
      .execute();
    return rows.map(toCall);
  }

  /**
   * Changes a call only while it is in one of `from` states: the guard that keeps concurrent
   * writers (API stop, dialer, carrier events) from undoing each other. True when it applied.
   */
  /**
   * queued -> the given state when the account has fewer than `limit` calls allocated or started:
   * one statement, so that a call never takes a place another took meanwhile in this process.
   */
  async allocateWithinLimit(id: string, accountId: string, limit: number, changes: CallChanges): Promise<boolean> {
    this.forget(id);
    const result = await this.db
      .updateTable('calls')
      .set({ ...toColumns(changes), updated_at: this.clock.now().toISOString() })
      .where('id', '=', id)
      .where('queue_status', '=', 'queued')
      .where(
        (eb) =>
          eb
            .selectFrom('calls as live')
            .select((e) => e.fn.countAll<number>().as('n'))
            .where('live.account_id', '=', accountId)
            .where('live.queue_status', 'in', ['allocated', 'started']),
        '<',
        limit,
      )
      .executeTakeFirst();
    this.forget(id);
    return Number(result.numUpdatedRows) > 0;
  }

  /**
   * The one writer of call state: moves a call that is in one of `from` and applies `changes`. A
   * change of `queue_status` must be a step of the lifecycle (src/domain/call-state.ts) from every
   * state in `from`; anything else is a bug, refused with IllegalTransition before any write.
   * Without a `queue_status` the update is guarded by the state only (e.g. a stop request).
   */
  async transition(id: string, from: readonly QueueStatus[], changes: CallChanges): Promise<boolean> {
    const to = changes.queue_status;
    if (to !== undefined) {
      const illegal = from.filter((state) => state !== to && !canTransition(state, to));
      if (illegal.length > 0) throw new IllegalTransition(id, illegal, to);
    }
    this.forget(id);
    const result = await this.db
      .updateTable('calls')
      .set({ ...toColumns(changes), updated_at: this.clock.now().toISOString() })
      .where('id', '=', id)
      .where('queue_status', 'in', [...from])
      .executeTakeFirst();
    // Dropped after the write too: a read between the two may have cached the old row.
    this.forget(id);
    return Number(result.numUpdatedRows) > 0;
  }

  /**
   * Stores what post-call work produced for an ended call. Not a transition: the call's state is
   * final already and this must not change it; it only fills summary and analysis.
   */
  async setPostCall(id: string, results: Pick<Call, 'summary' | 'analysis'>): Promise<void> {
    this.forget(id);
    await this.db
      .updateTable('calls')
      .set({ ...toColumns(results), updated_at: this.clock.now().toISOString() })
      .where('id', '=', id)
      .execute();
    this.forget(id);
  }

  /** Stores a pathway call's step log (a JSON array, seed `pathway_logs`); written after each turn. */
  async setPathwayLogs(id: string, logs: string): Promise<void> {
    this.forget(id);
    await this.db
      .updateTable('calls')
      .set({ pathway_logs: logs, updated_at: this.clock.now().toISOString() })
      .where('id', '=', id)
      .execute();
    this.forget(id);
  }

  /** Stores one event of a call (its event list). */
  async addEvent(event: CallEvent): Promise<void> {
    await this.db
      .insertInto('call_events')
      .values({
        call_id: event.call_id,
        category: event.category,
        log_level: event.log_level,
        message: event.message,
        at: event.at,
      })
      .execute();
  }

  /** A call's stored events, oldest first. */
  /** The call's stored events, oldest first; `afterId`: only those stored after that one. */
  async events(callId: string, afterId = 0): Promise<Array<CallEvent & { id: number }>> {
    const rows = await this.db
      .selectFrom('call_events')
      .selectAll()
      .where('call_id', '=', callId)
      .where('id', '>', afterId)
      .orderBy('id')
      .execute();
    return rows.map((row) => ({
      id: Number(row.id),
      call_id: row.call_id,
      category: row.category as CallEvent['category'],
      log_level: row.log_level,
      message: row.message,
      at: row.at,
    }));
  }

  async addTranscript(
    callId: string,
    entry: { text: string; user: string; status?: string | null; transcript_id?: string | null },
  ): Promise<void> {
    this.forget(callId);
    await this.db
      .insertInto('transcripts')
      .values({
        call_id: callId,
        created_at: this.clock.now().toISOString(),
        text: entry.text,
        user: entry.user,
        status: entry.status ?? null,
        transcript_id: entry.transcript_id ?? newId(),
      })
      .execute();
    this.forget(callId);
  }
}
