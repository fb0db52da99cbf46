import type { Clock } from '../clock.js';
import type { Carrier, CallLeg, DialRequest } from '../carriers/types.js';
import type { Agent } from '../agent/types.js';
import type { CallRequest } from '../schemas/call-request.js';
import { systemVariables } from '../domain/template.js';
import type { Call, CallStore } from '../store/calls.js';
import type { JobQueue } from '../jobs/queue.js';
import { CallSession, type SessionOutcome } from './session.js';
import type { OutboundClient } from '../outbound/http.js';
import { runTool } from '../agent/tools.js';
import { DynamicData } from '../agent/dynamic-data.js';
import { audioLegOf, type AudioLeg } from '../media/audio-leg.js';
import { latencyMessage, type TurnLatency } from '../media/latency.js';
import { currentTraceId, inSpan } from '../observability/tracing.js';
import type { KnowledgeLookup } from '../knowledge/library.js';
import type { SecretScope } from '../vault/resolver.js';

export interface EngineLogger {
  info(object: object, message: string): void;
  error(object: object, message: string): void;
}

export interface EngineDeps {
  calls: CallStore;
  queue: JobQueue;
  clock: Clock;
  carrier: Carrier;
  /** The agent for a call (offline model, LLM, pathway runner). */
  agentFor(request: CallRequest): Agent;
  /** The variables of a tool's or dynamic_data item's request: the call's, plus the secrets it names. */
  secretScope?: SecretScope;
  /** The lookup over knowledge bases a call names (src/knowledge/library.ts); without it calls know none. */
  knowledgeFor?(
    accountId: string,
    ids: readonly string[],
    call: { callId: string; personaId: string | null },
  ): Promise<KnowledgeLookup | undefined>;
  pricePerMinute: number;
  log?: EngineLogger & { warn(object: object, message: string): void };
  /** The guarded client for custom tools and dynamic_data (CONTRACT.md section 8); without it they fail. */
  http?: OutboundClient;
  /** A streamed event of seed 6.2 (queue, call); fire-and-forget, never delays the call. */
  onEvent?(callId: string, category: 'queue' | 'call' | 'tool' | 'dynamic_data' | 'latency', message: string): void;
  /** A transcript line of a live call, once stored (live views: web calls, dashboards). */
  onTranscript?(callId: string, user: 'user' | 'assistant' | 'robot', text: string): void;
  /** A live call's audio, for live listening; returns what to call when the call ends. */
  onAudioCall?(callId: string, leg: AudioLeg): () => void;
  /** The account's limit of calls at once (0: none): calls beyond it wait queued. */
  concurrencyLimit?(accountId: string): Promise<number>;
  /** Every answered turn's latency of an audio call (the metrics' histograms). */
  onTurnLatency?(entry: TurnLatency): void;
}

/** How long a call at its account's concurrent-call limit waits before it tries again (clock ms). */
const CONCURRENCY_WAIT_MS = 2000;

/** How long a call may ring before it counts as unanswered. */
export const RING_TIMEOUT_MS = 45_000;
/** How often a process checks whether another one asked it to stop one of its live calls. */
const STOP_POLL_MS = 1000;
/** A live call's lease (clock ms): renewed every third of it while the call runs. */
const LEASE_MS = 60_000;
/** Why a call that would pass its account's concurrent-call limit did not start. */
export const AT_LIMIT = "The account's limit of concurrent calls was reached";
const ORPHANED = 'The call was interrupted because the server running it stopped';

/**
 * Runs calls: the `dial` job's handler. Dials through the carrier, runs the CallSession, and
 * writes every state change of seed 3.1 to the call's record. The job is idempotent: replayed
 * after a crash, it finds the call allocated or started and ends it as call_error instead of
 * dialing again.
 */
export class CallEngine {
  private readonly live = new Map<string, AbortController>();
  /** Calls admit() allocated that answer() has not run yet. */
  private readonly admitted = new Set<string>();
  private stopPoll: NodeJS.Timeout | undefined;

