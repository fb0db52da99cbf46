import { createHash, randomBytes } from 'node:crypto';
import type {
  Carrier,
  DialRequest,
  DialResult,
  LegEvent,
  LegListener,
  SpeakResult,
  SpeechText,
  TransferResult,
} from '../types.js';
import type { AudioLegFactory, CarrierLogger, LegControl } from '../audio-legs.js';
import type { AudioLeg } from '../../media/audio-leg.js';
import type { LatencySource } from '../../media/latency.js';
import type { CallRequest } from '../../schemas/call-request.js';
import type { CallStore } from '../../store/calls.js';
import type { CredentialStore } from '../../store/credentials.js';
import { isSandboxPersona } from '../../store/inbound.js';
import { createTwilioClient, twilioAccountFor, type TwilioAccount, type TwilioClient } from './client.js';
import { connectStreamTwiml, dialTwiml, hangupTwiml, mediaStreamUrl } from './twiml.js';
import { signedUrl } from './signature.js';
import { TwilioCallMedia, type StreamStart, type TwilioMediaStream } from './media-stream.js';

export type TwilioLogger = CarrierLogger;

export interface TwilioCarrierOptions {
  /** OPENLINE_PUBLIC_URL: where Twilio reaches our webhooks and media websocket. */
  publicUrl: string;
  /** OPENLINE_TWILIO_API_URL: Twilio's REST origin (the emulator's in tests). */
  apiUrl: string;
  /** The server's own Twilio account (TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN), if any. */
  server: TwilioAccount | undefined;
  /** TWILIO_PHONE_NUMBER: the caller id of calls that name no `from`. */
  defaultFrom: string | undefined;
  calls: Pick<CallStore, 'byId'>;
  credentials: Pick<CredentialStore, 'resolve'>;
  /** Builds each answered call's audio leg; without it Twilio calls cannot run and fail as queue_error. */
  audioLeg?: AudioLegFactory;
  log?: TwilioLogger;
  /** How long after the ring timeout an answered call may take to open its stream before we give up. */
  answerGraceMs?: number;
}

/** REST clients kept (one per Twilio account in use); the oldest is dropped beyond this. */
const MAX_CLIENTS = 1000;

/** Twilio's final call statuses before (or instead of) an answer. */
const FINAL_STATUSES = new Set(['completed', 'busy', 'no-answer', 'failed', 'canceled']);

/** What async AMD's AnsweredBy means for the call: who answered, and whether a machine's greeting is over. */
export function answeredByEvent(answeredBy: string, at: Date): Extract<LegEvent, { type: 'answered_by' }> | undefined {
  switch (answeredBy) {
    case 'human':
      return { type: 'answered_by', at, answeredBy: 'human', messageEnded: false };
    case 'machine_start':
      return { type: 'answered_by', at, answeredBy: 'voicemail', messageEnded: false };
    case 'machine_end_beep':
    case 'machine_end_silence':
    case 'machine_end_other':
      return { type: 'answered_by', at, answeredBy: 'voicemail', messageEnded: true };
    // A fax machine is neither a person nor a voicemail box.
    case 'fax':
    case 'unknown':
      return { type: 'answered_by', at, answeredBy: 'unknown', messageEnded: false };
    default:
      return undefined;
  }
}

/** The dial result of a call that ended before its media stream started, from its final CallStatus. */
export function unansweredResult(status: string, errorCode?: string): DialResult {
  switch (status) {
    case 'busy':
      return { status: 'busy' };
    case 'no-answer':
    case 'canceled':
      return { status: 'no-answer' };
    case 'failed':
      return {
        status: 'failed',
        reason: `Twilio could not place the call${errorCode ? ` (error ${errorCode})` : ''}`,
      };
    default:
      return { status: 'failed', reason: 'The call ended before its media stream connected' };
  }
}

/** How long a transfer waits for Twilio to say how its Dial went: Dial rings 30 s, then reports. */
const TRANSFER_WAIT_MS = 60_000;

