/**
 * A local Twilio for tests and demos (loopback only): the REST subset Openline uses, signed
 * webhooks, and Media Streams driven like Twilio drives them.
 *
 * - REST (HTTP basic auth with the account SID and auth token): Calls create / update / fetch,
 *   AvailablePhoneNumbers (Local), IncomingPhoneNumbers (create, list by number, update its webhooks), Messaging v1 BrandRegistrations
 *   create / fetch. Errors come back in Twilio's JSON shape ({code, message, status}).
 * - Callbacks (status, async AMD) and inbound voice / SMS webhooks are POSTed as forms signed with
 *   X-Twilio-Signature under the account's auth token, so the receiving side's checks really run.
 * - `<Connect><Stream>` opens a websocket to the stream URL and sends `connected`, `start` (with
 *   the `<Parameter>`s as customParameters), then one `media` frame every 20 ms in real time
 *   (base64 mu-law, sequence numbers, timestamps): the callee's scripted speech, else silence. DTMF
 *   events go out when scripted. What we receive is recorded with its arrival time and "played"
 *   in real time: a `mark` is echoed once the audio sent before it has played; `clear` drops what
 *   has not played yet (and echoes pending marks, as Twilio does).
 * - Each callee is scripted: answers / no-answer / busy / failed, how long it rings, AnsweredBy for
 *   async AMD, what it says (PCM at 8 kHz) and when, DTMF, and when it hangs up.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { WebSocket } from 'ws';
import { twilioSignature } from '../carriers/twilio/signature.js';
import { FRAME_MS, FRAME_SAMPLES, MULAW_SILENCE, decodeMulaw, encodeMulaw } from '../media/audio.js';
import { wavToPcm8k } from '../media/wav.js';

export interface EmulatorAccount {
  accountSid: string;
  authToken: string;
}

/** What a callee does when called (outbound) or what a caller does once connected (inbound). */
export interface CalleeScript {
  /** Default 'answer'. */
  outcome?: 'answer' | 'no-answer' | 'busy' | 'failed';
  /** Ringing time before the outcome, ms. Default 100 (no-answer: the call's Timeout, capped by this when set). */
  ringMs?: number;
  /** Sent to the AsyncAmdStatusCallback when the call asked for async AMD. */
  answeredBy?: string;
  /** When the AMD verdict is posted, ms after the answer. Default 300. */
  amdDelayMs?: number;
  /** How long after the answer the TwiML runs and the media stream opens, ms. Default 0. */
  streamDelayMs?: number;
  /**
   * What the far end says, starting `atMs` after its stream started: 8 kHz PCM, or a WAV file's
   * bytes (any rate, e.g. `espeak-ng --stdout` output), resampled to 8 kHz.
   */
  say?: ({ atMs: number; pcm: Int16Array } | { atMs: number; wav: Buffer })[];
  /** Keys pressed (sent as `dtmf` events). */
  dtmf?: { atMs: number; digit: string }[];
  /** The far end hangs up this long after its stream started. */
  hangupAfterMs?: number;
  /**
   * When the far end hangs up, the stream's `stop` comes this long after the `completed` status
   * callback, ms (Twilio does not order the two). Default: `stop` first.
   */
  stopDelayMs?: number;
  /**
   * Extra time before the status callback of a CallStatus is delivered, ms. Twilio fires the
   * events in order but as separate HTTP requests, which may arrive out of order (their
   * SequenceNumber tells the order they were fired in).
   */
  callbackDelayMs?: Partial<Record<string, number>>;
}

/** One frame we received on a call's stream. */
export interface ReceivedFrame {
  payload: Buffer;
  /** ms since the stream started, when it arrived. */
  arrivedMs: number;
  /** ms since the stream started, when it played (or would have). */
  playAtMs: number;
  /** Dropped by a `clear` before it played. */
  dropped: boolean;
}

type Params = Record<string, string>;

function sid(prefix: string): string {
  return prefix + randomBytes(16).toString('hex');
}

function decodeEntities(value: string): string {
  return value
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function attributes(tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/(\w+)="([^"]*)"/g)) out[m[1]!] = decodeEntities(m[2]!);
  return out;
}

/** The verbs of the TwiML subset Openline sends. */
export type TwimlVerb =
  | { verb: 'stream'; url: string; parameters: Record<string, string> }
  | {
      verb: 'dial';
      number: string;
      callerId: string | undefined;
      /** The Dial's action URL: told the DialCallStatus when the Dial is over; its TwiML runs next. */
      action?: string;
      /** The `<Number>`'s statusCallback and its events (`answered`: the target picked up). */
      numberCallback?: { url: string; events: string[] };
    }
  | { verb: 'reject' }
  | { verb: 'hangup' }
  | { verb: 'other' };

