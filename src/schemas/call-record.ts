import { Type, type Static } from '@sinclair/typebox';
import { FreeObject, Nullable } from './common.js';

export const QUEUE_STATUSES = [
  'new',
  'queued',
  'allocated',
  'started',
  'complete',
  'pre_queue_error',
  'queue_error',
  'call_error',
  'complete_error',
] as const;

export const ANSWERED_BY = ['human', 'voicemail', 'unknown', 'no-answer'] as const;

export const TranscriptItem = Type.Object({
  id: Type.Integer(),
  created_at: Type.String(),
  text: Type.String(),
  user: Type.String({ description: 'user, assistant, robot or agent-action' }),
  c_id: Type.String(),
  status: Nullable(Type.String()),
  transcript_id: Nullable(Type.String()),
});

/** Seed 2.3: every field is always present, null where nothing is known yet. */
export const CallRecord = Type.Object(
  {
    call_id: Type.String(),
    c_id: Type.String(),
    call_length: Nullable(Type.Number({ description: 'Minutes' })),
    corrected_duration: Nullable(Type.String({ description: 'Seconds' })),
    batch_id: Nullable(Type.String()),
    campaign_id: Nullable(Type.String()),
    to: Type.String(),
    from: Nullable(Type.String()),
    transferred_to: Nullable(Type.String()),
    request_data: FreeObject({ description: 'The normalized parameters of the request' }),
    completed: Type.Boolean(),
    inbound: Type.Boolean(),
    created_at: Type.String(),
    started_at: Nullable(Type.String()),
    end_at: Nullable(Type.String({ description: 'When a connected call is ended by max_duration' })),
    queue_status: Type.String(),
    status: Type.String(),
    endpoint_url: Type.String(),
    max_duration: Type.Number(),
    error_message: Nullable(Type.String()),
    variables: Nullable(FreeObject()),
    answered_by: Nullable(Type.String()),
    record: Type.Boolean(),
    recording_url: Nullable(Type.String()),
    metadata: Nullable(FreeObject()),
    summary: Nullable(Type.String()),
    price: Nullable(Type.Number()),
    local_dialing: Type.Boolean(),
    call_ended_by: Nullable(Type.String()),
    pathway_logs: Nullable(Type.String()),
    analysis_schema: Nullable(FreeObject()),
    analysis: Nullable(FreeObject()),
    concatenated_transcript: Nullable(Type.String()),
    transcripts: Type.Array(TranscriptItem),
  },
  { additionalProperties: true },
);
export type CallRecord = Static<typeof CallRecord>;

/** An item of the call list (the hosted list's fields). */
export const CallSummary = Type.Object({
  call_id: Type.String(),
  c_id: Type.String(),
  created_at: Type.String(),
  call_length: Nullable(Type.Number()),
  to: Type.String(),
  from: Nullable(Type.String()),
  completed: Type.Boolean(),
  queue_status: Type.String(),
  status: Type.String(),
  error_message: Nullable(Type.String()),
  answered_by: Nullable(Type.String()),
  batch_id: Nullable(Type.String()),
  campaign_id: Nullable(Type.String()),
  inbound: Type.Boolean(),
});
export type CallSummary = Static<typeof CallSummary>;
