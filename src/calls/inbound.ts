import type { Services } from '../services.js';
import type { CallSettings } from '../schemas/call.js';
import type { InboundNumber } from '../schemas/inbound.js';
import { normalizeCallSettings, type CallRequest } from '../domain/call-request.js';

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

/** Stores a call that is about to be connected on one of the account's numbers (inbound or outbound). */
export async function createConnectedCall(
  services: Services,
  accountId: string,
  number: InboundNumber,
  other: string,
  direction: 'inbound' | 'outbound',
): Promise<string> {
  const errors: string[] = [];
  const settings = await normalizeCallSettings(
    { ...inboundSettings(number), phone_number: other },
    (ids) => services.tools.getMany(accountId, ids),
    errors,
    { requirePhone: true, requireTask: false },
  );
  // A tool deleted after the number was configured: the call goes on without it.
  const request = { ...settings, from: direction === 'outbound' ? number.phone_number : null } as CallRequest;
  const call = await services.calls.create(accountId, {
    request,
    inbound: direction === 'inbound',
    ourNumber: number.phone_number,
    carrier: 'sandbox',
  });
  return call.id;
}