/** Reads the first verb of a TwiML document (the subset Openline writes). */
export function parseTwiml(xml: string): TwimlVerb {
  // Attributes are matched as quoted strings: a value may hold ">" (XML does not require escaping it).
  const attrs = String.raw`((?:\s+\w+="[^"]*")*)\s*`;
  const stream =
    new RegExp(String.raw`<Connect>\s*<Stream${attrs}>([\s\S]*?)</Stream>`).exec(xml) ??
    new RegExp(String.raw`<Connect>\s*<Stream${attrs}/>`).exec(xml);
  if (stream) {
    const parameters: Record<string, string> = {};
    for (const p of (stream[2] ?? '').matchAll(new RegExp(String.raw`<Parameter${attrs}/>`, 'g'))) {
      const a = attributes(p[1]!);
      if (a.name !== undefined) parameters[a.name] = a.value ?? '';
    }
    return { verb: 'stream', url: attributes(stream[1]!).url ?? '', parameters };
  }
  const dial = new RegExp(String.raw`<Dial${attrs}>([\s\S]*?)</Dial>`).exec(xml);
  if (dial) {
    const a = attributes(dial[1]!);
    const number = new RegExp(String.raw`<Number${attrs}>([^<]*)</Number>`).exec(dial[2]!);
    const n = number ? attributes(number[1]!) : {};
    return {
      verb: 'dial',
      number: decodeEntities((number ? number[2]! : dial[2]!).trim()),
      callerId: a.callerId,
      ...(a.action !== undefined && { action: a.action }),
      ...(n.statusCallback !== undefined && {
        numberCallback: { url: n.statusCallback, events: (n.statusCallbackEvent ?? '').split(/\s+/).filter(Boolean) },
      }),
    };
  }
  if (/<Hangup\b/.test(xml)) return { verb: 'hangup' };
  if (/<Reject\b/.test(xml)) return { verb: 'reject' };
  return { verb: 'other' };
}

/** A call on the emulated network (either direction). */
export class EmulatedCall {
  readonly sid = sid('CA');
  status = 'queued';
  /** Every CallStatus reported to the status callback, in order. */
  readonly statuses: string[] = [];
  /** Every TwiML the call ran: the one it started with, then each update. */
  readonly twiml: string[] = [];
  /** Where a `<Dial>` update sent the call. */
  dialed: { number: string; callerId: string | undefined } | undefined;
  streamSid: string | undefined;
  /** The stream's customParameters. */
  parameters: Record<string, string> = {};
  readonly frames: ReceivedFrame[] = [];
  /** Mark names echoed back, in order. */
  readonly marksEchoed: string[] = [];
  clears = 0;
  /** ms since the stream started at which each `clear` arrived. */
  readonly clearedAtMs: number[] = [];
  /** Why our websocket closed, if it did: code and reason. */
  socketClosed: { code: number; reason: string } | undefined;
  readonly ended: Promise<void>;
  private end!: () => void;
  socket: WebSocket | undefined;
  streamStartedAt = 0;
  timers: NodeJS.Timeout[] = [];
  playedUntilMs = 0;
  pendingMarks: { name: string; timer: NodeJS.Timeout }[] = [];
  seq = 0;
  /** The SequenceNumber of the next status callback (Twilio counts from 0). */
  callbackSeq = 0;
  answeredAt = 0;

  constructor(
    readonly direction: 'outbound-api' | 'inbound',
    readonly accountSid: string,
    readonly to: string,
    readonly from: string,
    readonly script: CalleeScript,
    readonly callbacks: { status?: string; events: string[]; amd?: string; timeoutS: number },
  ) {
    this.ended = new Promise((resolve) => (this.end = resolve));
  }

  /** ms since the stream started. */
  nowMs(): number {
    return performance.now() - this.streamStartedAt;
  }

  /** Everything we sent on the stream, decoded (played or not). */
  receivedPcm(): Int16Array {
    return decodeMulaw(Buffer.concat(this.frames.map((f) => f.payload)));
  }

  /** What the far end actually heard: frames not dropped by a clear. */
  heardPcm(): Int16Array {
    return decodeMulaw(Buffer.concat(this.frames.filter((f) => !f.dropped).map((f) => f.payload)));
  }

  finish(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
    for (const m of this.pendingMarks) clearTimeout(m.timer);
    this.pendingMarks = [];
    this.end();
  }

  resource(): Record<string, unknown> {
    return {
      sid: this.sid,
      account_sid: this.accountSid,
      to: this.to,
      from: this.from,
      status: this.status,
      direction: this.direction,
      api_version: '2010-04-01',
      uri: `/2010-04-01/Accounts/${this.accountSid}/Calls/${this.sid}.json`,
    };
  }
}

interface IncomingNumber {
  sid: string;
  accountSid: string;
  phoneNumber: string;
  voiceUrl: string;
  smsUrl: string;
  /** A TwiML App (AP...) that answers the number's calls instead of voiceUrl. */
  voiceApplicationSid?: string;
  /** An Elastic SIP trunk (TK...) that takes the number's calls instead of any URL or App. */
  trunkSid?: string;
  /** A TwiML App (AP...) or Messaging Service (MG...) that takes the number's messages instead of smsUrl. */
  smsApplicationSid?: string;
}

