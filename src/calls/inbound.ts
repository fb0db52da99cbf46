import type { Services } from '../services.js';
import type { CallSettings } from '../schemas/call.js';
import type { InboundNumber } from '../schemas/inbound.js';
import type { AgentConfig } from '../schemas/agent.js';
import { normalizeCallSettings, toolResolver, type CallRequest } from '../schemas/call-request.js';
import type { Call } from '../store/calls.js';
import { overlaySettings, personaSettings } from '../schemas/persona.js';
import type { PersonaStore } from '../store/personas.js';

/** The call settings of an inbound number (seed 2.4): its prompt is the agent's task. */
export function inboundSettings(number: InboundNumber): CallSettings {
  const optional = <T>(value: T | null) => (value === null ? undefined : value);
  return {
    task: optional(number.prompt),
    pathway_id: optional(number.pathway_id),
    voice: number.voice,
    background_track: number.background_track as CallSettings['background_track'],
    first_sentence: optional(number.first_sentence),
    wait_for_greeting: number.wait_for_greeting,
    interruption_threshold: number.interruption_threshold,
    model: number.model as CallSettings['model'],
    tools: optional(number.tools) as CallSettings['tools'],
    language: number.language as CallSettings['language'],
    timezone: number.timezone,
    transfer_phone_number: optional(number.transfer_phone_number),
    transfer_list: optional(number.transfer_list),
    dynamic_data: optional(number.dynamic_data),
    keywords: number.keywords,
    max_duration: number.max_duration,
    webhook: optional(number.webhook),
    analysis_schema: optional(number.analysis_schema),
    metadata: optional(number.metadata),
    summary_prompt: optional(number.summary_prompt),
    analysis_prompt: optional(number.analysis_prompt),
    record: number.record,
  };
}

/**
 * The call settings a number answers with: its own, or, when a persona answers it, the persona's
 * production version over them (its prompts, call_config and tools; the number keeps its webhook,
 * metadata, analysis and the rest), and the number's own pathway under the persona, if it has one.
 * A persona that is gone leaves the number's own.
 */
export async function numberSettings(
  personas: Pick<PersonaStore, 'get'>,
  accountId: string,
  number: InboundNumber,
): Promise<CallSettings> {
  const own = inboundSettings(number);
  const persona = number.persona_id ? await personas.get(accountId, number.persona_id) : undefined;
  if (!persona) return own;
  const settings = { ...overlaySettings(own, personaSettings(persona.production)), persona_id: persona.id };
  // The number's own pathway under the persona (PATCH /v1/personas/{id}/inbound/{number}/settings).
  const mine = number.persona_settings;
  if (mine?.pathway_id) {
    settings.pathway_id = mine.pathway_id;
    if (typeof mine.pathway_version === 'number') settings.pathway_version = mine.pathway_version;
    if (mine.start_node_id) settings.start_node_id = mine.start_node_id;
  }
  return settings;
}

/** The call settings of an agent (seed 2.6): its prompt is the task; web calls talk to agents. */
export function agentSettings(agent: AgentConfig): CallSettings {
  const optional = <T>(value: T | null) => (value === null ? undefined : value);
  return {
    task: agent.prompt,
    voice: agent.voice,
    webhook: optional(agent.webhook),
    dynamic_data: optional(agent.dynamic_data) as CallSettings['dynamic_data'],
    interruption_threshold: optional(agent.interruption_threshold),
    first_sentence: optional(agent.first_sentence),
    model: agent.model as CallSettings['model'],
    temperature: optional(agent.temperature),
    max_duration: agent.max_duration,
    language: agent.language as CallSettings['language'],
    tools: optional(agent.tools) as CallSettings['tools'],
  };
}

/** The line a connected call arrived on, as its carrier reports it. */
export interface ConnectedLine {
  carrier: string;
  carrierCallId?: string | null;
  credentialId?: string | null;
}

/**
 * Stores a call that is about to be connected on one of the account's numbers (inbound or
 * outbound), with the facts its carrier reported: carriers never write calls themselves.
 */
export async function createConnectedCall(
  services: Services,
  accountId: string,
  number: InboundNumber,
  other: string,
  direction: 'inbound' | 'outbound',
  line: ConnectedLine = { carrier: 'sandbox' },
): Promise<Call> {
  const errors: string[] = [];
  const settings = await normalizeCallSettings(
    { ...(await numberSettings(services.personas, accountId, number)), phone_number: other },
    toolResolver(services, accountId),
    errors,
    { requirePhone: true, requireTask: false },
  );
  // A tool deleted after the number was configured: the call goes on without it.
  const request = { ...settings, from: direction === 'outbound' ? number.phone_number : null } as CallRequest;
  return services.calls.create(accountId, {
    request,
    inbound: direction === 'inbound',
    ourNumber: number.phone_number,
    carrier: line.carrier,
    carrier_call_id: line.carrierCallId ?? null,
    credential_id: line.credentialId ?? null,
  });
}
