import { isKnownVoice } from './domain/voices.js';
import fs from 'node:fs';
import path from 'node:path';
import { parseTrunk, type SipTrunk } from './domain/sip-trunk.js';
import { TTS_VENDORS, type TtsVendor } from './domain/voices.js';
import { ELEVENLABS_OUTPUT_FORMATS, type ElevenLabsOutputFormat } from './providers/tts/elevenlabs.js';
import { DEFAULT_TWILIO_API_URL } from './carriers/twilio/client.js';

/** Every setting Openline reads from the environment, validated once at start-up. */
export interface Config {
  /** TCP port of the HTTP server. Default 8080. */
  port: number;
  /** Interface to bind. Default 0.0.0.0. */
  host: string;
  /** Folder for the SQLite database, the generated master key and recordings. Default ./data. */
  dataDir: string;
  /** pino level. Default info. */
  logLevel: string;
  /** When set, an account with this API key exists after start-up. */
  apiKey: string | undefined;
  /** URL carriers reach this server at; defaults to http://localhost:PORT. */
  publicUrl: string;
  /** postgres:// URL: storage and the job queue move to PostgreSQL. */
  databaseUrl: string | undefined;
  /** Lets outbound requests reach loopback and private addresses (development and tests only). */
  allowPrivateUrls: boolean;
  /**
   * OPENLINE_VOICE_ALIASES: voices of the hosted service (ids or names, lower case) mapped to a
   * voice of this server (`ravi=mason,<uuid>=maya`), so a client's favourite voice gets a chosen one.
   */
  voiceAliases: Map<string, string>;
  /** 32-byte key (hex or base64) for secrets at rest; generated into DATA_DIR when unset. */
  masterKey: string | undefined;
  /** Largest accepted request body in bytes. Default 1 MiB. */
  bodyLimitBytes: number;
  /**
   * OPENLINE_REQUEST_TIMEOUT_S: the longest a client may take to send a whole request, headers
   * and body (408 beyond). Default 120 s. Websockets and event streams are not limited by it.
   */
  requestTimeoutMs: number;
  /** The longest a client may take to send a request's headers: 20 s, or the request timeout if shorter. */
  headersTimeoutMs: number;
  /** Bearer token for GET /metrics; without one, /metrics answers on loopback only. */
  metricsToken: string | undefined;
  /** Requests a minute each API key may make (429 beyond). Default 3000; 0 turns the limit off. */
  rateLimitPerMinute: number;
  /** On SIGTERM, how long live calls may go on before they are ended. Default 30 s. */
  drainSeconds: number;
  /** Calls at once per account (more wait queued), unless the account has its own; 0: no limit (default). */
  maxConcurrentCalls: number;
  /** Price per minute of sandbox calls in USD. Default 0. */
  sandboxPricePerMinute: number;
  /** Host reported as endpoint_url in call records; defaults to the public URL. */
  endpointUrl: string;
  /** Extra folders of sandbox persona files (OPENLINE_SANDBOX_PERSONAS, separated by ":"). */
  personaDirs: string[];
  /** Seconds before a sandbox A2P registration is decided. Default 60. */
  sandboxA2pDelaySeconds: number;
  /** Sandbox calls run on real audio (OPENLINE_SANDBOX_AUDIO=1; docs/sandbox.md "Audio mode"). Default false. */
  sandboxAudio: boolean;
  /** Run the call engine and job workers in this process. Default true. */
  workers: boolean;
  /** How many times faster than real time the service's clock runs (tests and demos). Default 1. */
  timeScale: number;
  /**
   * OPENLINE_AUDIO_AHEAD_MS: audio each call keeps at the carrier beyond the frame playing, so a
   * busy moment of the server or network jitter shorter than that leaves no gap (src/media/pacer.ts).
   * Whole 20 ms frames, 0-200. Default 40.
   */
  audioAheadMs: number;
  /**
   * The language model (CONTRACT.md section 7): set when OPENLINE_LLM_BASE_URL or OPENAI_API_KEY
   * is; undefined keeps the offline model.
   */
  llm: LlmConfig | undefined;
  /** Speech providers (src/providers/speech.ts): the TTS vendor and its settings, Deepgram STT. */
  speech: SpeechConfig;
  /** The server's own Twilio account (TWILIO_ACCOUNT_SID + TWILIO_AUTH_TOKEN); undefined: sandbox unless BYO. */
  twilio: { accountSid: string; authToken: string } | undefined;
  /** OPENLINE_TWILIO_API_URL: Twilio's REST origin. Default https://api.twilio.com (tests: the emulator). */
  twilioApiUrl: string;
  /** TWILIO_PHONE_NUMBER: caller id of Twilio calls that name no `from`. */
  twilioPhoneNumber: string | undefined;
  /** SIP (docs/sip.md; CONTRACT.md section 1). */
  sip: SipConfig;
  /** Web calls' WebRTC (docs/web-calls.md). */
  webrtc: WebRtcConfig;
}