  constructor(private readonly d: EngineDeps) {}

  /** Live calls in this process. */
  get activeCount(): number {
    return this.live.size;
  }

  /** The ids of the live calls in this process. */
  liveIds(): string[] {
    return [...this.live.keys()];
  }

  start(): void {
    this.stopPoll = setInterval(() => void this.pollStops(), STOP_POLL_MS);
    this.stopPoll.unref();
    this.leaseTimer = setInterval(() => void this.tendLeases(), Math.max(200, LEASE_MS / 3 / this.d.clock.scale));
    this.leaseTimer.unref();
  }

  private leaseTimer: NodeJS.Timeout | undefined;

  /**
   * After a crash: calls that were live end as call_error (on SQLite all of them, as this is the
   * only process; on PostgreSQL those whose lease ran out), and every queued call gets its dial
   * job back (a crash between storing a call and enqueueing it).
   */
  async recover(options: { soleProcess: boolean }): Promise<void> {
    await this.closeOrphans(options.soleProcess);
    for (const id of await this.d.calls.queuedIds()) await this.d.queue.enqueue('dial', { call_id: id });
  }

  private async closeOrphans(all: boolean): Promise<void> {
    for (const id of await this.d.calls.orphaned(this.now(), all)) {
      if (!this.live.has(id)) await this.fail(id, ORPHANED);
    }
  }

  /** Renews this process's leases and closes calls whose process stopped renewing theirs. */
  private async tendLeases(): Promise<void> {
    try {
      const until = new Date(this.d.clock.now().getTime() + LEASE_MS).toISOString();
      await this.d.calls.renewLeases([...this.live.keys()], until);
      await this.closeOrphans(false);
    } catch (error) {
      this.d.log?.error({ err: error }, 'lease upkeep failed');
    }
  }

  /** Hangs up a call running in this process; false when it runs elsewhere or not at all. */
  stop(callId: string): boolean {
    const controller = this.live.get(callId);
    if (!controller) return false;
    controller.abort(new Error('stopped'));
    return true;
  }

  /** Ends every live call (shutdown) and waits until each has written its final state. */
  async stopAll(): Promise<void> {
    clearInterval(this.stopPoll);
    clearInterval(this.leaseTimer);
    for (const controller of this.live.values()) controller.abort(new Error('shutdown'));
    await Promise.allSettled([...this.running]);
  }

  /** Calls under way in this process, dialed or answered, until their records are final. */
  private readonly running = new Set<Promise<void>>();

  private track(work: Promise<void>): Promise<void> {
    this.running.add(work);
    // The caller hears how the work ended; this bookkeeping must not leave a second, unheard
    // rejection (a call that could not write its end when the database went away).
    const done = () => void this.running.delete(work);
    work.then(done, done);
    return work;
  }

  private async pollStops(): Promise<void> {
    if (this.live.size === 0) return;
    try {
      for (const id of await this.d.calls.stopRequested([...this.live.keys()])) this.stop(id);
    } catch (error) {
      this.d.log?.error({ err: error }, 'stop poll failed');
    }
  }

  private now(): string {
    return this.d.clock.now().toISOString();
  }

  /**
   * The `dial` job: places a queued call and runs it to its end. `wait`: times it waited for a
   * place. `settle` hands the job over once the call is allocated: from then the call's lease
   * guards it, and a job replayed after its process died must not dial it again.
   */
  dial(callId: string, wait = 0, settle?: () => Promise<void>): Promise<void> {
    return this.track(
      inSpan('call', { 'openline.call.id': callId, 'openline.call.direction': 'outbound' }, () =>
        this.placeCall(callId, wait, settle),
      ),
    );
  }

  /**
   * Runs a call that arrived already connected (inbound, or one side of an agent-to-agent call):
   * the carrier hands over the leg, the session starts at once.
   */
  answer(callId: string, leg: CallLeg): Promise<void> {
    // Carriers hand a leg over and move on: a failure (the database gone) is logged here, never
    // left to them as a rejection.
    return this.track(
      inSpan('call', { 'openline.call.id': callId, 'openline.call.direction': 'inbound' }, () =>
        this.answerCall(callId, leg),
      ),
    ).catch((error: unknown) => this.d.log?.error({ err: error, call_id: callId }, 'inbound call failed'));
  }

