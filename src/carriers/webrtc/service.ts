import type { WebSocket } from 'ws';
import type { Services } from '../../services.js';
import { agentSettings, numberSettings } from '../../calls/inbound.js';
import { normalizeCallSettings, toolResolver, type CallRequest } from '../../schemas/call-request.js';
import { normalizePhone } from '../../domain/phone.js';
import { ApiError, notFound, validationError } from '../../errors.js';
import type { CallSettings } from '../../schemas/call.js';
import type { AudioLegFactory, CarrierLogger } from '../audio-legs.js';
import type { WebRtcConfig } from '../../config.js';
import type { MediaTransport } from '../../media/transport.js';
import { AgentSocketPeer } from './agent-socket.js';

/** Whom a web call talks to: a stored agent, one of the account's inbound numbers, or a pathway. */
export type WebCallTarget =
  { agentId: string } | { phoneNumber: string } | { pathwayId: string; pathwayVersion?: number };

export interface WebCallStart {
  accountId: string;
  target: WebCallTarget;
  /** Variables of the call ({{name}} in the prompt), as Send Call's request_data. */
  requestData?: Record<string, unknown>;
}

/** What the browser is told on the data channel (docs/web-calls.md). */
export type WebCallMessage =
  | { type: 'started'; call_id: string }
  | { type: 'transcript'; role: 'user' | 'assistant' | 'robot'; text: string }
  | { type: 'notice'; code: 'no_speech_recognizer'; message: string }
  | { type: 'ended'; call_id: string };

/** The browser's side of a web call: its audio, and the call's events told to it in its protocol's words. */
export interface WebCallPeer extends MediaTransport {
  send(message: WebCallMessage): void;
  /** The call could not start after the browser's side was made: it is told why, if it can be, and let go. */
  refuse(error: unknown): void;
  /**
   * Settles when what is sent reaches the browser (true), or when the peer stopped first (false);
   * the agent speaks only then. Absent: at once.
   */
  readonly connected?: Promise<boolean>;
}

/** Said (and shown) when the server has no speech recogniser: the caller would otherwise talk to nobody. */
export const NO_STT_NOTICE =
  'This server has no speech recogniser configured, so I cannot hear you. Set DEEPGRAM_API_KEY to talk to me.';

/**
 * Web calls (docs/web-calls.md): a browser talks to an agent, an inbound number's agent or a
 * pathway over WebRTC, or over the hosted web-agent SDKs' websocket. The call is an inbound call on the `web` carrier: the same engine, session,
 * audio leg (VAD, STT, TTS, barge-in, recording), transcripts, limits and post-call as a phone call.
 */
export class WebCalls {
  constructor(
    private readonly services: Pick<
      Services,
      | 'calls'
      | 'agents'
      | 'inbound'
      | 'pathways'
      | 'tools'
      | 'knowledge'
      | 'personas'
      | 'engine'
      | 'callEvents'
      | 'speech'
      | 'draining'
    >,
    private readonly audioLeg: AudioLegFactory,
    private readonly settings: WebRtcConfig,
    private readonly log?: CarrierLogger,
  ) {}

  /** A browser's WebRTC offer becomes a call (POST /v1/web-calls). Resolves with the SDP answer. */
  async start(input: WebCallStart & { offer: string }): Promise<{ callId: string; sdp: string }> {
    const { callId, sdp } = await this.begin(input, async () => {
      // WebRTC's stack (werift, with its DTLS and certificate code) is loaded by the first web call.
      const { NoCandidatesError, OfferError, WebRtcPeer } = await import('./peer.js');
      try {
        return await WebRtcPeer.answer(input.offer, this.settings);
      } catch (error) {
        if (error instanceof OfferError) throw validationError([error.message]);
        if (error instanceof NoCandidatesError) throw new ApiError('PROVIDER_UNAVAILABLE', error.message);
        throw error;
      }
    });
    return { callId, sdp };
  }

  /** A page's websocket in the hosted web-agent SDKs' protocol becomes a call (AgentSocketPeer). */
  async startSocket(input: WebCallStart, socket: WebSocket, sampleRate: number): Promise<{ callId: string }> {
    return this.begin(input, async () => ({ peer: new AgentSocketPeer(socket, sampleRate) }));
  }