/** How long after a failed Dial the caller's new stream may take to start before the call is given up. */
const RESUME_WAIT_MS = 15_000;

/** Why a transfer's Dial ended without an answer, from its DialCallStatus. */
export function transferFailure(dialStatus: string): string {
  switch (dialStatus) {
    case 'busy':
      return 'The transfer target is busy';
    case 'no-answer':
      return 'The transfer target did not answer';
    case 'canceled':
      return 'The call ended before the transfer completed';
    default:
      return 'Twilio could not reach the transfer target';
  }
}

/** A Twilio REST error's code, for logs and records (its message may quote phone numbers). */
function restCode(error: unknown): string {
  const code = (error as { code?: unknown; status?: unknown }).code ?? (error as { status?: unknown }).status;
  return typeof code === 'number' || typeof code === 'string' ? String(code) : 'network';
}

/** One Twilio call of this process, from dialing (or the inbound webhook) to its end. */
interface LiveCall {
  callId: string;
  callSid: string | undefined;
  /** The account's REST client (made once the SDK is loaded). */
  client: Promise<TwilioClient>;
  /** Latest CallStatus reported; once final, it stays (callbacks may arrive out of order). */
  status: string | undefined;
  /** The ErrorCode that came with a final status. */
  errorCode: string | undefined;
  /** Settles the dial when a final status arrives before the stream. */
  onFinal?: (status: string, errorCode: string | undefined) => void;
  leg: TwilioCallLeg | undefined;
  /** The call's media, once its first stream started (it carries on across a failed transfer). */
  media: TwilioCallMedia | undefined;
  /** An AMD result that arrived before the leg existed. */
  amd: Extract<LegEvent, { type: 'answered_by' }> | undefined;
}

/** A stream the TwiML announced: its one-time token, its call, and who takes it when it starts. */
interface ExpectedStream {
  callSid: string | undefined;
  onStart(stream: TwilioMediaStream): void;
}

/**
 * The CallLeg of a Twilio call: the audio leg does the talking and listening over the media
 * stream (DTMF included, as in-band tones: replacing the TwiML with `<Play digits>` would end the
 * stream) and reaches transfer and hang-up through the REST API (LegControl). This adds the
 * carrier's own AMD verdict to what the audio leg reports, and passes on its audio extras
 * (latency, recording) so the engine sees an audio leg.
 */
export class TwilioCallLeg implements AudioLeg {
  readonly mode = 'audio' as const;
  private readonly extra = new Set<LegListener>();
  /** The carrier's events that came before anyone listened (an AMD verdict before the stream's start). */
  private early: LegEvent[] = [];
  private ended = false;

  /**
   * `onEnded` is told once, however the call ends: the far end or the network (the leg's hangup
   * event, with its reason), or our own hang-up or transfer ('ours', which the leg reports to nobody).
   */
  constructor(
    private readonly inner: AudioLeg,
    private readonly onEnded: (reason: 'remote' | 'network' | 'ours') => void,
    /** Our hang-up while a transfer's target is still being reached: gives the transfer up. */
    private readonly abandonTransfer?: () => Promise<void>,
  ) {
    inner.on((event) => {
      if (event.type === 'hangup') this.finish(event.reason);
    });
  }