export interface WebRtcConfig {
  /**
   * OPENLINE_WEBRTC_ICE_SERVERS: comma-separated stun: and turn: URLs; TURN takes
   * OPENLINE_WEBRTC_TURN_USERNAME and OPENLINE_WEBRTC_TURN_PASSWORD.
   */
  iceServers: { urls: string; username?: string; credential?: string }[];
  /** OPENLINE_WEBRTC_PORTS (`min-max`): the UDP ports ICE binds; default any free port. */
  ports?: { min: number; max: number };
  /** OPENLINE_WEBRTC_PUBLIC_ADDRESS: the host's address outside a one-to-one NAT, announced to browsers. */
  publicAddress?: string;
}

export interface SipConfig {
  /** OPENLINE_SIP_TRUNK: the server-wide trunk outbound calls go through. */
  trunk: SipTrunk | undefined;
  /** OPENLINE_SIP_LISTEN (`host:port`, default 0.0.0.0:5060); null: `off`, no SIP at all. */
  listen: { host: string; port: number } | null;
  /** OPENLINE_SIP_PUBLIC_ADDRESS: the address in Via, Contact and SDP (behind NAT). */
  publicAddress: string | undefined;
  /** OPENLINE_RTP_PORTS (`min-max`, default 10000-20000). */
  rtpPorts: { min: number; max: number };
  /**
   * OPENLINE_SIP_ALLOW: addresses (or CIDR ranges, or `*`) whose INVITEs are taken, besides
   * loopback and the trunk's own host (an account's own trunk is allowed for its numbers: docs/sip.md).
   */
  allow: string[];
  /**
   * SIP over TLS: OPENLINE_SIP_TLS_CERT and OPENLINE_SIP_TLS_KEY (PEM files: the TLS port listens
   * only with both), OPENLINE_SIP_TLS_PORT (default 5061), OPENLINE_SIP_TLS_CA (a PEM file of the
   * authorities trusted for outbound TLS; default the system's). Paths: read when SIP starts.
   */
  tls: { certFile?: string; keyFile?: string; caFile?: string; port: number };
  /** SIP's T1 in ms (RFC 3261 section 17.1.1.1), from which its other timers follow. Default 500; no setting, tests shorten it. */
  t1Ms?: number;
  /** How long a call's RTP may stay silent (while the far end should send) before the call ends. Default 30 s; no setting, tests shorten it. */
  rtpTimeoutMs?: number;
}