interface Brand {
  sid: string;
  accountSid: string;
  customerProfileBundleSid: string;
  a2pProfileBundleSid: string;
  brandType: string;
  status: string;
  failureReason: string | null;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** An IncomingPhoneNumber as the REST API shows it. */
function numberResource(number: IncomingNumber) {
  return {
    sid: number.sid,
    account_sid: number.accountSid,
    phone_number: number.phoneNumber,
    voice_url: number.voiceUrl,
    sms_url: number.smsUrl,
    voice_application_sid: number.voiceApplicationSid ?? '',
    trunk_sid: number.trunkSid || null,
    sms_application_sid: number.smsApplicationSid ?? '',
  };
}

export class TwilioEmulator {
  readonly calls: EmulatedCall[] = [];
  readonly numbers: IncomingNumber[] = [];
  readonly brands: Brand[] = [];
  /** Text messages sent through the Messages resource. */
  readonly messages: { sid: string; accountSid: string; to: string; from: string; body: string }[] = [];
  /** Every REST request: method, path and form parameters (for assertions on what was asked). */
  readonly requests: { method: string; path: string; params: Params; multi: Record<string, string[]> }[] = [];
  /** Callee scripts by dialed number; `defaultScript` for the rest. */
  readonly scripts = new Map<string, CalleeScript>();
  defaultScript: CalleeScript = {};
  /** The numbers AvailablePhoneNumbers offers per area code (first free one first). Default: +1<area>555-03xx. */
  available: (areaCode: string) => string[] = (area) =>
    Array.from({ length: 5 }, (_, i) => `+1${area}55503${String(i).padStart(2, '0')}`);
  /** The decision a brand registration reaches at its first fetch: APPROVED, or FAILED with a reason. */
  brandDecision: (customerProfileSid: string) => { status: string; failureReason: string | null } = () => ({
    status: 'APPROVED',
    failureReason: null,
  });
  /** Webhook deliveries that failed (our side refused or was unreachable), for assertions. */
  readonly webhookFailures: { url: string; status: number }[] = [];
  /** How long each REST answer takes, ms (callbacks fired meanwhile may arrive before it). Default 0. */
  responseDelayMs = 0;

  private constructor(
    private readonly server: http.Server,
    private readonly accounts: EmulatorAccount[],
  ) {}

  static async start(accounts: EmulatorAccount[]): Promise<TwilioEmulator> {
    const server = http.createServer();
    const emulator = new TwilioEmulator(server, accounts);
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => void emulator.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return emulator;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const call of this.calls) {
      call.socket?.terminate();
      call.finish();
    }
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The last call to `to` (E.164), if any. */
  callTo(to: string): EmulatedCall | undefined {
    return this.calls.filter((c) => c.to === to).at(-1);
  }

  /** Waits until a call to `to` exists (calls are placed by a job, a moment after the API accepted them). */
  async waitForCallTo(to: string, timeoutMs = 10_000): Promise<EmulatedCall> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const call = this.callTo(to);
      if (call) return call;
      if (Date.now() > until) throw new Error('no call was placed');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Gives an account a number whose webhooks point at `voiceUrl` / `smsUrl` (as if bought in the console). */
  addNumber(accountSid: string, phoneNumber: string, voiceUrl: string, smsUrl: string): void {
    this.numbers.push({ sid: sid('PN'), accountSid, phoneNumber, voiceUrl, smsUrl });
  }

  /**
   * A caller rings one of the numbers: POSTs its voice webhook (signed), runs the TwiML that comes
   * back (`<Connect><Stream>` connects the caller, scripted by `script`; `<Reject/>` ends it).
   * `signWith` overrides the auth token the webhook is signed with (to test refusals).
   */
  async placeInbound(options: {
    from: string;
    to: string;
    script?: CalleeScript;
    signWith?: string;
  }): Promise<{ call: EmulatedCall; status: number; twiml: string }> {
    const number = this.numbers.find((n) => n.phoneNumber === options.to);
    if (!number) throw new Error('the emulator has no such number');
    // As Twilio: a trunk, else an App, answers the number's calls; its voice URL only without both.
    if (number.trunkSid || number.voiceApplicationSid) {
      throw new Error('the number sends its calls to its SIP trunk or TwiML App, not to its voice URL');
    }
    const call = new EmulatedCall('inbound', number.accountSid, options.to, options.from, options.script ?? {}, {
      events: [],
      timeoutS: 60,
    });
    this.calls.push(call);
    call.status = 'ringing';
    const params: Params = {
      CallSid: call.sid,
      AccountSid: number.accountSid,
      From: options.from,
      To: options.to,
      CallStatus: 'ringing',
      Direction: 'inbound',
      ApiVersion: '2010-04-01',
    };
    const reply = await this.post(number.voiceUrl, params, options.signWith ?? this.token(number.accountSid));
    call.twiml.push(reply.body);
    if (reply.status !== 200) {
      call.status = 'failed';
      call.finish();
      return { call, status: reply.status, twiml: reply.body };
    }
    this.runTwiml(call, reply.body);
    return { call, status: reply.status, twiml: reply.body };
  }