  private finish(reason: 'remote' | 'network' | 'ours'): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnded(reason);
  }

  get latency(): LatencySource {
    return this.inner.latency;
  }

  get backlog(): number {
    return this.inner.backlog;
  }

  recording(): Promise<string | null> {
    return this.inner.recording();
  }

  onAudio(listener: (payload: Buffer, pcm: Int16Array) => void): () => void {
    return this.inner.onAudio(listener);
  }

  onSent(listener: (payload: Buffer) => void): () => void {
    return this.inner.onSent(listener);
  }

  pause(): void {
    this.inner.pause();
  }

  resume(heard?: string): void {
    this.inner.resume(heard);
  }

  on(listener: LegListener): () => void {
    this.extra.add(listener);
    const off = this.inner.on(listener);
    if (this.early.length > 0) {
      // Told once the listener's caller has finished attaching, as a live event would be.
      const events = this.early;
      this.early = [];
      queueMicrotask(() => events.forEach((event) => this.emit(event)));
    }
    return () => {
      this.extra.delete(listener);
      off();
    };
  }

  /**
   * Adds an event of the carrier's own (AMD) to what listeners hear; nothing after the hang-up.
   * One that comes before any listener is kept for the first.
   */
  emit(event: LegEvent): void {
    if (this.ended) return;
    if (this.extra.size === 0) this.early.push(event);
    for (const listener of this.extra) listener(event);
  }

  speak(text: SpeechText, options?: { signal?: AbortSignal }): Promise<SpeakResult> {
    return this.inner.speak(text, options);
  }

  sendDtmf(digits: string): Promise<void> {
    return this.inner.sendDtmf(digits);
  }

  async transfer(to: string): Promise<TransferResult> {
    const result = await this.inner.transfer(to);
    if (result.ok) this.finish('ours');
    return result;
  }

  async hangup(): Promise<void> {
    try {
      await this.inner.hangup();
      await this.abandonTransfer?.();
    } finally {
      this.finish('ours');
    }
  }
}

/**
 * Places calls on Twilio Programmable Voice and runs them over bidirectional Media Streams
 * (docs/twilio.md). Each call's TwiML connects it to GET /twilio/media with a one-time token as a
 * stream parameter; the call counts as answered when that stream starts. Status and async AMD
 * callbacks (POST /twilio/status, /twilio/amd, routed here by src/carriers/twilio/routes.ts) settle
 * unanswered calls and feed answered_by.
 *
 * Streams and callbacks are matched in this process's memory: Twilio must reach the process that
 * runs the call (run the workers in the HTTP server's process, the default).
 */
export type SmsSendResult = { ok: true } | { ok: false; reason: string };

export class TwilioCarrier implements Carrier {
  readonly name = 'twilio';
  private readonly live = new Map<string, LiveCall>();
  private readonly streams = new Map<string, ExpectedStream>();
  private readonly clients = new Map<string, Promise<TwilioClient>>();
  /** Transfers whose Dial Twilio has not reported on yet, by call id: settles each. */
  private readonly transfers = new Map<string, (result: TransferResult) => void>();

  constructor(private readonly o: TwilioCarrierOptions) {
    this.audioLeg = o.audioLeg;
  }

  /** The calls this process has on Twilio now: being dialed, or connected. */
  get liveCalls(): number {
    return this.live.size;
  }

  /** Whether the server has Twilio credentials of its own. */
  get configured(): boolean {
    return this.o.server !== undefined;
  }

  get streamUrl(): string {
    return mediaStreamUrl(this.o.publicUrl);
  }

  /**
   * Where Twilio posts webhooks: the public URL (its path kept) plus `path`, the very URL their
   * signatures are checked against.
   */
  webhookUrl(path: string): string {
    return signedUrl(this.o.publicUrl, path);
  }

  /** Where a number's calls and messages are sent: Openline's /twilio/voice and /twilio/sms. */
  numberWebhooks(): { voiceUrl: string; smsUrl: string } {
    return { voiceUrl: this.webhookUrl('/twilio/voice'), smsUrl: this.webhookUrl('/twilio/sms') };
  }

  /** The Twilio account a stored call or number runs on (its BYO credentials, else the server's). */
  account(accountId: string, credentialId: string | null | undefined): Promise<TwilioAccount | undefined> {
    return twilioAccountFor(this.o.credentials, this.o.server, accountId, credentialId);
  }

  /** The Twilio account of a call of ours (its callbacks are signed with that account's token). */
  async accountForCall(callId: string): Promise<TwilioAccount | undefined> {
    const row = await this.o.calls.byId(callId);
    return row ? this.account(row.account_id, row.credential_id) : undefined;
  }

