import type { Kysely, Transaction } from 'kysely';
import type { Clock } from '../clock.js';
import type { Database } from '../store/types.js';
import type { Dialect } from '../store/db.js';
import { CallStore, OPEN_STATES } from '../store/calls.js';
import type { JobQueue } from '../jobs/queue.js';
import type { CallRequest } from '../schemas/call-request.js';
import { fromJson } from '../store/json.js';
import { NUMBER_PENDING, NUMBER_SKIPPED } from '../store/campaigns.js';
import { nextCampaignState, type CampaignConfig, type StoredStep } from '../schemas/campaign.js';
import { calleeZone, nextOpening, windowOpen } from './window.js';

/** A number whose current attempt has a call placed: it stays here until that call has ended. */
export const NUMBER_DIALING = 'dialing';
/** A number whose sequence has finished (every step run, or a person answered with stop_when_answer). */
export const NUMBER_DONE = 'done';

/** What the dialer reads of a campaign (its pass over all of them, and each dispatch). */
const CAMPAIGN_COLUMNS = [
  'id',
  'account_id',
  'state',
  'request_data',
  'sequences',
  'config',
  'from_number',
  'next_dial_at',
  'updated_at',
] as const;
const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;
/** Clock time a tick may cover at most: ticks come every second of real time or every 5 clock seconds. */
const TICK_CLOCK_MS = 5_000;
/**
 * How late a pacing slot may be taken (clock ms, at least one tick): a dispatch that ran late
 * (a busy event loop) catches up on the slots it missed, so the rate over a minute holds; slots
 * older than this lapse rather than being placed as a burst.
 */
const CATCH_UP_MS = 10_000;
/** Shortest real wait between paced dispatches: at fast pacing each dispatch takes the few slots due. */
const MIN_PACE_REAL_MS = 15;
/** Every this many ticks, dial jobs lost in a crash (call stored, job not) are enqueued again. */
const REPAIR_EVERY = 20;
/** A queued campaign call older than this (clock) without having been dialed gets its job again. */
const REPAIR_AFTER_MS = 30_000;

export interface DialerLogger {
  error(object: object, message: string): void;
}

export interface DialerDeps {
  db: Kysely<Database>;
  dialect: Dialect;
  clock: Clock;
  queue: JobQueue;
  log?: DialerLogger;
}

/** How a finished attempt went, for the number's next move. */
export type Outcome = 'human' | 'retry';

/**
 * What an ended call means for its number. A person: answered_by `human`, or, when the campaign
 * did not enable answered_by (answered_by null), a call that was answered and completed (it had
 * a conversation, as call_ended_by shows): without detection a voicemail cannot be told from a
 * person, so an answered call counts as reached. Everything else (voicemail, unknown, no answer,
 * busy, unreachable, errors, a call stopped by hand) is retried per the sequence's retries.
 */
export function outcomeOf(call: { status: string; answered_by: string | null; call_ended_by: string | null }): Outcome {
  if (call.answered_by === 'human') return 'human';
  if (call.answered_by === null && call.status === 'completed' && call.call_ended_by !== null) return 'human';
  return 'retry';
}

interface CampaignRow {
  id: string;
  account_id: string;
  state: string;
  request_data: string;
  sequences: string;
  config: string;
  from_number: string | null;
  next_dial_at: string | null;
  updated_at: string;
}

/**
 * The campaign dialer: every worker process runs one. Each tick it settles the numbers whose call
 * ended, places new calls for active campaigns within their pacing and calling window, and
 * completes campaigns whose numbers are all finished.
 *
 * Crash safety: a number is claimed (pending -> dialing) by a conditional update in the same
 * transaction that stores its call and writes the call id on the number, so a number is dialed
 * at most once per attempt whichever processes race for it, and a crash leaves either nothing or
 * both. The dial job is enqueued after the commit under its idempotent id; a crash before that is
 * repaired by the engine's start-up recovery and by this loop's periodic re-enqueue.
 */
