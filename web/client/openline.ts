/**
 * Openline's browser client for web calls (docs/web-calls.md): talk to an agent, an inbound
 * number's agent or a pathway from a page, over WebRTC. Served by every Openline server at
 * /client/openline.js (an ES module), and importable from a bundler.
 *
 *   import { startWebCall } from 'https://openline.example.com/client/openline.js';
 *   const call = await startWebCall({ token });               // token: POST /v1/agents/{id}/authorize
 *   call.on('transcript', ({ role, text }) => console.log(role, text));
 *   call.stop();
 */

export type WebCallTarget =
  /** A token from POST /v1/agents/{id}/authorize: public pages, no API key. */
  | { token: string; requestData?: Record<string, unknown> }
  /** The API key (the dashboard, internal tools) and whom to talk to. */
  | {
      apiKey: string;
      agentId?: string;
      phoneNumber?: string;
      pathwayId?: string;
      pathwayVersion?: number;
      requestData?: Record<string, unknown>;
    };

export type WebCallOptions = WebCallTarget & {
  /** The Openline server's origin; default: the origin this script was loaded from. */
  server?: string;
  /** STUN/TURN servers for networks that need them; default none (the server's candidates suffice). */
  iceServers?: RTCIceServer[];
  /** Microphone constraints; default echo cancellation, noise suppression and gain control on. */
  audio?: MediaTrackConstraints;
  /** Where the agent's voice plays; default a hidden audio element added to the page. */
  audioElement?: HTMLAudioElement;
};

export interface WebCallEvents {
  /** The call is connected; callId is its id in the API (GET /v1/calls/{id}). */
  started: { callId: string };
  /** A finished line of the transcript: the caller's words, the agent's, or a phone menu's. */
  transcript: { role: 'user' | 'assistant' | 'robot'; text: string };
  /** The agent's voice began (or stopped) playing here. */
  agent_start_talking: Record<string, never>;
  agent_stop_talking: Record<string, never>;
  /** Something the person should know (e.g. the server has no speech recogniser). */
  notice: { code: string; message: string };
  /**
   * The call is over. Always the last event. `reason`: `local` (this page hung up), `remote` (the
   * agent or the server ended it), `network` (the server stopped answering: it is down, or the
   * network between them is); `message` says so in a sentence a page can show.
   */
  ended: { callId: string | null; reason: 'local' | 'remote' | 'network'; message: string };
}

/** What `ended` says for each reason. */
const ENDED_MESSAGES: Record<WebCallEvents['ended']['reason'], string> = {
  local: 'You hung up.',
  remote: 'The call ended.',
  network: 'The call ended: the connection to the server was lost.',
};

type Listener<K extends keyof WebCallEvents> = (event: WebCallEvents[K]) => void;

/** How loud (RMS of the analyser's samples, 0..1) the agent's audio must be to count as talking. */
const TALKING_LEVEL = 0.01;
/** How long the agent's audio must stay quiet before it counts as having stopped. */
const QUIET_MS = 400;
/**
 * The server says `heartbeat` on the data channel every second: this long with no message from it
 * means the server or the network between is gone, and the call ends (reason `network`) instead
 * of waiting for ICE to give up, which takes Chromium 15 s and more.
 */
const SERVER_SILENCE_MS = 3000;

/** The origin of the server this module was loaded from, for pages that load it from Openline. */
function moduleOrigin(): string | undefined {
  try {
    return new URL(import.meta.url).origin;
  } catch {
    return undefined;
  }
}

export class WebCall {
  /** The call's id in the API, once started. */
  callId: string | null = null;
  state: 'connecting' | 'active' | 'ended' = 'connecting';
  private readonly pc: RTCPeerConnection;
  private readonly channel: RTCDataChannel;
  private microphone: MediaStream | undefined;
  private readonly listeners = new Map<keyof WebCallEvents, Set<(event: never) => void>>();
  private readonly audio: HTMLAudioElement;
  private readonly ownsAudio: boolean;
  private meter: { context: AudioContext; timer: ReturnType<typeof setInterval> } | undefined;
  private talking = false;
  /** When the server's last data channel message arrived (performance.now()). */
  private lastMessage = 0;
  private liveness: ReturnType<typeof setInterval> | undefined;

  private constructor(private readonly options: WebCallOptions) {
    this.pc = new RTCPeerConnection({ iceServers: options.iceServers ?? [] });
    this.channel = this.pc.createDataChannel('openline');
    this.ownsAudio = !options.audioElement;
    this.audio = options.audioElement ?? document.createElement('audio');
    this.audio.autoplay = true;
    if (this.ownsAudio) {
      this.audio.hidden = true;
      document.body.append(this.audio);
    }
  }

  /** Asks for the microphone and connects the call; rejects with the server's error message. */
  static async start(options: WebCallOptions): Promise<WebCall> {
    const call = new WebCall(options);
    try {
      await call.connect();
    } catch (error) {
      call.finish('local');
      throw error;
    }
    return call;
  }

  on<K extends keyof WebCallEvents>(type: K, listener: Listener<K>): () => void {
    const set = this.listeners.get(type) ?? new Set();
    set.add(listener as (event: never) => void);
    this.listeners.set(type, set);
    return () => set.delete(listener as (event: never) => void);
  }

  /** True while the microphone is muted. */
  get muted(): boolean {
    return this.microphone?.getAudioTracks().every((t) => !t.enabled) ?? false;
  }

  /** Mutes (or unmutes) the microphone; the agent hears silence meanwhile. */
  mute(muted = true): void {
    for (const track of this.microphone?.getAudioTracks() ?? []) track.enabled = !muted;
  }

  /** Presses a key (0-9, *, #), as on a phone's keypad. */
  sendDtmf(digit: string): void {
    if (this.channel.readyState === 'open') this.channel.send(JSON.stringify({ type: 'dtmf', digit }));
  }