  /** One REST client (and its connection pool) per Twilio account, reused by its calls. */
  client(account: TwilioAccount): Promise<TwilioClient> {
    const key = `${account.accountSid}:${createHash('sha256').update(account.authToken).digest('base64url')}`;
    let client = this.clients.get(key);
    if (!client) {
      client = createTwilioClient(account, this.o.apiUrl);
      if (this.clients.size >= MAX_CLIENTS) this.clients.delete(this.clients.keys().next().value!);
      this.clients.set(key, client);
    }
    return client;
  }

  /** Calls with no `from` come from the server's TWILIO_PHONE_NUMBER (a BYO account's calls need their own). */
  async callerId(request: DialRequest): Promise<string | null> {
    return request.from ?? this.o.defaultFrom ?? null;
  }

  /**
   * Whether the server's own Twilio account places calls to this number: any number but the
   * sandbox's fictional personas (555-0100..0199), which stay on the sandbox network.
   */
  servesWithServerAccount(to: string): boolean {
    return this.o.server !== undefined && !isSandboxPersona(to);
  }

  /**
   * Announces a stream: returns the one-time token its TwiML carries as the `token` parameter.
   * With `ttlMs` the token lapses unused after that long (an inbound call whose stream never came).
   */
  expectStream(callSid: string | undefined, onStart: (stream: TwilioMediaStream) => void, ttlMs?: number): string {
    const token = randomBytes(24).toString('base64url');
    this.streams.set(token, { callSid, onStart });
    if (ttlMs !== undefined) setTimeout(() => this.streams.delete(token), ttlMs).unref();
    return token;
  }

  forgetStream(token: string): void {
    this.streams.delete(token);
  }

  /**
   * The media route's check of a stream's `start`: its token must be one we handed out and not
   * used yet, for the call it names. Returns who takes the stream, or undefined (close it).
   */
  acceptStream(start: StreamStart): ((stream: TwilioMediaStream) => void) | undefined {
    const token = start.customParameters.token;
    if (!token) return undefined;
    const expected = this.streams.get(token);
    if (!expected) return undefined;
    if (expected.callSid !== undefined && expected.callSid !== start.callSid) return undefined;
    this.streams.delete(token);
    return expected.onStart;
  }

  /**
   * Sends a text message during a call (a pathway's SMS node) through the call's Twilio account,
   * from the call's own number: the number called on inbound calls, the caller id on outbound ones.
   */
  async sendSms(message: { callId: string; to: string; body: string }): Promise<SmsSendResult> {
    const row = await this.o.calls.byId(message.callId);
    if (!row) return { ok: false, reason: 'the call no longer exists' };
    const account = await this.account(row.account_id, row.credential_id);
    if (!account) return { ok: false, reason: 'no Twilio credentials for this call' };
    const from = row.inbound ? row.to_number : (row.from_number ?? this.o.defaultFrom);
    if (!from) return { ok: false, reason: 'no number to send the message from' };
    try {
      await (await this.client(account)).messages.create({ to: message.to, from, body: message.body });
      return { ok: true };
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      return {
        ok: false,
        reason: `Twilio did not accept the message${typeof code === 'number' ? ` (error ${code})` : ''}`,
      };
    }
  }