  /** An SMS arrives on one of the numbers: POSTs its messaging webhook, signed. */
  async sendSms(options: {
    from: string;
    to: string;
    body: string;
    signWith?: string;
  }): Promise<{ status: number; body: string; messageSid: string }> {
    const number = this.numbers.find((n) => n.phoneNumber === options.to);
    if (!number) throw new Error('the emulator has no such number');
    // A TwiML App takes the number's messages (a Messaging Service is taken to defer to the number's URL).
    if (number.smsApplicationSid?.startsWith('AP')) {
      throw new Error('the number sends its messages to its TwiML App, not to its SMS URL');
    }
    const messageSid = sid('SM');
    const params: Params = {
      MessageSid: messageSid,
      SmsSid: messageSid,
      AccountSid: number.accountSid,
      From: options.from,
      To: options.to,
      Body: options.body,
      NumMedia: '0',
      ApiVersion: '2010-04-01',
    };
    const reply = await this.post(number.smsUrl, params, options.signWith ?? this.token(number.accountSid));
    return { ...reply, messageSid };
  }

  /**
   * The far end hangs up now: `stop` on the stream, the socket closes, status completed (or the
   * status callback first, and the stop `stopDelayMs` later).
   */
  hangUp(call: EmulatedCall): void {
    if (call.status !== 'in-progress') return;
    const stopDelay = call.script.stopDelayMs;
    if (stopDelay === undefined) this.endStream(call);
    this.setStatus(call, 'completed');
    // Not one of the call's timers (the call has finished): the stop still comes.
    if (stopDelay !== undefined) setTimeout(() => this.endStream(call), stopDelay);
  }

  // ---- REST ------------------------------------------------------------------------------------

  private token(accountSid: string): string {
    const account = this.accounts.find((a) => a.accountSid === accountSid);
    if (!account) throw new Error('unknown emulator account');
    return account.authToken;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://emulator');
    const form = new URLSearchParams(req.method === 'GET' ? url.search : Buffer.concat(chunks).toString('utf8'));
    const params: Params = {};
    const multi: Record<string, string[]> = {};
    for (const [k, v] of form) {
      params[k] = v;
      (multi[k] ??= []).push(v);
    }
    this.requests.push({ method: req.method ?? 'GET', path: url.pathname, params, multi });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    try {
      const account = this.authenticate(req);
      const result = this.route(req.method ?? 'GET', url.pathname, params, multi, account);
      if (this.responseDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.responseDelayMs));
      send(result.status, result.body);
    } catch (error) {
      if (error instanceof HttpError) {
        send(error.status, { code: error.code, message: error.message, more_info: '', status: error.status });
      } else {
        send(500, { code: 20500, message: 'Internal error', status: 500 });
      }
    }
  }

  private authenticate(req: http.IncomingMessage): EmulatorAccount {
    const header = req.headers.authorization ?? '';
    const [user, password] = Buffer.from(header.replace(/^Basic\s+/i, ''), 'base64')
      .toString('utf8')
      .split(':');
    const account = this.accounts.find((a) => a.accountSid === user && a.authToken === password);
    if (!account) throw new HttpError(401, 20003, 'Authenticate');
    return account;
  }

