import { Type, type Static } from '@sinclair/typebox';
import { FreeObject, Nullable, StringEnum, checked } from './common.js';
import { callSettingsProperties } from './call.js';

export const MAX_CAMPAIGN_NUMBERS = 100_000;

export const CAMPAIGN_STATES = ['active', 'paused', 'completed', 'stopped'] as const;
export type CampaignState = (typeof CAMPAIGN_STATES)[number];

/**
 * Every legal change of campaign_state, in one place. pause, resume and stop are API actions;
 * complete belongs to the dialer (auto_mark_complete: every number's sequence finished).
 * completed and stopped are final.
 */
export const CAMPAIGN_TRANSITIONS = {
  pause: { from: ['active'], to: 'paused' },
  resume: { from: ['paused'], to: 'active' },
  stop: { from: ['active', 'paused'], to: 'stopped' },
  complete: { from: ['active'], to: 'completed' },
} as const satisfies Record<string, { from: readonly CampaignState[]; to: CampaignState }>;
export type CampaignAction = keyof typeof CAMPAIGN_TRANSITIONS;

/** The state an action leads to from `state`, or undefined when the action is not allowed there. */
export function nextCampaignState(state: string, action: CampaignAction): CampaignState | undefined {
  const rule = CAMPAIGN_TRANSITIONS[action];
  return (rule.from as readonly string[]).includes(state) ? rule.to : undefined;
}

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;

const ClockTime = Type.String({
  pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$',
  'x-message': 'must be a time "HH:MM" (24-hour clock)',
});

/** A number of the campaign: a phone number alone, or with its own variables and metadata. */
const CampaignNumber = Type.Union(
  [
    Type.String(),
    Type.Number(),
    Type.Object(
      {
        phone_number: Type.Union([Type.String(), Type.Number()], { 'x-message': 'must be a string or a number' }),
        request_data: Type.Optional(FreeObject({ description: 'Merged over the campaign request_data' })),
        metadata: Type.Optional(FreeObject({ description: 'Merged over the campaign metadata' })),
      },
      { additionalProperties: true },
    ),
  ],
  { 'x-message': 'must be a phone number (string or number) or an object {phone_number, request_data, metadata}' },
);

export const CampaignStep = Type.Object(
  {
    type: Type.Optional(StringEnum(['send_call'] as const, { description: 'Default send_call' })),
    task: Type.Optional(Type.String({ minLength: 1, description: 'Default: the campaign task' })),
    pathway_id: Type.Optional(Type.String({ minLength: 1, description: 'Default: the campaign pathway_id' })),
    start_time: Type.Optional(
      checked(Type.String({ description: 'Earliest time of this step: YYYY-MM-DD HH:MM:SS [-HH:MM]' }), 'start_time'),
    ),
    delay: Type.Optional(
      Type.Number({
        minimum: 0,
        description: 'Seconds after the previous step ended for a number; default 0 for step 0, else wait_period',
      }),
    ),
  },
  { additionalProperties: true },
);
export type CampaignStep = Static<typeof CampaignStep>;

/** CONTRACT.md section 9: Create Campaign. Any Send Call setting applies to every call. */
export const CampaignCreateBody = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    numbers: Type.Array(CampaignNumber, {
      minItems: 1,
      maxItems: MAX_CAMPAIGN_NUMBERS,
      // Up to 100,000 items: the route checks them in slices (normalizeNumbers), not the validator.
      'x-items-checked-by-route': true,
      description: 'Phone numbers in any Send Call form, or {phone_number, request_data, metadata}',
    }),
    sequence: Type.Optional(
      Type.Object(
        {
          retries: Type.Optional(Type.Integer({ minimum: 0, description: 'Extra attempts per step; default 0' })),
          wait_period: Type.Optional(Type.Number({ minimum: 0, description: 'Days between attempts; default 1' })),
        },
        { additionalProperties: true },
      ),
    ),
    sequences: Type.Optional(
      Type.Array(CampaignStep, { minItems: 1, maxItems: 100, description: 'Steps; default one send_call step' }),
    ),
    pacing: Type.Optional(
      Type.Object(
        {
          max_concurrent: Type.Optional(Type.Integer({ minimum: 1, description: 'Default 10' })),
          calls_per_minute: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'Default 60' })),
        },
        { additionalProperties: true },
      ),
    ),
    calling_window: Type.Optional(
      Type.Object(
        {
          start: ClockTime,
          end: ClockTime,
          days: Type.Optional(Type.Array(StringEnum(WEEKDAYS), { minItems: 1, uniqueItems: true })),
          timezone: Type.Optional(checked(Type.String({ description: 'Default: the campaign timezone' }), 'timezone')),
        },
        { additionalProperties: true, description: 'Local times; an end before the start spans midnight' },
      ),
    ),
    stop_when_answer: Type.Optional(Type.Boolean({ description: 'Default false' })),
    auto_mark_complete: Type.Optional(Type.Boolean({ description: 'Default true' })),
    ...callSettingsProperties,
  },
  { additionalProperties: true },
);
export type CampaignCreateBody = Static<typeof CampaignCreateBody>;

export const CampaignCounters = {
  count: Type.Integer({ description: 'Numbers in the campaign' }),
  human_ended: Type.Integer(),
  assistant_ended: Type.Integer(),
  human_answered: Type.Integer(),
  voicemail_answered: Type.Integer(),
  unknown_answered: Type.Integer(),
  transferred_count: Type.Integer(),
};

export const CampaignSummary = Type.Object({
  campaign_id: Type.String(),
  campaign_name: Type.String(),
  campaign_state: Type.String(),
  created_at: Type.String(),
  ...CampaignCounters,
});
export type CampaignSummary = Static<typeof CampaignSummary>;

export const CallingWindow = Type.Object({
  start: Type.String(),
  end: Type.String(),
  days: Type.Array(Type.String()),
  timezone: Type.String(),
});
export type CallingWindow = Static<typeof CallingWindow>;

export const CampaignConfig = Type.Object({
  stop_when_answer: Type.Boolean(),
  auto_mark_complete: Type.Boolean(),
  pacing: Type.Object({ max_concurrent: Type.Integer(), calls_per_minute: Type.Number() }),
  calling_window: Nullable(CallingWindow),
  retries: Type.Integer(),
  wait_period: Type.Number({ description: 'Days' }),
});
export type CampaignConfig = Static<typeof CampaignConfig>;

/** A step as stored and shown (seed 2.7 sequences). */
export const StoredStep = Type.Object({
  seqId: Type.String(),
  step: Type.Integer(),
  type: Type.Literal('send_call'),
  task: Nullable(Type.String()),
  pathway_id: Nullable(Type.String()),
  start_time: Nullable(Type.String()),
  delay: Type.Number({ description: 'Seconds' }),
  pathway: Type.Array(Type.Object({ value: Type.String(), label: Type.String() })),
});
export type StoredStep = Static<typeof StoredStep>;

export const CampaignDetail = Type.Object({
  id: Type.String(),
  campaign_id: Type.String(),
  campaign_name: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
  request_data: FreeObject({ description: 'Call settings shared by every call' }),
  sequences: Type.Array(StoredStep),
  campaign_config: CampaignConfig,
  campaign_state: Type.String(),
  phone_number: Nullable(Type.String()),
  curr_seq: Nullable(Type.String()),
  ...CampaignCounters,
});
export type CampaignDetail = Static<typeof CampaignDetail>;