  async dial(request: DialRequest): Promise<DialResult> {
    // Stopped before it was placed: nothing to place.
    if (request.signal.aborted) return { status: 'no-answer' };
    if (!request.accountId || !request.request) return { status: 'failed', reason: 'The call names no account' };
    const account = await this.account(request.accountId, request.credentialId);
    if (!account) return { status: 'failed', reason: 'No Twilio credentials for this call' };
    const from = request.from ?? this.o.defaultFrom;
    if (!from) {
      return {
        status: 'failed',
        reason: 'No caller id: send "from" (one of your Twilio numbers) or set TWILIO_PHONE_NUMBER',
      };
    }
    if (!this.audioLeg)
      return { status: 'failed', reason: 'Twilio calls need the audio pipeline, which is not available' };
    const settings = request.request;
    const live: LiveCall = {
      callId: request.callId,
      callSid: undefined,
      client: this.client(account),
      status: undefined,
      errorCode: undefined,
      leg: undefined,
      media: undefined,
      amd: undefined,
    };
    const client = await live.client;
    this.live.set(request.callId, live);

    let onStream!: (stream: TwilioMediaStream) => void;
    const streamStarted = new Promise<TwilioMediaStream>((resolve) => (onStream = resolve));
    const token = this.expectStream(undefined, (stream) => onStream(stream));
    const finalStatus = new Promise<{ status: string; errorCode: string | undefined }>((resolve) => {
      live.onFinal = (status, errorCode) => resolve({ status, errorCode });
    });
    let giveUp: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<'aborted' | 'timeout'>((resolve) => {
      onAbort = () => resolve('aborted');
      request.signal.addEventListener('abort', onAbort, { once: true });
      if (request.signal.aborted) onAbort();
      giveUp = setTimeout(() => resolve('timeout'), request.ringTimeoutMs + (this.o.answerGraceMs ?? 30_000));
      giveUp.unref();
    });
    const cleanup = () => {
      clearTimeout(giveUp);
      if (onAbort) request.signal.removeEventListener('abort', onAbort);
      this.forgetStream(token);
    };
    const callback = (path: string) => this.webhookUrl(`${path}?call_id=${encodeURIComponent(request.callId)}`);
    const amd = settings.answered_by_enabled;
    try {
      const created = await client.calls.create({
        to: request.to,
        from,
        twiml: connectStreamTwiml(this.streamUrl, { call_id: request.callId, token }),
        statusCallback: callback('/twilio/status'),
        statusCallbackMethod: 'POST',
        statusCallbackEvent: ['initiated', 'ringing', 'answered', 'completed'],
        timeout: Math.max(5, Math.min(600, Math.round(request.ringTimeoutMs / 1000))),
        ...(amd && {
          machineDetection: 'DetectMessageEnd',
          asyncAmd: 'true',
          asyncAmdStatusCallback: callback('/twilio/amd'),
          asyncAmdStatusCallbackMethod: 'POST',
        }),
      });
      live.callSid = created.sid;
      // The stream must come from this very call.
      const expected = this.streams.get(token);
      if (expected) expected.callSid = created.sid;
    } catch (error) {
      cleanup();
      this.live.delete(request.callId);
      const code = restCode(error);
      this.o.log?.warn({ call_id: request.callId, twilio_error: code }, 'Twilio refused to create the call');
      return { status: 'failed', reason: `Twilio refused the call (error ${code})` };
    }
    await request.placed?.({ carrier: 'twilio', carrierCallId: live.callSid });
    // A status reported before the SID was known.
    if (live.status && FINAL_STATUSES.has(live.status)) live.onFinal?.(live.status, live.errorCode);

    const outcome = await Promise.race([
      streamStarted.then((stream) => ({ kind: 'stream' as const, stream })),
      finalStatus.then((final) => ({ kind: 'final' as const, ...final })),
      stopped.then((why) => ({ kind: why })),
    ]);
    cleanup();
    live.onFinal = undefined;
    if (outcome.kind === 'stream') {
      live.leg = this.legFor(live, outcome.stream, settings, from);
      if (live.amd) live.leg.emit(live.amd);
      return { status: 'answered', leg: live.leg };
    }
    this.live.delete(request.callId);
    if (outcome.kind === 'final') return unansweredResult(outcome.status, outcome.errorCode);
    // Stopped while ringing, or nobody answered in time: take the call back.
    await this.cancel(client, live.callSid!);
    return { status: 'no-answer' };
  }