  private route(
    method: string,
    path: string,
    params: Params,
    multi: Record<string, string[]>,
    account: EmulatorAccount,
  ): { status: number; body: unknown } {
    const own = (accountSid: string | undefined) => {
      if (accountSid !== account.accountSid) throw new HttpError(403, 20403, 'Forbidden');
    };
    let m = /^\/2010-04-01\/Accounts\/(\w+)\/Calls\.json$/.exec(path);
    if (m && method === 'POST') {
      own(m[1]);
      return { status: 201, body: this.createCall(account.accountSid, params, multi).resource() };
    }
    m = /^\/2010-04-01\/Accounts\/(\w+)\/Calls\/(\w+)\.json$/.exec(path);
    if (m) {
      own(m[1]);
      const call = this.calls.find((c) => c.sid === m![2] && c.accountSid === account.accountSid);
      if (!call) throw new HttpError(404, 20404, 'The requested resource was not found');
      if (method === 'POST') this.updateCall(call, params);
      return { status: 200, body: call.resource() };
    }
    m = /^\/2010-04-01\/Accounts\/(\w+)\/AvailablePhoneNumbers\/(\w+)\/Local\.json$/.exec(path);
    if (m && method === 'GET') {
      own(m[1]);
      const area = params.AreaCode ?? '415';
      const held = new Set(this.numbers.map((n) => n.phoneNumber));
      const free = this.available(area).filter((n) => !held.has(n));
      return {
        status: 200,
        body: {
          available_phone_numbers: free.map((phone_number) => ({
            phone_number,
            friendly_name: phone_number,
            iso_country: m![2],
            capabilities: { voice: true, SMS: true, MMS: false },
          })),
          uri: path,
        },
      };
    }
    m = /^\/2010-04-01\/Accounts\/(\w+)\/Messages\.json$/.exec(path);
    if (m && method === 'POST') {
      own(m[1]);
      const to = params.To ?? '';
      const from = params.From ?? '';
      if (!/^\+\d{8,15}$/.test(to)) throw new HttpError(400, 21211, "The 'To' number is not a valid phone number");
      if (!/^\+\d{8,15}$/.test(from)) throw new HttpError(400, 21212, "The 'From' number is not a valid phone number");
      if (!params.Body) throw new HttpError(400, 21602, 'Message body is required');
      const message = { sid: sid('SM'), accountSid: account.accountSid, to, from, body: params.Body };
      this.messages.push(message);
      return {
        status: 201,
        body: { sid: message.sid, account_sid: message.accountSid, to, from, body: message.body, status: 'queued' },
      };
    }
    m = /^\/2010-04-01\/Accounts\/(\w+)\/IncomingPhoneNumbers\.json$/.exec(path);
    if (m && method === 'GET') {
      own(m[1]);
      const mine = this.numbers.filter(
        (n) => n.accountSid === account.accountSid && (!params.PhoneNumber || n.phoneNumber === params.PhoneNumber),
      );
      return {
        status: 200,
        body: {
          incoming_phone_numbers: mine.map(numberResource),
          uri: path,
          page: 0,
          page_size: 50,
          next_page_uri: null,
        },
      };
    }
    m = /^\/2010-04-01\/Accounts\/(\w+)\/IncomingPhoneNumbers\/(\w+)\.json$/.exec(path);
    if (m && method === 'POST') {
      own(m[1]);
      const number = this.numbers.find((n) => n.sid === m![2] && n.accountSid === account.accountSid);
      if (!number) throw new HttpError(404, 20404, 'The requested resource was not found');
      if (params.VoiceUrl !== undefined) number.voiceUrl = params.VoiceUrl;
      if (params.SmsUrl !== undefined) number.smsUrl = params.SmsUrl;
      // Setting an App takes the number off its trunk, and the other way round; "" detaches.
      if (params.VoiceApplicationSid !== undefined) {
        number.voiceApplicationSid = params.VoiceApplicationSid;
        if (params.VoiceApplicationSid) number.trunkSid = '';
      }
      if (params.TrunkSid !== undefined) {
        number.trunkSid = params.TrunkSid;
        if (params.TrunkSid) number.voiceApplicationSid = '';
      }
      if (params.SmsApplicationSid !== undefined) number.smsApplicationSid = params.SmsApplicationSid;
      return { status: 200, body: numberResource(number) };
    }
    m = /^\/2010-04-01\/Accounts\/(\w+)\/IncomingPhoneNumbers\.json$/.exec(path);
    if (m && method === 'POST') {
      own(m[1]);
      const phone = params.PhoneNumber ?? '';
      if (!/^\+\d{8,15}$/.test(phone)) throw new HttpError(400, 21421, 'PhoneNumber is invalid');
      if (this.numbers.some((n) => n.phoneNumber === phone)) {
        throw new HttpError(400, 21422, 'PhoneNumber is not available');
      }
      const number: IncomingNumber = {
        sid: sid('PN'),
        accountSid: account.accountSid,
        phoneNumber: phone,
        voiceUrl: params.VoiceUrl ?? '',
        smsUrl: params.SmsUrl ?? '',
      };
      this.numbers.push(number);
      return { status: 201, body: numberResource(number) };
    }
    if (path === '/v1/a2p/BrandRegistrations' && method === 'POST') {
      if (!params.CustomerProfileBundleSid)
        throw new HttpError(400, 20001, 'Missing required parameter CustomerProfileBundleSid');
      if (!params.A2PProfileBundleSid)
        throw new HttpError(400, 20001, 'Missing required parameter A2PProfileBundleSid');
      const brand: Brand = {
        sid: sid('BN'),
        accountSid: account.accountSid,
        customerProfileBundleSid: params.CustomerProfileBundleSid,
        a2pProfileBundleSid: params.A2PProfileBundleSid,
        brandType: params.BrandType ?? 'STANDARD',
        status: 'PENDING',
        failureReason: null,
      };
      this.brands.push(brand);
      return { status: 201, body: this.brandResource(brand) };
    }
    m = /^\/v1\/a2p\/BrandRegistrations\/(\w+)$/.exec(path);
    if (m && method === 'GET') {
      const brand = this.brands.find((b) => b.sid === m![1] && b.accountSid === account.accountSid);
      if (!brand) throw new HttpError(404, 20404, 'The requested resource was not found');
      if (brand.status === 'PENDING') {
        const decision = this.brandDecision(brand.customerProfileBundleSid);
        brand.status = decision.status;
        brand.failureReason = decision.failureReason;
      }
      return { status: 200, body: this.brandResource(brand) };
    }
    throw new HttpError(404, 20404, 'The requested resource was not found');
  }