  /** Hangs up. */
  stop(): void {
    if (this.state === 'ended') return;
    if (this.channel.readyState === 'open') this.channel.send(JSON.stringify({ type: 'hangup' }));
    this.finish('local');
  }

  private emit<K extends keyof WebCallEvents>(type: K, event: WebCallEvents[K]): void {
    for (const listener of this.listeners.get(type) ?? []) (listener as Listener<K>)(event);
  }

  private async connect(): Promise<void> {
    this.microphone = await navigator.mediaDevices.getUserMedia({
      audio: this.options.audio ?? { echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
    for (const track of this.microphone.getAudioTracks()) this.pc.addTrack(track, this.microphone);
    this.pc.ontrack = (event) => {
      const stream = event.streams[0] ?? new MediaStream([event.track]);
      this.audio.srcObject = stream;
      void this.audio.play().catch(() => undefined);
      this.watchAgent(stream);
    };
    this.channel.onmessage = (event) => this.onMessage(String(event.data));
    // The server closes the connection after its `ended`; closed without one, the call is lost.
    this.channel.onclose = () => this.finish('network');
    this.pc.onconnectionstatechange = () => {
      if (this.pc.connectionState === 'failed') this.finish('network');
    };
    await this.pc.setLocalDescription(await this.pc.createOffer());
    await this.gathered();
    const server = (this.options.server ?? moduleOrigin() ?? location.origin).replace(/\/$/, '');
    const o = this.options;
    const body =
      'token' in o
        ? { token: o.token, sdp: this.pc.localDescription?.sdp, request_data: o.requestData }
        : {
            sdp: this.pc.localDescription?.sdp,
            agent_id: o.agentId,
            phone_number: o.phoneNumber,
            pathway_id: o.pathwayId,
            pathway_version: o.pathwayVersion,
            request_data: o.requestData,
          };
    const response = await fetch(`${server}/v1/web-calls`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...('apiKey' in o && { authorization: o.apiKey }) },
      body: JSON.stringify(body),
    });
    const answer = (await response.json().catch(() => ({}))) as {
      call_id?: string;
      sdp?: string;
      message?: string;
      errors?: string[];
    };
    if (!response.ok || !answer.sdp) {
      const detail = answer.errors?.length ? `: ${answer.errors.join('; ')}` : '';
      throw new Error(`${answer.message ?? `The server answered ${response.status}`}${detail}`);
    }
    this.callId = answer.call_id ?? null;
    await this.pc.setRemoteDescription({ type: 'answer', sdp: answer.sdp });
  }

  /** Waits for the browser's own candidates: the offer carries them all (the server does not trickle). */
  private gathered(): Promise<void> {
    if (this.pc.iceGatheringState === 'complete') return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, 2000);
      this.pc.addEventListener('icegatheringstatechange', () => {
        if (this.pc.iceGatheringState !== 'complete') return;
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private onMessage(text: string): void {
    this.lastMessage = performance.now();
    let message: { type?: string; [key: string]: unknown };
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      return;
    }
    switch (message.type) {
      case 'started':
        this.state = 'active';
        this.callId = String(message.call_id);
        this.emit('started', { callId: this.callId });
        break;
      case 'transcript':
        this.emit('transcript', {
          role: message.role as WebCallEvents['transcript']['role'],
          text: String(message.text),
        });
        break;
      case 'notice':
        this.emit('notice', { code: String(message.code), message: String(message.message) });
        break;
      case 'ended':
        this.finish('remote');
        break;
      case 'heartbeat':
        // A server that sends heartbeats is watched for them (an older one is not).
        this.liveness ??= setInterval(() => {
          if (performance.now() - this.lastMessage > SERVER_SILENCE_MS) this.finish('network');
        }, 500);
        break;
    }
  }

  /** Tells agent_start_talking / agent_stop_talking from the level of the audio that plays here. */
  private watchAgent(stream: MediaStream): void {
    if (this.meter || typeof AudioContext === 'undefined') return;
    const context = new AudioContext();
    const analyser = context.createAnalyser();
    analyser.fftSize = 512;
    context.createMediaStreamSource(stream).connect(analyser);
    const samples = new Float32Array(analyser.fftSize);
    let quietSince = 0;
    const timer = setInterval(() => {
      analyser.getFloatTimeDomainData(samples);
      let sum = 0;
      for (const s of samples) sum += s * s;
      const loud = Math.sqrt(sum / samples.length) > TALKING_LEVEL;
      const now = performance.now();
      if (loud) {
        quietSince = 0;
        if (!this.talking) {
          this.talking = true;
          this.emit('agent_start_talking', {});
        }
      } else if (this.talking) {
        quietSince ||= now;
        if (now - quietSince > QUIET_MS) {
          this.talking = false;
          this.emit('agent_stop_talking', {});
        }
      }
    }, 50);
    this.meter = { context, timer };
  }

  private finish(reason: WebCallEvents['ended']['reason']): void {
    if (this.state === 'ended') return;
    this.state = 'ended';
    clearInterval(this.liveness);
    if (this.meter) {
      clearInterval(this.meter.timer);
      void this.meter.context.close().catch(() => undefined);
    }
    if (this.talking) this.emit('agent_stop_talking', {});
    for (const track of this.microphone?.getTracks() ?? []) track.stop();
    this.pc.close();
    this.audio.srcObject = null;
    if (this.ownsAudio) this.audio.remove();
    this.emit('ended', { callId: this.callId, reason, message: ENDED_MESSAGES[reason] });
  }
}

/** Starts a web call: the microphone is asked for, the agent answers within a second. */
export function startWebCall(options: WebCallOptions): Promise<WebCall> {
  return WebCall.start(options);
}