  /**
   * The leg of a call whose stream started: the audio leg over the call's media (this stream, and
   * the one the caller is back on after a failed transfer), with transfer and hang-up through REST.
   * `callerId` is shown to the transfer target (one of our numbers).
   */
  legFor(live: LiveCall, stream: TwilioMediaStream, settings: CallRequest, callerId: string): TwilioCallLeg {
    const audioLeg = this.audioLeg;
    if (!audioLeg) throw new Error('Twilio calls need the audio pipeline');
    const sid = stream.callSid;
    const media = new TwilioCallMedia(stream);
    live.media = media;
    const callId = live.callId;
    const control: LegControl = {
      // The Dial replaces the stream (which ends); the transfer is done once the target answers,
      // and failed when the Dial ends without an answer (POST /twilio/dial, dialCallback), which
      // puts the caller back on a new stream of the call.
      transfer: async (to) => {
        let settle!: (result: TransferResult) => void;
        const outcome = new Promise<TransferResult>((resolve) => (settle = resolve));
        this.transfers.set(callId, settle);
        media.handOver();
        try {
          const callback = this.webhookUrl(`/twilio/dial?call_id=${encodeURIComponent(callId)}`);
          await (await live.client).calls(sid).update({ twiml: dialTwiml(to, callerId, callback) });
        } catch (error) {
          this.transfers.delete(callId);
          media.keep();
          const code = restCode(error);
          this.o.log?.warn({ call_id: callId, twilio_error: code }, 'Twilio transfer failed');
          // Refused, the call runs its stream as before: the caller never left.
          return {
            ok: false,
            reason: `Twilio refused the transfer (error ${code})`,
            ...(media.connected && { resumed: true }),
          };
        }
        // Without word from Twilio (its callbacks lost) the hand-over it accepted stands.
        const timer = setTimeout(() => settle({ ok: true }), TRANSFER_WAIT_MS);
        timer.unref();
        const result = await outcome;
        clearTimeout(timer);
        if (this.transfers.get(callId) === settle) this.transfers.delete(callId);
        return result;
      },
      hangup: async () => {
        if (live.status && FINAL_STATUSES.has(live.status)) return;
        try {
          await (await live.client).calls(sid).update({ status: 'completed' });
        } catch (error) {
          // Already over at Twilio's end: nothing to end.
          this.o.log?.info({ call_id: live.callId, twilio_error: restCode(error) }, 'Twilio hang-up not applied');
        }
      },
    };
    return new TwilioCallLeg(
      audioLeg(media, settings, live.callId, control),
      (reason) => {
        if (this.live.get(live.callId) === live) this.live.delete(live.callId);
        // The stream was lost without Twilio's stop: Twilio may not notice a dead connection for
        // minutes, the caller on a silent line meanwhile. The call is ended at Twilio too.
        if (reason === 'network') void control.hangup();
      },
      async () => {
        const settle = this.transfers.get(callId);
        if (!settle) return;
        this.transfers.delete(callId);
        settle({ ok: false, reason: 'The call ended before the transfer completed' });
        await control.hangup();
      },
    );
  }

  /**
   * A call that arrived on one of our numbers and whose stream started (src/carriers/twilio/routes.ts):
   * registers it like a dialed one, so its status callbacks and hang-up work the same.
   */
  answerInbound(
    callId: string,
    account: TwilioAccount,
    stream: TwilioMediaStream,
    settings: CallRequest,
    ourNumber: string,
  ): TwilioCallLeg {
    const live: LiveCall = {
      callId,
      callSid: stream.callSid,
      client: this.client(account),
      status: 'in-progress',
      errorCode: undefined,
      leg: undefined,
      media: undefined,
      amd: undefined,
    };
    this.live.set(callId, live);
    live.leg = this.legFor(live, stream, settings, ourNumber);
    return live.leg;
  }

  private audioLeg: AudioLegFactory | undefined;

  /** Wires the audio pipeline (src/services.ts does, once speech providers are built). */
  useAudioLeg(factory: AudioLegFactory): void {
    this.audioLeg = factory;
  }

  /** Whether the audio pipeline is wired (inbound calls are rejected without it). */
  get canAnswer(): boolean {
    return this.audioLeg !== undefined;
  }