  private async placeCall(callId: string, wait: number, settle?: () => Promise<void>): Promise<void> {
    const call = await this.d.calls.byId(callId);
    if (!call) return;
    if (call.queue_status === 'allocated' || call.queue_status === 'started') {
      // A replay. A process whose lease still holds runs the call; otherwise it died with it.
      if (!this.live.has(call.id) && (call.lease_until === null || call.lease_until < this.now())) {
        await this.fail(call.id, ORPHANED);
      }
      return;
    }
    if (call.queue_status !== 'queued') return;
    const limit = (await this.d.concurrencyLimit?.(call.account_id)) ?? 0;
    if (!(await this.allocate(call.id, limit > 0 ? { accountId: call.account_id, limit } : undefined))) {
      // At the account's limit: the call stays queued and tries again shortly.
      if (limit > 0 && (await this.d.calls.byId(call.id))?.queue_status === 'queued') {
        const runAt = new Date(this.d.clock.now().getTime() + CONCURRENCY_WAIT_MS);
        await this.d.queue.enqueue('dial', { call_id: call.id, wait: wait + 1 }, { runAt });
      }
      return;
    }
    await settle?.();
    await this.run(call.id, (controller) => this.connect(call, controller));
  }

  /**
   * Takes a call that is about to connect (a web call) within its account's concurrent-call limit,
   * before its media is set up; answer() then runs it. At the limit the call ends as queue_error with
   * AT_LIMIT and this resolves false.
   */
  async admit(callId: string, accountId: string): Promise<boolean> {
    const limit = (await this.d.concurrencyLimit?.(accountId)) ?? 0;
    if (await this.allocate(callId, limit > 0 ? { accountId, limit } : undefined)) {
      this.admitted.add(callId);
      return true;
    }
    // Refused while queued: it never connected (the lifecycle's error while queued), so it lasted
    // and cost nothing, as a call that was not answered.
    await this.d.calls.transition(callId, ['queued'], {
      queue_status: 'queue_error',
      status: 'queue_error',
      completed: true,
      call_length: 0,
      corrected_duration: 0,
      price: 0,
      error_message: AT_LIMIT,
      ended_at: this.now(),
    });
    return false;
  }

  private async answerCall(callId: string, leg: CallLeg): Promise<void> {
    let call: Call | undefined;
    try {
      call = await this.d.calls.byId(callId);
      if (call && !(this.admitted.delete(call.id) || (await this.allocate(call.id)))) call = undefined;
    } finally {
      // Not taken (or not readable): the caller is not left on a line nobody answers.
      if (!call) await leg.hangup();
    }
    if (!call) return;
    const taken = call;
    await this.run(taken.id, (controller) => this.converse(taken, leg, controller));
  }

  /** queued -> allocated, taking the call's lease for this process (within the account's limit, if any). */
  private async allocate(id: string, within?: { accountId: string; limit: number }): Promise<boolean> {
    const changes = {
      queue_status: 'allocated' as const,
      status: 'allocated',
      lease_until: new Date(this.d.clock.now().getTime() + LEASE_MS).toISOString(),
      trace_id: currentTraceId() ?? null,
    };
    const allocated = within
      ? await this.d.calls.allocateWithinLimit(id, within.accountId, within.limit, changes)
      : await this.d.calls.transition(id, ['queued'], changes);
    if (allocated) {
      this.d.log?.info({ call_id: id }, 'call allocated');
      this.d.onEvent?.(id, 'queue', 'Call allocated');
    }
    return allocated;
  }