/** Text-to-speech and speech-to-text vendors, read by createSpeech. */
export interface SpeechConfig {
  /** OPENLINE_TTS: espeak (local, default), openai or elevenlabs. */
  tts: TtsVendor;
  /** OpenAI speech: OPENAI_API_KEY, OPENLINE_TTS_BASE_URL, OPENLINE_TTS_MODEL (default gpt-4o-mini-tts). */
  openai: { apiKey: string | undefined; baseUrl: string | undefined; model: string };
  /** ELEVENLABS_API_KEY, OPENLINE_ELEVENLABS_URL, OPENLINE_ELEVENLABS_MODEL, OPENLINE_ELEVENLABS_FORMAT. */
  elevenlabs: {
    apiKey: string | undefined;
    baseUrl: string | undefined;
    model: string;
    outputFormat: ElevenLabsOutputFormat;
  };
  /** Set when DEEPGRAM_API_KEY or OPENLINE_DEEPGRAM_URL is; undefined = no streaming STT. */
  deepgram: { apiKey: string | undefined; baseUrl: string | undefined; model: string } | undefined;
}

/** Any OpenAI-compatible chat completions endpoint (OpenAI, Groq, Ollama, vLLM, ...). */
export interface LlmConfig {
  /** OPENAI_API_KEY; local servers (Ollama, llama.cpp) need none. */
  apiKey: string | undefined;
  /** OPENLINE_LLM_BASE_URL, e.g. http://localhost:11434/v1; undefined = api.openai.com. */
  baseUrl: string | undefined;
  /** Model ids for the seed's model names (OPENLINE_LLM_MODEL_BASE, _ENHANCED, _TURBO). */
  models: { base: string; enhanced: string; turbo: string };
  /** OPENLINE_LLM_TIMEOUT_MS: longest wait for a reply's first word before the caller hears a fallback line. */
  timeoutMs: number;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function voiceAliases(env: Env): Map<string, string> {
  const name = 'OPENLINE_VOICE_ALIASES';
  const aliases = new Map<string, string>();
  for (const pair of (env[name] ?? '').split(',')) {
    if (pair.trim() === '') continue;
    const [alias, target, extra] = pair.split('=').map((x) => x.trim());
    if (!alias || !target || extra !== undefined) throw new ConfigError(name, `"${pair}" must be alias=voice`);
    if (!isKnownVoice(target))
      throw new ConfigError(name, `"${target}" is not a voice of this server (GET /v1/voices)`);
    aliases.set(alias.toLowerCase(), target);
  }
  return aliases;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}`);
  return value;
}

function decimal(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new ConfigError(name, `must be a non-negative number, got "${raw}"`);
  return value;
}

function boolean(env: Env, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return false;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, 'must be a URL');
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
  }
  return raw.replace(/\/+$/, '');
}

function modelId(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/\s/.test(raw) || raw.length > 200)
    throw new ConfigError(name, `must be a model id without spaces, got "${raw}"`);
  return raw;
}

/** The LLM settings, or undefined when neither a base URL nor an API key is set. */
function llmConfig(env: Env): LlmConfig | undefined {
  const baseUrl = url(env, 'OPENLINE_LLM_BASE_URL', ['http:', 'https:']);
  const apiKey = env.OPENAI_API_KEY || undefined;
  const model = modelId(env, 'OPENLINE_LLM_MODEL', 'gpt-4o-mini');
  const models = {
    base: modelId(env, 'OPENLINE_LLM_MODEL_BASE', model),
    enhanced: modelId(env, 'OPENLINE_LLM_MODEL_ENHANCED', model),
    turbo: modelId(env, 'OPENLINE_LLM_MODEL_TURBO', model),
  };
  const timeoutMs = integer(env, 'OPENLINE_LLM_TIMEOUT_MS', 8000, 100, 600_000);
  if (baseUrl === undefined && apiKey === undefined) return undefined;
  return { apiKey, baseUrl, models, timeoutMs };
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(values as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${values.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

/** The speech settings; the chosen TTS vendor must have its key (or, for OpenAI, a local server). */
function speechConfig(env: Env): SpeechConfig {
  const tts = oneOf(env, 'OPENLINE_TTS', TTS_VENDORS, 'espeak');
  const openai = {
    apiKey: env.OPENAI_API_KEY || undefined,
    baseUrl: url(env, 'OPENLINE_TTS_BASE_URL', ['http:', 'https:']),
    model: modelId(env, 'OPENLINE_TTS_MODEL', 'gpt-4o-mini-tts'),
  };
  const elevenlabs = {
    apiKey: env.ELEVENLABS_API_KEY || undefined,
    baseUrl: url(env, 'OPENLINE_ELEVENLABS_URL', ['http:', 'https:']),
    model: modelId(env, 'OPENLINE_ELEVENLABS_MODEL', 'eleven_flash_v2_5'),
    outputFormat: oneOf(env, 'OPENLINE_ELEVENLABS_FORMAT', ELEVENLABS_OUTPUT_FORMATS, 'pcm_16000'),
  };
  if (tts === 'openai' && openai.apiKey === undefined && openai.baseUrl === undefined) {
    throw new ConfigError('OPENAI_API_KEY', 'is required when OPENLINE_TTS=openai (or set OPENLINE_TTS_BASE_URL)');
  }
  if (tts === 'elevenlabs' && elevenlabs.apiKey === undefined) {
    throw new ConfigError('ELEVENLABS_API_KEY', 'is required when OPENLINE_TTS=elevenlabs');
  }
  const deepgramKey = env.DEEPGRAM_API_KEY || undefined;
  const deepgramUrl = url(env, 'OPENLINE_DEEPGRAM_URL', ['wss:', 'ws:', 'https:', 'http:']);
  const deepgramModel = modelId(env, 'OPENLINE_DEEPGRAM_MODEL', 'nova-2-phonecall');
  const deepgram =
    deepgramKey === undefined && deepgramUrl === undefined
      ? undefined
      : { apiKey: deepgramKey, baseUrl: deepgramUrl, model: deepgramModel };
  return { tts, openai, elevenlabs, deepgram };
}

/** The server's Twilio credentials: both variables or neither. */
function twilioAccount(env: Env): Config['twilio'] {
  const accountSid = env.TWILIO_ACCOUNT_SID || undefined;
  const authToken = env.TWILIO_AUTH_TOKEN || undefined;
  if (accountSid === undefined && authToken === undefined) return undefined;
  if (accountSid === undefined) throw new ConfigError('TWILIO_ACCOUNT_SID', 'must be set when TWILIO_AUTH_TOKEN is');
  if (authToken === undefined) throw new ConfigError('TWILIO_AUTH_TOKEN', 'must be set when TWILIO_ACCOUNT_SID is');
  if (!/^AC[0-9a-fA-F]{32}$/.test(accountSid)) {
    throw new ConfigError('TWILIO_ACCOUNT_SID', 'must be "AC" followed by 32 hexadecimal characters');
  }
  return { accountSid, authToken };
}

function twilioPhoneNumber(env: Env): string | undefined {
  const raw = env.TWILIO_PHONE_NUMBER;
  if (raw === undefined || raw === '') return undefined;
  if (!/^\+[1-9]\d{6,14}$/.test(raw))
    throw new ConfigError('TWILIO_PHONE_NUMBER', 'must be an E.164 number, e.g. +14155550123');
  return raw;
}

/** A `min-max` port range within 1024-65535, or a ConfigError naming the variable. */
function portRange(env: Env, name: string, fallback: string): { min: number; max: number } {
  const raw = env[name] || fallback;
  const ports = /^(\d+)-(\d+)$/.exec(raw);
  const min = Number(ports?.[1]);
  const max = Number(ports?.[2]);
  if (!ports || min < 1024 || max > 65535 || max - min < 1)
    throw new ConfigError(name, `must be a range min-max within 1024-65535, got "${raw}"`);
  return { min, max };
}

function webrtcConfig(env: Env): WebRtcConfig {
  const username = env.OPENLINE_WEBRTC_TURN_USERNAME || undefined;
  const credential = env.OPENLINE_WEBRTC_TURN_PASSWORD || undefined;
  const iceServers = (env.OPENLINE_WEBRTC_ICE_SERVERS ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)
    .map((urls) => {
      if (!/^(stun|turns?):[^\s]+$/i.test(urls))
        throw new ConfigError('OPENLINE_WEBRTC_ICE_SERVERS', `"${urls}" is not a stun: or turn: URL`);
      return /^turns?:/i.test(urls)
        ? { urls, ...(username && { username }), ...(credential && { credential }) }
        : { urls };
    });
  const publicAddress = env.OPENLINE_WEBRTC_PUBLIC_ADDRESS || undefined;
  if (publicAddress !== undefined && !/^[0-9a-f.:]+$/i.test(publicAddress))
    throw new ConfigError('OPENLINE_WEBRTC_PUBLIC_ADDRESS', `must be an IP address, got "${publicAddress}"`);
  return {
    iceServers,
    ...(env.OPENLINE_WEBRTC_PORTS && { ports: portRange(env, 'OPENLINE_WEBRTC_PORTS', '') }),
    ...(publicAddress && { publicAddress }),
  };
}

function sipConfig(env: Env): SipConfig {
  let trunk: SipTrunk | undefined;
  if (env.OPENLINE_SIP_TRUNK) {
    const parsed = parseTrunk(env.OPENLINE_SIP_TRUNK);
    if (typeof parsed === 'string') throw new ConfigError('OPENLINE_SIP_TRUNK', parsed);
    trunk = parsed;
  }
  const rawListen = env.OPENLINE_SIP_LISTEN || '0.0.0.0:5060';
  let listen: SipConfig['listen'] = null;
  if (rawListen !== 'off') {
    const match = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(rawListen);
    if (!match || Number(match[2]) > 65535)
      throw new ConfigError('OPENLINE_SIP_LISTEN', `must be host:port (e.g. 0.0.0.0:5060) or off, got "${rawListen}"`);
    listen = { host: match[1]!.replace(/^\[|\]$/g, ''), port: Number(match[2]) };
  }
  const allow = (env.OPENLINE_SIP_ALLOW ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  for (const entry of allow)
    if (entry !== '*' && !/^[0-9a-f.:]+(\/\d{1,3})?$/i.test(entry))
      throw new ConfigError('OPENLINE_SIP_ALLOW', `"${entry}" is not an address, a CIDR range or *`);
  const pem = (name: string, kind: string): string | undefined => {
    const file = env[name];
    if (!file) return undefined;
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      throw new ConfigError(name, `cannot read "${file}"`);
    }
    if (!text.includes('-----BEGIN')) throw new ConfigError(name, `"${file}" is not a PEM file (${kind})`);
    return file;
  };
  const certFile = pem('OPENLINE_SIP_TLS_CERT', 'a certificate');
  const keyFile = pem('OPENLINE_SIP_TLS_KEY', 'a private key');
  const caFile = pem('OPENLINE_SIP_TLS_CA', 'certificates');
  if ((certFile === undefined) !== (keyFile === undefined))
    throw new ConfigError(
      certFile ? 'OPENLINE_SIP_TLS_KEY' : 'OPENLINE_SIP_TLS_CERT',
      'SIP over TLS needs both OPENLINE_SIP_TLS_CERT and OPENLINE_SIP_TLS_KEY',
    );
  return {
    trunk,
    listen,
    publicAddress: env.OPENLINE_SIP_PUBLIC_ADDRESS || undefined,
    rtpPorts: portRange(env, 'OPENLINE_RTP_PORTS', '10000-20000'),
    allow,
    tls: {
      ...(certFile && { certFile }),
      ...(keyFile && { keyFile }),
      ...(caFile && { caFile }),
      port: integer(env, 'OPENLINE_SIP_TLS_PORT', 5061, 1, 65535),
    },
  };
}

/** Reads and validates the environment. Throws ConfigError naming the variable on a bad value. */
/** The longest a client may take to send a request's headers (a slowloris sends them a byte at a time). */
const HEADERS_TIMEOUT_MS = 20_000;

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '0.0.0.0';
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
  const apiKey = env.OPENLINE_API_KEY || undefined;
  if (apiKey !== undefined && apiKey.length < 16) {
    throw new ConfigError('OPENLINE_API_KEY', 'must be at least 16 characters long');
  }
  const masterKey = env.OPENLINE_MASTER_KEY || undefined;
  const publicUrl = url(env, 'OPENLINE_PUBLIC_URL', ['http:', 'https:']) ?? `http://localhost:${port}`;
  const metricsToken = env.OPENLINE_METRICS_TOKEN || undefined;
  if (metricsToken !== undefined && metricsToken.length < 16) {
    throw new ConfigError('OPENLINE_METRICS_TOKEN', 'must be at least 16 characters long');
  }
  const requestTimeoutS = integer(env, 'OPENLINE_REQUEST_TIMEOUT_S', 120, 1, 3600);
  const twilio = twilioAccount(env);
  const twilioApiUrl = url(env, 'OPENLINE_TWILIO_API_URL', ['http:', 'https:']) ?? DEFAULT_TWILIO_API_URL;
  // Twilio itself opens media streams to wss:// URLs only (error 31922): over http:// (or the
  // localhost default, which it cannot reach anyway) every call would connect to silence.
  if (twilio && twilioApiUrl === DEFAULT_TWILIO_API_URL && !publicUrl.startsWith('https:')) {
    throw new ConfigError(
      'OPENLINE_PUBLIC_URL',
      'must be the https:// URL Twilio reaches Openline at when TWILIO_ACCOUNT_SID is set (Twilio streams call audio only to wss:// URLs)',
    );
  }
  return {
    port,
    host,
    dataDir: path.resolve(env.DATA_DIR || './data'),
    logLevel,
    apiKey,
    publicUrl,
    databaseUrl: url(env, 'OPENLINE_DATABASE_URL', ['postgres:', 'postgresql:']),
    allowPrivateUrls: boolean(env, 'OPENLINE_ALLOW_PRIVATE_URLS'),
    voiceAliases: voiceAliases(env),
    masterKey,
    bodyLimitBytes: integer(env, 'OPENLINE_BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    requestTimeoutMs: requestTimeoutS * 1000,
    headersTimeoutMs: Math.min(HEADERS_TIMEOUT_MS, requestTimeoutS * 1000),
    metricsToken,
    rateLimitPerMinute: integer(env, 'OPENLINE_RATE_LIMIT_PER_MINUTE', 3000, 0, 1_000_000),
    drainSeconds: integer(env, 'OPENLINE_DRAIN_S', 30, 0, 24 * 3600),
    maxConcurrentCalls: integer(env, 'OPENLINE_MAX_CONCURRENT_CALLS', 0, 0, 1_000_000),
    sandboxPricePerMinute: decimal(env, 'OPENLINE_SANDBOX_PRICE_PER_MINUTE', 0),
    endpointUrl: url(env, 'OPENLINE_ENDPOINT_URL', ['http:', 'https:']) ?? publicUrl,
    personaDirs: (env.OPENLINE_SANDBOX_PERSONAS ?? '')
      .split(':')
      .filter(Boolean)
      .map((dir) => path.resolve(dir)),
    sandboxA2pDelaySeconds: integer(env, 'OPENLINE_SANDBOX_A2P_DELAY_SECONDS', 60, 0, 365 * 24 * 3600),
    sandboxAudio: boolean(env, 'OPENLINE_SANDBOX_AUDIO'),
    workers:
      env.OPENLINE_WORKERS === undefined || env.OPENLINE_WORKERS === '' ? true : boolean(env, 'OPENLINE_WORKERS'),
    timeScale: integer(env, 'OPENLINE_TIME_SCALE', 1, 1, 10_000),
    audioAheadMs: Math.floor(integer(env, 'OPENLINE_AUDIO_AHEAD_MS', 40, 0, 200) / 20) * 20,
    llm: llmConfig(env),
    speech: speechConfig(env),
    twilio,
    twilioApiUrl,
    twilioPhoneNumber: twilioPhoneNumber(env),
    sip: sipConfig(env),
    webrtc: webrtcConfig(env),
  };
}