  private brandResource(brand: Brand): Record<string, unknown> {
    return {
      sid: brand.sid,
      account_sid: brand.accountSid,
      customer_profile_bundle_sid: brand.customerProfileBundleSid,
      a2p_profile_bundle_sid: brand.a2pProfileBundleSid,
      brand_type: brand.brandType,
      status: brand.status,
      failure_reason: brand.failureReason,
      errors: [],
    };
  }

  private createCall(accountSid: string, params: Params, multi: Record<string, string[]>): EmulatedCall {
    if (!params.To || !params.From) throw new HttpError(400, 21201, 'To and From are required');
    if (!params.Twiml && !params.Url) throw new HttpError(400, 21205, 'Url or Twiml is required');
    if (params.Twiml && params.Twiml.length > 4000) throw new HttpError(400, 21206, 'Twiml is too long');
    const script = this.scripts.get(params.To) ?? this.defaultScript;
    const call = new EmulatedCall('outbound-api', accountSid, params.To, params.From, script, {
      ...(params.StatusCallback ? { status: params.StatusCallback } : {}),
      events: multi.StatusCallbackEvent ?? [],
      ...(params.AsyncAmd === 'true' && params.AsyncAmdStatusCallback ? { amd: params.AsyncAmdStatusCallback } : {}),
      timeoutS: Number(params.Timeout ?? 60),
    });
    if (params.Twiml) call.twiml.push(params.Twiml);
    this.calls.push(call);
    // After the REST reply is on its way, as Twilio does.
    setImmediate(() => void this.progress(call));
    return call;
  }

  private updateCall(call: EmulatedCall, params: Params): void {
    if (params.Status === 'canceled') {
      if (call.status !== 'queued' && call.status !== 'ringing') {
        throw new HttpError(400, 21220, 'Call is not in a cancelable state');
      }
      this.setStatus(call, 'canceled');
      return;
    }
    if (params.Status === 'completed') {
      if (call.status === 'queued' || call.status === 'ringing') {
        this.setStatus(call, 'canceled');
        return;
      }
      if (call.status !== 'in-progress') throw new HttpError(400, 21220, 'Call is not in-progress');
      this.endStream(call);
      this.setStatus(call, 'completed');
      return;
    }
    if (params.Twiml) {
      if (call.status !== 'in-progress') throw new HttpError(400, 21220, 'Call is not in-progress');
      call.twiml.push(params.Twiml);
      // New TwiML replaces the running one: the stream ends.
      this.endStream(call);
      this.runTwiml(call, params.Twiml);
    }
  }

  // ---- call progress ---------------------------------------------------------------------------

  private final(call: EmulatedCall): boolean {
    return ['completed', 'busy', 'no-answer', 'failed', 'canceled'].includes(call.status);
  }

  private setStatus(call: EmulatedCall, status: string): void {
    if (this.final(call)) return;
    call.status = status;
    call.statuses.push(status);
    const event = status === 'in-progress' ? 'answered' : this.final(call) ? 'completed' : status;
    if (status === 'in-progress') call.answeredAt = performance.now();
    if (call.callbacks.status && call.callbacks.events.includes(event)) {
      const url = call.callbacks.status;
      const params: Params = {
        CallSid: call.sid,
        AccountSid: call.accountSid,
        From: call.from,
        To: call.to,
        CallStatus: status,
        Direction: call.direction,
        ApiVersion: '2010-04-01',
        CallbackSource: 'call-progress-events',
        SequenceNumber: String(call.callbackSeq++),
        Timestamp: new Date().toUTCString(),
        ...(status === 'failed' ? { ErrorCode: '32009' } : {}),
        ...(status === 'completed'
          ? { CallDuration: String(call.answeredAt ? Math.round((performance.now() - call.answeredAt) / 1000) : 0) }
          : {}),
      };
      const delay = call.script.callbackDelayMs?.[status];
      // Not one of the call's timers: a delayed callback is still delivered after the call ends.
      if (delay) setTimeout(() => void this.post(url, params), delay);
      else void this.post(url, params);
    }
    if (this.final(call)) call.finish();
  }

  private later(call: EmulatedCall, ms: number, run: () => void): void {
    call.timers.push(setTimeout(run, ms));
  }

  private async progress(call: EmulatedCall): Promise<void> {
    const script = call.script;
    this.setStatus(call, 'initiated');
    this.setStatus(call, 'ringing');
    const outcome = script.outcome ?? 'answer';
    const ring =
      outcome === 'no-answer'
        ? Math.min(script.ringMs ?? Infinity, call.callbacks.timeoutS * 1000)
        : (script.ringMs ?? 100);
    this.later(call, ring, () => {
      if (this.final(call)) return;
      if (outcome !== 'answer') return this.setStatus(call, outcome);
      this.setStatus(call, 'in-progress');
      if (call.callbacks.amd && script.answeredBy) {
        const amd = call.callbacks.amd;
        this.later(call, script.amdDelayMs ?? 300, () => {
          if (call.status !== 'in-progress') return;
          void this.post(amd, {
            CallSid: call.sid,
            AccountSid: call.accountSid,
            AnsweredBy: script.answeredBy!,
            MachineDetectionDuration: String(script.amdDelayMs ?? 300),
          });
        });
      }
      const run = () => this.runTwiml(call, call.twiml[0] ?? '');
      if (script.streamDelayMs) this.later(call, script.streamDelayMs, () => call.status === 'in-progress' && run());
      else run();
    });
  }