  /** Runs a live call of this process; an unexpected failure still leaves a final record. */
  private async run(id: string, work: (controller: AbortController) => Promise<void>): Promise<void> {
    const controller = new AbortController();
    this.live.set(id, controller);
    try {
      await work(controller);
    } catch (error) {
      this.d.log?.error({ err: error, call_id: id }, 'call failed');
      await this.fail(id, 'The call failed unexpectedly');
    } finally {
      this.live.delete(id);
    }
  }

  /**
   * Writes a call's final state, its post-call work (summary, analysis, webhook, retry after
   * voicemail) enqueued as a durable job just before: a crash between the two leaves a live call
   * that recovery ends, and the job then finds it ended. False when the call had left `from`.
   */
  private async end(
    id: string,
    from: readonly Call['queue_status'][],
    changes: Parameters<CallStore['transition']>[2],
    options: { retryAfterVoicemail?: boolean; voicemailSms?: boolean } = {},
  ): Promise<boolean> {
    await this.d.queue.enqueue('postcall', {
      call_id: id,
      ...(options.retryAfterVoicemail && { retry_after_voicemail: true }),
      ...(options.voicemailSms && { voicemail_sms: true }),
    });
    return this.d.calls.transition(id, from, changes);
  }

  private async fail(id: string, message: string): Promise<void> {
    const failed = await this.end(id, ['allocated', 'started'], {
      queue_status: 'call_error',
      status: 'call_error',
      completed: true,
      error_message: message,
      ended_at: this.now(),
    });
    if (failed) this.d.log?.info({ call_id: id, error_message: message }, 'call failed');
  }

  private async connect(call: Call, controller: AbortController): Promise<void> {
    const request = call.request;
    const dial: DialRequest = {
      callId: call.id,
      to: call.to_number,
      from: call.from_number,
      ringTimeoutMs: RING_TIMEOUT_MS,
      signal: controller.signal,
      request,
      accountId: call.account_id,
      credentialId: call.credential_id,
      placed: async (facts) => {
        await this.d.calls.transition(call.id, ['allocated'], {
          carrier: facts.carrier,
          carrier_call_id: facts.carrierCallId,
        });
      },
    };
    if (!dial.from) {
      // The record names the number the call comes from, the carrier's own when the request named none.
      dial.from = (await this.d.carrier.callerId?.(dial)) ?? null;
      if (dial.from) await this.d.calls.transition(call.id, ['allocated'], { from_number: dial.from });
    }
    const result = await this.d.carrier.dial(dial);
    const ended = { completed: true, call_length: 0, corrected_duration: 0, price: 0, ended_at: this.now() };
    if (result.status === 'failed') {
      await this.end(call.id, ['allocated'], {
        ...ended,
        queue_status: 'queue_error',
        status: 'queue_error',
        error_message: result.reason,
      });
      return;
    }
    if (result.status !== 'answered') {
      const stopped = controller.signal.aborted;
      await this.end(call.id, ['allocated'], {
        ...ended,
        queue_status: 'complete',
        status: stopped ? 'canceled' : 'completed',
        answered_by: stopped ? null : 'no-answer',
        error_message: result.status === 'busy' ? 'The line was busy' : null,
      });
      return;
    }
    // The caller id chosen above is the call's `from` (and its {{from}} variable).
    await this.converse({ ...call, from_number: dial.from }, result.leg, controller);
  }

  /** The lookup over the call's knowledge bases; a store failure leaves the call without it, never fails it. */
  private async knowledgeOf(call: Call): Promise<KnowledgeLookup | undefined> {
    const ids = call.request.knowledge_bases ?? [];
    if (ids.length === 0 || !this.d.knowledgeFor) return undefined;
    try {
      return await this.d.knowledgeFor(call.account_id, ids, {
        callId: call.id,
        personaId: call.request.persona_id ?? null,
      });
    } catch (error) {
      this.d.log?.warn({ call_id: call.id, err: error }, 'knowledge bases could not be loaded');
      return undefined;
    }
  }