  /** POST /twilio/status, signature already checked. */
  statusCallback(callId: string, params: Record<string, string>): void {
    const live = this.live.get(callId);
    if (!live) return;
    if (live.callSid !== undefined && params.CallSid !== live.callSid) return;
    // Twilio fires the events in order but as separate requests, which may arrive in any order
    // (and a callback may come twice): nothing after a final status changes it.
    if (live.status && FINAL_STATUSES.has(live.status)) return;
    const status = params.CallStatus ?? '';
    live.status = status;
    if (!FINAL_STATUSES.has(status)) return;
    live.errorCode = params.ErrorCode || undefined;
    if (live.media) {
      // The call is over, whether or not the stream's stop came first (callbacks and stream are
      // not ordered): the leg ends now, without waiting for the socket to finish closing. A
      // transfer still under way ends with it (the caller hung up while the target rang).
      live.media.close();
      const settle = this.transfers.get(callId);
      this.transfers.delete(callId);
      settle?.({ ok: false, reason: 'The call ended before the transfer completed' });
      return;
    }
    if (live.callSid !== undefined) live.onFinal?.(status, live.errorCode);
  }

  /**
   * POST /twilio/dial, signature already checked: a transfer's `<Number>` answered (CallStatus
   * in-progress), or its Dial is over (DialCallStatus, the Dial's action). Settles the transfer
   * waiting for it. Returns the TwiML that answers the action: a Dial that reached nobody puts the
   * caller back on a new stream of the call (the conversation goes on), any other ends the call.
   * Undefined for the target's answer, which takes no TwiML.
   */
  dialCallback(callId: string, params: Record<string, string>): string | undefined {
    const settle = this.transfers.get(callId);
    const dialStatus = params.DialCallStatus;
    if (dialStatus === undefined) {
      if (settle && params.CallStatus === 'in-progress') {
        this.transfers.delete(callId);
        settle({ ok: true });
      }
      return undefined;
    }
    if (!settle) return hangupTwiml();
    this.transfers.delete(callId);
    if (dialStatus === 'completed' || dialStatus === 'answered') {
      settle({ ok: true });
      return hangupTwiml();
    }
    const reason = transferFailure(dialStatus);
    const live = this.live.get(callId);
    if (!live?.media || !live.callSid) {
      settle({ ok: false, reason });
      return hangupTwiml();
    }
    return this.resume(live, live.media, live.callSid, (resumed) =>
      settle({ ok: false, reason, ...(resumed && { resumed: true }) }),
    );
  }

  /**
   * The TwiML that connects a call whose transfer failed to a new stream, which takes the place of
   * the one the Dial replaced. `settled(true)` once it started, `settled(false)` if it never does
   * (the call is then given up).
   */
  private resume(live: LiveCall, media: TwilioCallMedia, callSid: string, settled: (resumed: boolean) => void): string {
    const token = this.expectStream(callSid, (stream) => {
      clearTimeout(lapse);
      media.resume(stream);
      settled(true);
    });
    const lapse = setTimeout(() => {
      this.forgetStream(token);
      this.o.log?.warn({ call_id: live.callId }, 'Twilio call did not come back after its transfer failed');
      settled(false);
    }, RESUME_WAIT_MS);
    lapse.unref();
    return connectStreamTwiml(this.streamUrl, { call_id: live.callId, token });
  }

  /** POST /twilio/amd, signature already checked: the async AMD verdict becomes an answered_by event. */
  amdCallback(callId: string, params: Record<string, string>, at: Date): void {
    const live = this.live.get(callId);
    if (!live || (live.callSid !== undefined && params.CallSid !== live.callSid)) return;
    const event = answeredByEvent(params.AnsweredBy ?? '', at);
    if (!event) return;
    if (live.leg) live.leg.emit(event);
    else live.amd = event;
  }

  private async cancel(client: TwilioClient, sid: string): Promise<void> {
    try {
      await client.calls(sid).update({ status: 'canceled' });
    } catch {
      // Answered meanwhile: a ringing call is canceled, a connected one completed.
      try {
        await client.calls(sid).update({ status: 'completed' });
      } catch (error) {
        this.o.log?.info({ twilio_error: restCode(error) }, 'Twilio call could not be taken back');
      }
    }
  }
}
