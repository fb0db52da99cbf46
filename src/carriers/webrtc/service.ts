import type { Services } from '../../services.js';
import { agentSettings, numberSettings } from '../../calls/inbound.js';
import { normalizeCallSettings, toolResolver, type CallRequest } from '../../schemas/call-request.js';
import { normalizePhone } from '../../domain/phone.js';
import { ApiError, notFound, validationError } from '../../errors.js';
import type { CallSettings } from '../../schemas/call.js';
import type { AudioLegFactory, CarrierLogger } from '../audio-legs.js';
import type { WebRtcConfig } from '../../config.js';
import { OfferError, WebRtcPeer } from './peer.js';

/** Whom a web call talks to: a stored agent, one of the account's inbound numbers, or a pathway. */
export type WebCallTarget =
  { agentId: string } | { phoneNumber: string } | { pathwayId: string; pathwayVersion?: number };

export interface WebCallStart {
  accountId: string;
  target: WebCallTarget;
  /** Variables of the call ({{name}} in the prompt), as Send Call's request_data. */
  requestData?: Record<string, unknown>;
  /** The browser's SDP offer. */
  offer: string;
}

/** What the browser is told on the data channel (docs/web-calls.md). */
export type WebCallMessage =
  | { type: 'started'; call_id: string }
  | { type: 'transcript'; role: 'user' | 'assistant' | 'robot'; text: string }
  | { type: 'notice'; code: 'no_speech_recognizer'; message: string }
  | { type: 'ended'; call_id: string };

/** Said (and shown) when the server has no speech recogniser: the caller would otherwise talk to nobody. */
export const NO_STT_NOTICE =
  'This server has no speech recogniser configured, so I cannot hear you. Set DEEPGRAM_API_KEY to talk to me.';

/**
 * Web calls (docs/web-calls.md): a browser talks to an agent, an inbound number's agent or a
 * pathway over WebRTC. The call is an inbound call on the `web` carrier: the same engine, session,
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

  /** Sets up the call: answers the browser's offer and starts the agent. Resolves with the answer. */
  async start(input: WebCallStart): Promise<{ callId: string; sdp: string }> {
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
      // Without a recogniser the caller would talk to nobody: the agent says so first.
      ...(noStt && {
        first_sentence: [NO_STT_NOTICE, normalized.first_sentence].filter(Boolean).join(' '),
      }),
    };

    let answered: { peer: WebRtcPeer; sdp: string };
    try {
      answered = await WebRtcPeer.answer(input.offer, this.settings);
    } catch (error) {
      if (error instanceof OfferError) throw validationError([error.message]);
      throw error;
    }
    const { peer, sdp } = answered;
    const call = await this.services.calls.create(input.accountId, {
      request,
      inbound: true,
      noCaller: true,
      ourNumber: label,
      carrier: 'web',
    });
    if (!(await this.services.engine.admit(call.id, input.accountId))) {
      peer.close();
      throw new ApiError('RATE_LIMITED', "The account's limit of concurrent calls was reached");
    }
    this.run(call.id, request, peer, noStt);
    return { callId: call.id, sdp };
  }

  private run(callId: string, request: CallRequest, peer: WebRtcPeer, noStt: boolean): void {
    const unsubscribe = this.services.callEvents.subscribeLines(callId, (line) =>
      peer.send({ type: 'transcript', role: line.user, text: line.text } satisfies WebCallMessage),
    );
    peer.onMessage((message) => {
      if (typeof message !== 'object' || message === null) return;
      const { type, digit } = message as { type?: unknown; digit?: unknown };
      if (type === 'hangup') peer.stop('remote');
      else if (type === 'dtmf' && typeof digit === 'string' && /^[0-9*#]$/.test(digit)) peer.dtmf(digit);
    });
    let ended = false;
    /** The browser hears that the call is over, then the connection closes. */
    const end = () => {
      if (ended) return;
      ended = true;
      unsubscribe();
      peer.send({ type: 'ended', call_id: callId } satisfies WebCallMessage);
      peer.close();
    };
    peer.send({ type: 'started', call_id: callId } satisfies WebCallMessage);
    const leg = this.audioLeg(peer, request, callId, {
      transfer: async () => ({ ok: false, reason: 'a web call cannot be transferred to a phone number' }),
      hangup: async () => end(),
    });
    if (noStt)
      peer.send({ type: 'notice', code: 'no_speech_recognizer', message: NO_STT_NOTICE } satisfies WebCallMessage);
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