  /** Runs a connected call; a failure on the way (its record not written) also hangs up the leg. */
  private async converse(call: Call, leg: CallLeg, controller: AbortController): Promise<void> {
    try {
      await this.talk(call, leg, controller);
    } catch (error) {
      // The far end is not left on a line nobody speaks on (a carrier keeps it open for hours).
      await leg.hangup().catch(() => undefined);
      throw error;
    }
  }

  private async talk(call: Call, leg: CallLeg, controller: AbortController): Promise<void> {
    const request = call.request;
    const startedAt = this.d.clock.now();
    const agent = this.d.agentFor(request);
    const variables = {
      ...systemVariables({
        id: call.id,
        from: call.from_number,
        to: call.to_number,
        inbound: call.inbound,
        timezone: request.timezone,
        now: startedAt,
      }),
      ...request.request_data,
    };
    // dynamic_data (seed 2.2) is fetched before the first words; failures are logged, never fatal.
    const log = this.d.log;
    // Requests that name secrets get them in their own scope, never in the call's variables.
    const scoped = (template: unknown, over = variables): Promise<Record<string, unknown>> =>
      this.d.secretScope ? this.d.secretScope(call.account_id, template, over) : Promise.resolve(over);
    const dynamic = new DynamicData(request.dynamic_data, variables, this.d.http, {
      callId: call.id,
      scope: scoped,
      log: {
        warn: (object, message) => {
          log?.warn(object, message);
          this.d.onEvent?.(call.id, 'dynamic_data', message);
        },
      },
    });
    const known = new Set(Object.keys(variables));
    await dynamic.load();
    const lookup = await this.knowledgeOf(call);
    if (request.dynamic_data.length > 0) {
      const added = Object.keys(variables).filter((k) => !known.has(k));
      this.d.onEvent?.(
        call.id,
        'dynamic_data',
        `dynamic_data fetched: ${added.length ? added.join(', ') : 'no new variables'}`,
      );
    }
    // The offline model is labelled as such in the record, never presented as AI.
    // The record names the mind of the call: the offline model is labelled as such, never as AI;
    // an LLM's actual model id is shown beside the requested base/enhanced/turbo.
    const shown: CallRequest & { requested_model?: string; model_provider?: string } =
      agent.label === 'offline'
        ? { ...request, model: 'offline' as CallRequest['model'], requested_model: request.model }
        : { ...request, model_provider: agent.label };
    const began = await this.d.calls.transition(call.id, ['allocated'], {
      queue_status: 'started',
      status: 'started',
      started_at: startedAt.toISOString(),
      end_at: new Date(startedAt.getTime() + request.max_duration * 60_000).toISOString(),
      variables,
      request: shown,
    });
    if (!began) {
      await leg.hangup();
      return;
    }
    this.d.log?.info({ call_id: call.id, inbound: call.inbound }, 'call started');
    this.d.onEvent?.(call.id, 'queue', 'Call started');
    this.d.onEvent?.(call.id, 'call', 'Call connected');
    const lines: string[] = [];
    // Audio legs measure every turn's latency (src/media/latency.ts) and may record the call.
    const audio = audioLegOf(leg);
    const stopLatency = audio?.latency.onTurn((entry) => {
      this.d.onTurnLatency?.(entry);
      this.d.onEvent?.(call.id, 'latency', latencyMessage(entry));
    });
    const session = new CallSession({
      callId: call.id,
      request,
      inbound: call.inbound,
      variables,
      leg,
      agent,
      clock: this.d.clock,
      signal: controller.signal,
      knowledge: dynamic.knowledge,
      ...(lookup && { lookup }),
      ...(audio && { onReply: () => audio.latency.replyReady(), onFirstToken: () => audio.latency.firstToken() }),
      onToolNote: (text) => this.d.onEvent?.(call.id, 'tool', text),
      runTool: async (tool, input) => {
        const http = this.d.http;
        return http
          ? await inSpan(
              `tool ${tool.name}`,
              { 'openline.call.id': call.id, 'openline.tool.name': tool.name },
              (span) =>
                scoped(tool)
                  .then((scope) => runTool(tool, input, scope, http))
                  .then((r) => {
                    span.setAttribute('openline.tool.ok', r.ok);
                    return r;
                  }),
            )
          : { ok: false, variables: {}, spokenResult: '', error: 'no outbound client' };
      },
      recorder: {
        transcript: async (turn) => {
          await this.d.calls.addTranscript(call.id, { text: turn.text, user: turn.role });
          if (turn.role !== 'agent-action') {
            lines.push(`${turn.role}: ${turn.text}`);
            this.d.onTranscript?.(call.id, turn.role, turn.text);
          }
        },
      },
    });
    const stopRefresh = dynamic.refresh(this.d.clock);
    const stopListening = audio && this.d.onAudioCall?.(call.id, audio);
    const outcome = await session.run().finally(() => {
      stopRefresh();
      stopLatency?.();
      stopListening?.();
    });
    const media = audio && {
      recording_path: await audio.recording(),
      latency: audio.latency.report(),
    };
    await this.finish(call, startedAt, outcome, lines, variables, media);
  }