export class CampaignDialer {
  private timer: NodeJS.Timeout | undefined;
  private pacer: NodeJS.Timeout | undefined;
  /** Ticks and paced dispatches run one after another, never two at once in one process. */
  private chain: Promise<void> = Promise.resolve();
  /** Not ticking on its own (never started, or stopped); tick() may still be called (tests). */
  private stopped = true;
  /** stop() was called: a pass under way ends early. */
  private closing = false;
  private ticks = 0;
  /**
   * Campaigns with numbers waiting only on pacing, and the clock time (ms) of their next slot:
   * the pacer wakes then to place exactly the calls due, between the full ticks.
   */
  private readonly paced = new Map<string, number>();

  constructor(private readonly d: DialerDeps) {}

  /** Real milliseconds between ticks: about a second, less under a fast clock so pacing stays even. */
  get tickMs(): number {
    return Math.max(50, Math.min(1000, TICK_CLOCK_MS / this.d.clock.scale));
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.closing = false;
    this.schedule();
  }

  /** Runs `work` after whatever runs now; failures are logged, never thrown. */
  private run(work: () => Promise<void>, what: string): Promise<void> {
    this.chain = this.chain
      .then(work)
      .catch((error: unknown) => this.d.log?.error({ err: error }, `campaign dialer ${what} failed`));
    return this.chain;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.run(() => this.tick(), 'tick').finally(() => this.schedule());
    }, this.tickMs);
    this.timer.unref();
  }

  /**
   * Arms the pacer for the earliest slot of a paced campaign, so calls start on their slots
   * rather than in a batch at the next tick.
   */
  private armPacer(): void {
    clearTimeout(this.pacer);
    this.pacer = undefined;
    if (this.stopped || this.paced.size === 0) return;
    const earliest = Math.min(...this.paced.values());
    const wait = Math.max(MIN_PACE_REAL_MS, (earliest - this.d.clock.now().getTime()) / this.d.clock.scale);
    this.pacer = setTimeout(() => {
      this.pacer = undefined;
      void this.run(() => this.pace(), 'paced dispatch');
    }, wait);
    this.pacer.unref();
  }

  /** Places the calls of every paced campaign whose slot has come. */
  private async pace(): Promise<void> {
    const now = this.d.clock.now();
    for (const [id, at] of [...this.paced]) {
      if (this.closing) return;
      if (at <= now.getTime()) await this.dispatch(id, now);
    }
    this.armPacer();
  }

  /** Stops ticking and waits for a tick under way; calls already placed run on. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.closing = true;
    clearTimeout(this.timer);
    clearTimeout(this.pacer);
    await this.chain;
  }

  /** One pass over every campaign with work to do (exposed for tests). */
  async tick(): Promise<void> {
    const now = this.d.clock.now();
    const repair = this.ticks++ % REPAIR_EVERY === 0;
    const campaigns = await this.d.db
      .selectFrom('campaigns')
      .select(CAMPAIGN_COLUMNS)
      .where((eb) =>
        eb.or([
          eb('state', '=', 'active'),
          eb('id', 'in', eb.selectFrom('campaign_numbers').select('campaign_id').where('state', '=', NUMBER_DIALING)),
        ]),
      )
      .execute();
    for (const campaign of campaigns) {
      if (this.closing) return;
      await this.settle(campaign, now);
      if (campaign.state === 'active') {
        await this.dispatch(campaign.id, now);
        await this.complete(campaign, now);
      }
      if (repair) await this.repair(campaign.id, now);
    }
    // A campaign no longer active (paused, stopped, completed) is no longer paced.
    const active = new Set(campaigns.filter((c) => c.state === 'active').map((c) => c.id));
    for (const id of this.paced.keys()) if (!active.has(id)) this.paced.delete(id);
    this.armPacer();
  }

  /** Moves every number whose call has ended to its next attempt, next step, or the end. */
  private async settle(campaign: CampaignRow, now: Date): Promise<void> {
    const ended = await this.d.db
      .selectFrom('campaign_numbers as n')
      .innerJoin('calls as c', 'c.id', 'n.call_id')
      .select(['n.id', 'n.step', 'n.attempts', 'n.call_id', 'c.status', 'c.answered_by', 'c.call_ended_by'])
      .where('n.campaign_id', '=', campaign.id)
      .where('n.state', '=', NUMBER_DIALING)
      .where('c.queue_status', 'not in', OPEN_STATES)
      .execute();
    if (ended.length === 0) return;
    const config = fromJson<CampaignConfig>(campaign.config, {} as CampaignConfig);
    const steps = fromJson<StoredStep[]>(campaign.sequences, []);
    const at = now.toISOString();
    let furthest = 0;
    for (const n of ended) {
      const step = Number(n.step);
      const outcome = outcomeOf(n);
      let next: { state: string; step: number; attempts: number; next_at: string | null };
      const nextStep = (): typeof next => {
        const following = steps[step + 1];
        if (!following) return { state: NUMBER_DONE, step, attempts: Number(n.attempts), next_at: null };
        const after = now.getTime() + following.delay * 1000;
        const notBefore = following.start_time ? Date.parse(following.start_time) : 0;
        return {
          state: NUMBER_PENDING,
          step: step + 1,
          attempts: 0,
          next_at: new Date(Math.max(after, notBefore)).toISOString(),
        };
      };
      if (campaign.state === 'stopped') {
        // The stop endpoint skipped the pending numbers; a call that was under way ends the number.
        next = { state: NUMBER_SKIPPED, step, attempts: Number(n.attempts), next_at: null };
      } else if (outcome === 'human') {
        next = config.stop_when_answer
          ? { state: NUMBER_DONE, step, attempts: Number(n.attempts), next_at: null }
          : nextStep();
      } else if (Number(n.attempts) <= (config.retries ?? 0)) {
        next = {
          state: NUMBER_PENDING,
          step,
          attempts: Number(n.attempts),
          next_at: new Date(now.getTime() + (config.wait_period ?? 1) * DAY_MS).toISOString(),
        };
      } else {
        next = nextStep();
      }
      // Conditional on the call settled: another process settling the same number changes nothing.
      await this.d.db
        .updateTable('campaign_numbers')
        .set({ ...next, updated_at: at })
        .where('id', '=', n.id)
        .where('state', '=', NUMBER_DIALING)
        .where('call_id', '=', n.call_id)
        .execute();
      if (next.state === NUMBER_PENDING) furthest = Math.max(furthest, next.step);
    }
    if (furthest > 0) {
      await this.d.db
        .updateTable('campaigns')
        .set({ current_step: furthest })
        .where('id', '=', campaign.id)
        .where('current_step', '<', furthest)
        .execute();
    }
  }

  /**
   * Places the calls the campaign's pacing allows now. Everything happens in one transaction
   * holding the campaign's row (FOR UPDATE on PostgreSQL; SQLite has one writer), so processes
   * dialing the same campaign see each other's calls in their counts and share one slot pointer.
   * Records in `paced` when the campaign's next slot comes, if numbers are waiting for it.
   */
  private async dispatch(campaignId: string, now: Date): Promise<void> {
    const result = await this.d.db.transaction().execute(async (trx) => {
      let query = trx.selectFrom('campaigns').select(CAMPAIGN_COLUMNS).where('id', '=', campaignId);
      if (this.d.dialect === 'postgres') query = query.forUpdate();
      const campaign = await query.executeTakeFirst();
      // Paused, stopped or completed since the tick began: nothing new is placed.
      if (!campaign || campaign.state !== 'active') return { ids: [], next: undefined };
      const config = fromJson<CampaignConfig>(campaign.config, {} as CampaignConfig);
      const budget = await this.budget(trx, campaign, config, now);
      const steps = fromJson<StoredStep[]>(campaign.sequences, []);
      const at = now.toISOString();
      // One more than the budget: whether numbers are left waiting for the next slot.
      const due =
        budget.count <= 0 && budget.limit !== 'slots' && budget.limit !== 'minute'
          ? []
          : await trx
              .selectFrom('campaign_numbers')
              .select(['id', 'phone_number', 'request_data', 'metadata', 'step', 'attempts'])
              .where('campaign_id', '=', campaignId)
              .where('state', '=', NUMBER_PENDING)
              .where((eb) => eb.or([eb('next_at', 'is', null), eb('next_at', '<=', at)]))
              .orderBy('position')
              .limit(Math.max(0, budget.count) + 1)
              .execute();
      const calls = new CallStore(trx, this.d.clock);
      const shared = fromJson<Record<string, unknown>>(campaign.request_data, {});
      const ids: string[] = [];
      for (const number of due.slice(0, Math.max(0, budget.count))) {
        const step = steps[Number(number.step)];
        // The first step's start_time is only checked here (later steps set next_at when reached).
        const notBefore = step?.start_time ? Date.parse(step.start_time) : 0;
        let wait: Date | undefined = notBefore > now.getTime() ? new Date(notBefore) : undefined;
        const window = config.calling_window;
        if (!wait && window) {
          const zone = calleeZone(number.phone_number, window);
          if (!windowOpen(window, zone, now)) wait = nextOpening(window, zone, now);
        }
        if (!step || wait) {
          await trx
            .updateTable('campaign_numbers')
            .set(step ? { next_at: wait!.toISOString(), updated_at: at } : { state: NUMBER_SKIPPED, updated_at: at })
            .where('id', '=', number.id)
            .execute();
          continue;
        }
        const claimed = await trx
          .updateTable('campaign_numbers')
          .set({ state: NUMBER_DIALING, attempts: Number(number.attempts) + 1, updated_at: at })
          .where('id', '=', number.id)
          .where('state', '=', NUMBER_PENDING)
          .executeTakeFirst();
        if (Number(claimed.numUpdatedRows) === 0) continue;
        const call = await calls.create(campaign.account_id, {
          request: requestFor(shared, step, number, campaign.from_number),
          campaign_id: campaign.id,
        });
        await trx.updateTable('campaign_numbers').set({ call_id: call.id }).where('id', '=', number.id).execute();
        ids.push(call.id);
      }
      // Numbers still due that only pacing holds back: the pointer keeps their slots. Otherwise
      // (no work left, or max_concurrent reached) the slots up to now lapse: an idle campaign
      // saves up no burst for when numbers become due or calls end.
      const waiting = due.length > budget.count && (budget.limit === 'slots' || budget.limit === 'minute');
      const kept = budget.slotAfter(ids.length);
      const pointer = waiting ? kept : Math.max(kept, now.getTime());
      if (pointer !== budget.stored) {
        await trx
          .updateTable('campaigns')
          .set({ next_dial_at: new Date(pointer).toISOString() })
          .where('id', '=', campaignId)
          .execute();
      }
      // The rolling-minute cap frees a place when the oldest call of the minute leaves it.
      const next = !waiting ? undefined : budget.limit === 'minute' ? now.getTime() + budget.interval / 4 : pointer;
      return { ids, next };
    });
    if (result.next === undefined) this.paced.delete(campaignId);
    else this.paced.set(campaignId, result.next);
    for (const id of result.ids) await this.d.queue.enqueue('dial', { call_id: id });
  }

  /**
   * How many calls may start now, and what limits them: free places under max_concurrent
   * (numbers whose call has not been settled count as live, which errs on the safe side), calls
   * left in the rolling minute, and the slots of calls_per_minute, exactly 60/cpm s apart from
   * the campaign's slot pointer (next_dial_at): every slot up to now may be taken, those more
   * than CATCH_UP_MS old lapse.
   */
  private async budget(
    trx: Transaction<Database>,
    campaign: CampaignRow,
    config: CampaignConfig,
    now: Date,
  ): Promise<{
    count: number;
    limit: 'concurrency' | 'minute' | 'slots';
    interval: number;
    /** The stored pointer (ms), to write only a change. */
    stored: number;
    /** The slot after `n` calls placed now. */
    slotAfter(n: number): number;
  }> {
    const live = await trx
      .selectFrom('campaign_numbers')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('campaign_id', '=', campaign.id)
      .where('state', '=', NUMBER_DIALING)
      .executeTakeFirstOrThrow();
    const lastMinute = await trx
      .selectFrom('calls')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('campaign_id', '=', campaign.id)
      .where('created_at', '>', new Date(now.getTime() - MINUTE_MS).toISOString())
      // Calls stamped after now come from a clock that ran ahead (a scaled clock before a restart).
      .where('created_at', '<=', now.toISOString())
      .executeTakeFirstOrThrow();
    const perMinute = config.pacing.calls_per_minute;
    const interval = MINUTE_MS / perMinute;
    const catchUp = Math.max(CATCH_UP_MS, this.tickMs * this.d.clock.scale);
    const nowMs = now.getTime();
    const stored = campaign.next_dial_at ? Date.parse(campaign.next_dial_at) : -Infinity;
    // No call placed yet, or a pointer further ahead than one slot and a tick (set by a clock that
    // ran ahead): the first slot is now. A campaign resumed (updated_at) takes no slot from its pause.
    const pointer = stored === -Infinity || stored > nowMs + interval + catchUp ? nowMs : stored;
    const first = Math.max(pointer, nowMs - catchUp, Math.min(Date.parse(campaign.updated_at), nowMs));
    const slots = first > nowMs ? 0 : Math.floor((nowMs - first) / interval) + 1;
    const places = config.pacing.max_concurrent - Number(live.n);
    // A fractional rate (0.5 a minute) still allows one call within a minute; its slots space them.
    const minute = Math.max(1, Math.floor(perMinute)) - Number(lastMinute.n);
    const count = Math.min(places, minute, slots);
    const limit = count === places ? 'concurrency' : count === minute ? 'minute' : 'slots';
    return { count, limit, interval, stored, slotAfter: (n) => first + n * interval };
  }

  /** auto_mark_complete: an active campaign whose numbers are all done or skipped becomes completed. */
  private async complete(campaign: CampaignRow, now: Date): Promise<void> {
    const config = fromJson<CampaignConfig>(campaign.config, {} as CampaignConfig);
    if (config.auto_mark_complete === false) return;
    const open = await this.d.db
      .selectFrom('campaign_numbers')
      .select('id')
      .where('campaign_id', '=', campaign.id)
      .where('state', 'in', [NUMBER_PENDING, NUMBER_DIALING])
      .limit(1)
      .executeTakeFirst();
    const next = nextCampaignState('active', 'complete');
    if (open || !next) return;
    await this.d.db
      .updateTable('campaigns')
      .set({ state: next, updated_at: now.toISOString() })
      .where('id', '=', campaign.id)
      .where('state', '=', 'active')
      .execute();
  }

  /** Dial jobs lost between a commit and its enqueue (a crash) are enqueued again; ids make it harmless. */
  private async repair(campaignId: string, now: Date): Promise<void> {
    const stale = await this.d.db
      .selectFrom('campaign_numbers as n')
      .innerJoin('calls as c', 'c.id', 'n.call_id')
      .select('c.id')
      .where('n.campaign_id', '=', campaignId)
      .where('n.state', '=', NUMBER_DIALING)
      .where('c.queue_status', '=', 'queued')
      .where('c.created_at', '<', new Date(now.getTime() - REPAIR_AFTER_MS).toISOString())
      .execute();
    for (const { id } of stale) await this.d.queue.enqueue('dial', { call_id: id });
  }
}

/**
 * A campaign call's request: the campaign's shared settings, the step's task and pathway, and
 * the number's own request_data and metadata merged over the campaign's. The dialer decides
 * when the call starts, so it carries no start_time.
 */
export function requestFor(
  shared: Record<string, unknown>,
  step: StoredStep,
  number: { phone_number: string; request_data: string | null; metadata: string | null },
  from: string | null,
): CallRequest {
  const base = shared as unknown as CallRequest;
  const own = fromJson<Record<string, unknown> | null>(number.request_data, null);
  const ownMeta = fromJson<Record<string, unknown> | null>(number.metadata, null);
  const metadata = base.metadata || ownMeta ? { ...base.metadata, ...ownMeta } : null;
  return {
    ...base,
    phone_number: number.phone_number,
    task: step.task,
    pathway_id: step.pathway_id,
    start_time: null,
    from: base.from ?? from,
    request_data: { ...base.request_data, ...own },
    metadata,
  };
}