  private runTwiml(call: EmulatedCall, xml: string): void {
    const verb = parseTwiml(xml);
    if (verb.verb === 'stream') {
      if (call.status !== 'in-progress') call.status = 'in-progress';
      this.openStream(call, verb.url, verb.parameters);
    } else if (verb.verb === 'dial') {
      call.dialed = { number: verb.number, callerId: verb.callerId };
      this.dial(call, verb);
    } else if (verb.verb === 'reject') {
      call.status = 'busy';
      call.statuses.push('busy');
      call.finish();
    } else {
      this.setStatus(call, 'completed');
    }
  }

  /**
   * `<Dial>`: rings the number as scripted (its script in `scripts`, else `defaultScript`). An
   * answer is told to the `<Number>`'s statusCallback (CallStatus in-progress) and bridges the two
   * until the target hangs up (its hangupAfterMs, default 50 ms); then, or at once when the target
   * is busy, does not answer or fails, the Dial's action URL gets the DialCallStatus and its TwiML
   * runs (without an action URL the call ends).
   */
  private dial(call: EmulatedCall, verb: Extract<TwimlVerb, { verb: 'dial' }>): void {
    const script = this.scripts.get(verb.number) ?? this.defaultScript;
    const outcome = script.outcome ?? 'answer';
    const childSid = sid('CA');
    const params = (extra: Params): Params => ({
      AccountSid: call.accountSid,
      From: call.from,
      To: call.to,
      Direction: call.direction,
      ApiVersion: '2010-04-01',
      ...extra,
    });
    const over = (dialStatus: string) => {
      if (this.final(call)) return;
      if (!verb.action) return this.setStatus(call, 'completed');
      void this.post(
        verb.action,
        params({ CallSid: call.sid, CallStatus: call.status, DialCallStatus: dialStatus, DialCallSid: childSid }),
      ).then((reply) => {
        if (this.final(call)) return;
        if (reply.status === 200 && reply.body.includes('<Response')) {
          call.twiml.push(reply.body);
          this.runTwiml(call, reply.body);
        } else this.setStatus(call, 'completed');
      });
    };
    // Dial's default timeout: 30 s of ringing.
    const ring = outcome === 'no-answer' ? Math.min(script.ringMs ?? 30_000, 30_000) : (script.ringMs ?? 100);
    this.later(call, ring, () => {
      if (outcome !== 'answer') return over(outcome);
      const answered = verb.numberCallback;
      if (answered?.events.includes('answered')) {
        void this.post(
          answered.url,
          params({ CallSid: childSid, ParentCallSid: call.sid, CallStatus: 'in-progress', To: verb.number }),
        );
      }
      this.later(call, script.hangupAfterMs ?? 50, () => over('completed'));
    });
  }

  // ---- media stream ----------------------------------------------------------------------------

  private openStream(call: EmulatedCall, url: string, parameters: Record<string, string>): void {
    const socket = new WebSocket(url);
    call.socket = socket;
    call.parameters = parameters;
    call.streamSid = sid('MZ');
    const send = (message: object) => {
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
    };
    socket.on('open', () => {
      call.streamStartedAt = performance.now();
      send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
      send({
        event: 'start',
        sequenceNumber: String(++call.seq),
        start: {
          accountSid: call.accountSid,
          streamSid: call.streamSid,
          callSid: call.sid,
          tracks: ['inbound'],
          mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
          customParameters: parameters,
        },
        streamSid: call.streamSid,
      });
      this.streamAudio(call, socket, send);
      for (const press of call.script.dtmf ?? []) {
        this.later(call, press.atMs, () =>
          send({
            event: 'dtmf',
            streamSid: call.streamSid,
            sequenceNumber: String(++call.seq),
            dtmf: { track: 'inbound_track', digit: press.digit },
          }),
        );
      }
      // The hang-up of this stream's script: not of a stream that replaced it (after a failed Dial).
      if (call.script.hangupAfterMs !== undefined)
        this.later(call, call.script.hangupAfterMs, () => call.socket === socket && this.hangUp(call));
    });
    socket.on('message', (data) => this.fromUs(call, String(data), send));
    socket.on('close', (code, reason) => {
      call.socketClosed = { code, reason: reason.toString() };
      // Our side closed the stream: with nothing after <Connect>, Twilio ends the call.
      if (call.socket === socket && call.status === 'in-progress') this.setStatus(call, 'completed');
    });
    socket.on('error', () => undefined);
  }