  private async finish(
    call: Call,
    startedAt: Date,
    outcome: SessionOutcome,
    lines: string[],
    variables?: Record<string, unknown>,
    media?: Pick<Call, 'recording_path' | 'latency'>,
  ): Promise<void> {
    const request = call.request;
    const seconds = Math.max(0, (outcome.endedAt.getTime() - startedAt.getTime()) / 1000);
    const minutes = seconds / 60;
    const retryAfterVoicemail = outcome.reachedVoicemail && request.retry !== null && !call.retry_of;
    // Who answered, and when that was settled, only when the request asked for it.
    const detected = request.answered_by_enabled;
    const changes = {
      queue_status: outcome.error ? 'call_error' : 'complete',
      status: outcome.error ? 'call_error' : 'completed',
      completed: true,
      error_message: outcome.error,
      ended_at: outcome.endedAt.toISOString(),
      call_length: Math.round(minutes * 10000) / 10000,
      corrected_duration: seconds,
      price: Math.round(minutes * this.d.pricePerMinute * 10000) / 10000,
      call_ended_by: outcome.endedBy,
      answered_by: detected ? outcome.answeredBy : null,
      transferred_to: outcome.transferredTo,
      concatenated_transcript: lines.join('\n'),
      // Tools and dynamic_data add variables during the call.
      ...(variables && { variables }),
      // The recording's path under DATA_DIR and every turn's latency (audio legs).
      ...(media && {
        recording_path: media.recording_path,
        latency: media.latency && { ...media.latency, answered_by_ms: detected ? outcome.answeredByMs : null },
      }),
    } as const;
    const voicemailSms = outcome.reachedVoicemail && Boolean(request.voicemail_sms);
    await this.end(call.id, ['started'], changes, { retryAfterVoicemail, voicemailSms });
    this.d.log?.info({ call_id: call.id, ended_by: outcome.endedBy, seconds }, 'call ended');
  }

  /**
   * Retry after voicemail (the `postcall` job): a new call, linked to this one, with the retry's
   * voicemail settings. Once per call, however often the job runs.
   */
  async retryAfterVoicemail(callId: string): Promise<void> {
    const call = await this.d.calls.byId(callId);
    if (!call || call.retry_of || (await this.d.calls.retryOf(call.id))) return;
    const request = call.request;
    const retry = request.retry;
    if (!retry) return;
    const runAt = new Date(this.d.clock.now().getTime() + retry.wait * 1000);
    const next = await this.d.calls.create(call.account_id, {
      request: {
        ...request,
        voicemail_action: retry.voicemail_action,
        voicemail_message: retry.voicemail_message ?? request.voicemail_message,
        retry: null,
        start_time: runAt.toISOString(),
      },
      batch_id: call.batch_id,
      campaign_id: call.campaign_id,
      credential_id: call.credential_id,
      carrier: call.carrier,
      retry_of: call.id,
    });
    await this.d.queue.enqueue('dial', { call_id: next.id }, { runAt });
  }
}