  /**
   * Sets up a call: the target's settings are checked first, then `connect` makes the browser's
   * side (its result passed back), then the call is created, admitted and started.
   */
  private async begin<T extends { peer: WebCallPeer }>(
    input: WebCallStart,
    connect: () => Promise<T>,
  ): Promise<T & { callId: string }> {
    if (this.services.draining) throw new ApiError('PROVIDER_UNAVAILABLE', 'This server is shutting down');
    const { settings, label } = await this.targetSettings(input.accountId, input.target);
    const errors: string[] = [];
    const normalized = await normalizeCallSettings(
      { ...settings, ...(input.requestData && { request_data: input.requestData }) },
      toolResolver(this.services, input.accountId),
      errors,
      { requirePhone: false, requireTask: false },
    );
    if (errors.length > 0) throw validationError(errors);
    const noStt = this.services.speech.stt === null;
    const request: CallRequest = {
      ...normalized,
      phone_number: '',
      from: null,
      // Without a recogniser the caller would talk to nobody: the agent says so first, and words
      // it cannot recognise never cut that short (a voice alone would stop it mid-notice for good).
      ...(noStt && {
        first_sentence: [NO_STT_NOTICE, normalized.first_sentence].filter(Boolean).join(' '),
        block_interruptions: true,
      }),
    };

    const connected = await connect();
    const { peer } = connected;
    let callId: string;
    try {
      const call = await this.services.calls.create(input.accountId, {
        request,
        inbound: true,
        noCaller: true,
        ourNumber: label,
        carrier: 'web',
      });
      callId = call.id;
      if (!(await this.services.engine.admit(call.id, input.accountId)))
        throw new ApiError('RATE_LIMITED', "The account's limit of concurrent calls was reached");
    } catch (error) {
      peer.refuse(error);
      throw error;
    }
    this.run(callId, request, peer, noStt);
    return { ...connected, callId };
  }

  private run(callId: string, request: CallRequest, peer: WebCallPeer, noStt: boolean): void {
    const unsubscribe = this.services.callEvents.subscribeLines(callId, (line) =>
      peer.send({ type: 'transcript', role: line.user, text: line.text }),
    );
    let ended = false;
    /** The browser hears that the call is over, then the connection closes. */
    const end = () => {
      if (ended) return;
      ended = true;
      unsubscribe();
      peer.send({ type: 'ended', call_id: callId });
      peer.close();
    };
    peer.send({ type: 'started', call_id: callId });
    const leg = this.audioLeg(peer, request, callId, {
      transfer: async () => ({ ok: false, reason: 'a web call cannot be transferred to a phone number' }),
      hangup: async () => end(),
      // The agent's first words wait for the media path (ICE, DTLS-SRTP): said earlier, they would be lost.
      ...(peer.connected && { ready: peer.connected }),
    });
    if (noStt) peer.send({ type: 'notice', code: 'no_speech_recognizer', message: NO_STT_NOTICE });
    this.services.engine
      .answer(callId, leg)
      .catch((error: unknown) => this.log?.warn({ err: error, call_id: callId }, 'web call failed'))
      .finally(end);
  }

  /** The settings of the call's target, and what its record shows as `to`. */
  private async targetSettings(
    accountId: string,
    target: WebCallTarget,
  ): Promise<{ settings: CallSettings; label: string }> {
    if ('agentId' in target) {
      const agent = await this.services.agents.get(accountId, target.agentId);
      if (!agent) throw notFound('Agent');
      return { settings: agentSettings(agent), label: agent.agent_id };
    }
    if ('phoneNumber' in target) {
      const phone = normalizePhone(target.phoneNumber);
      if (!phone.ok) throw validationError([`phone_number ${phone.reason}`]);
      const number = await this.services.inbound.get(accountId, phone.e164);
      if (!number) throw notFound('Inbound number');
      return { settings: await numberSettings(this.services.personas, accountId, number), label: number.phone_number };
    }
    const pathway = await this.services.pathways.get(accountId, target.pathwayId);
    if (!pathway) throw notFound('Pathway');
    return {
      settings: {
        pathway_id: target.pathwayId,
        ...(target.pathwayVersion !== undefined && { pathway_version: target.pathwayVersion }),
      },
      label: target.pathwayId,
    };
  }
}