  /** The caller's audio: the scripted speech at its times, silence between, one frame every 20 ms. */
  private streamAudio(call: EmulatedCall, socket: WebSocket, send: (message: object) => void): void {
    const speech = (call.script.say ?? [])
      .map((part) => ({ atMs: part.atMs, pcm: 'pcm' in part ? part.pcm : wavToPcm8k(part.wav) }))
      .sort((a, b) => a.atMs - b.atMs);
    let frame = 0;
    const frameAt = (index: number): Buffer => {
      const startMs = index * FRAME_MS;
      const pcm = new Int16Array(FRAME_SAMPLES);
      let any = false;
      for (const part of speech) {
        const offset = Math.round(((startMs - part.atMs) * 8000) / 1000);
        if (offset + FRAME_SAMPLES <= 0 || offset >= part.pcm.length) continue;
        for (let i = 0; i < FRAME_SAMPLES; i++) {
          const j = offset + i;
          if (j >= 0 && j < part.pcm.length) {
            pcm[i] = part.pcm[j]!;
            any = true;
          }
        }
      }
      return any ? encodeMulaw(pcm) : Buffer.alloc(FRAME_SAMPLES, MULAW_SILENCE);
    };
    const tick = () => {
      if (call.socket !== socket || socket.readyState !== WebSocket.OPEN || call.status !== 'in-progress') return;
      // Catch up on every frame due: real time, whatever the timer's slack.
      const due = Math.floor(call.nowMs() / FRAME_MS);
      while (frame <= due) {
        send({
          event: 'media',
          sequenceNumber: String(++call.seq),
          media: {
            track: 'inbound',
            chunk: String(frame + 1),
            timestamp: String(frame * FRAME_MS),
            payload: frameAt(frame).toString('base64'),
          },
          streamSid: call.streamSid,
        });
        frame++;
      }
      call.timers.push(setTimeout(tick, FRAME_MS));
    };
    tick();
  }

  /** A message from Openline on the stream. */
  private fromUs(call: EmulatedCall, raw: string, send: (message: object) => void): void {
    let message: { event?: string; streamSid?: string; media?: { payload?: string }; mark?: { name?: string } };
    try {
      message = JSON.parse(raw) as typeof message;
    } catch {
      return;
    }
    // Twilio ignores messages without the stream's sid.
    if (message.streamSid !== call.streamSid) return;
    const now = call.nowMs();
    switch (message.event) {
      case 'media': {
        const payload = Buffer.from(message.media?.payload ?? '', 'base64');
        const playAtMs = Math.max(now, call.playedUntilMs);
        call.playedUntilMs = playAtMs + (payload.length / 8000) * 1000;
        call.frames.push({ payload, arrivedMs: now, playAtMs, dropped: false });
        return;
      }
      case 'mark': {
        const name = message.mark?.name ?? '';
        const echo = () => {
          call.pendingMarks = call.pendingMarks.filter((m) => m.timer !== timer);
          call.marksEchoed.push(name);
          send({ event: 'mark', sequenceNumber: String(++call.seq), streamSid: call.streamSid, mark: { name } });
        };
        const timer = setTimeout(echo, Math.max(0, call.playedUntilMs - now));
        call.pendingMarks.push({ name, timer });
        return;
      }
      case 'clear': {
        call.clears++;
        call.clearedAtMs.push(now);
        for (const f of call.frames) if (f.playAtMs >= now) f.dropped = true;
        call.playedUntilMs = now;
        // Twilio sends back every mark still waiting.
        const pending = call.pendingMarks;
        call.pendingMarks = [];
        for (const m of pending) {
          clearTimeout(m.timer);
          call.marksEchoed.push(m.name);
          send({
            event: 'mark',
            sequenceNumber: String(++call.seq),
            streamSid: call.streamSid,
            mark: { name: m.name },
          });
        }
        return;
      }
      default:
        return;
    }
  }

  private endStream(call: EmulatedCall): void {
    const socket = call.socket;
    if (!socket) return;
    call.socket = undefined;
    if (socket.readyState === WebSocket.OPEN) {
      socket.send(
        JSON.stringify({
          event: 'stop',
          sequenceNumber: String(++call.seq),
          stop: { accountSid: call.accountSid, callSid: call.sid },
          streamSid: call.streamSid,
        }),
      );
      socket.close(1000);
    }
  }

  // ---- webhooks --------------------------------------------------------------------------------

  /** POSTs a signed form to one of Openline's webhook URLs; returns its status and body. */
  private async post(url: string, params: Params, authToken?: string): Promise<{ status: number; body: string }> {
    const account = this.accounts.find((a) => a.accountSid === params.AccountSid);
    const token = authToken ?? account?.authToken ?? '';
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-twilio-signature': twilioSignature(token, url, params),
        },
        body: new URLSearchParams(params).toString(),
      });
      const body = await response.text();
      if (response.status >= 400) this.webhookFailures.push({ url, status: response.status });
      return { status: response.status, body };
    } catch {
      this.webhookFailures.push({ url, status: 0 });
      return { status: 0, body: '' };
    }
  }
}
