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

export const TranscriptItem = Type.Object({
  id: Type.Integer(),
  created_at: Type.String(),
  text: Type.String(),
  user: Type.String({ description: 'user, assistant, robot or agent-action' }),
  c_id: Type.String(),
  status: Nullable(Type.String()),
  transcript_id: Nullable(Type.String()),
});

const Ms = (description: string) => Type.Number({ description: `${description} (milliseconds)` });

/** One answered turn of an audio call (src/media/latency.ts). */
export const TurnLatency = Type.Object({
  turn: Type.Integer({ description: '1 for the first answered turn' }),
  speech_end_at: Type.String({ description: "When the caller's speech ended (VAD), ISO 8601" }),
  stt_ms: Nullable(Ms('End of speech to the final transcript; includes the trailing silence of the turn')),
  turn_ms: Ms('End of speech to the end of the turn (trailing silence set by interruption_threshold, STT final)'),
  llm_ms: Ms("End of turn to the agent's reply"),
  llm_first_token_ms: Nullable(
    Ms("End of turn to the language model's first token; null when no language model answered the turn"),
  ),
  tts_ms: Ms('Reply to the first synthesised audio'),
  send_ms: Ms('First synthesised audio to the first frame sent to the carrier'),
  total_ms: Ms('End of speech to the first frame of the answer: what the caller waited'),
});

/** Openline extension: per-turn latency of audio calls, null for text (sandbox) calls. */
export const CallLatency = Type.Object(
  {
    turns: Type.Array(TurnLatency),
    summary: Type.Object({
      turns: Type.Integer(),
      total_ms_p50: Nullable(Type.Number()),
      total_ms_max: Nullable(Type.Number()),
      stt_ms_p50: Nullable(Type.Number()),
      llm_ms_p50: Nullable(Type.Number()),
      llm_first_token_ms_p50: Nullable(Type.Number()),
      tts_ms_p50: Nullable(Type.Number()),
    }),
    interruptions: Type.Optional(
      Type.Object(
        {
          held: Type.Integer({ description: 'Times the agent fell silent because a voice started over it' }),
          resumed: Type.Integer({ description: '... and went on where it stopped (a backchannel, a noise)' }),
          cut: Type.Integer({ description: '... and stopped for good (an interruption)' }),
          silent_ms_p50: Nullable(Ms('Voice onset to the agent silent at the carrier, median')),
          silent_ms_max: Nullable(Ms('Voice onset to the agent silent at the carrier, worst')),
          backchannels: Type.Optional(
            Type.Integer({ description: 'Of the resumed: after words that were no interruption ("uh huh")' }),
          ),
          false_interruptions: Type.Optional(
            Type.Integer({ description: 'Of the resumed: after a voice that gave no words (a cough, a noise)' }),
          ),
          resume_ms_p50: Type.Optional(Nullable(Ms('End of the voice over the agent to the agent going on, median'))),
          resume_ms_max: Type.Optional(Nullable(Ms('End of the voice over the agent to the agent going on, worst'))),
          echo_ms: Type.Optional(Ms("The agent's own voice heard back on the line and ignored as echo")),
          echo_holds: Type.Optional(
            Type.Integer({
              description: 'Of the held: started within 0.5 s of echo the guard caught (self-interruptions)',
            }),
          ),
          reply_holds: Type.Optional(
            Type.Integer({
              description:
                'Of the held: a reply held before any of it was heard, as the caller went on (no pause heard)',
            }),
          ),
        },
        { description: 'How the agent yielded to voices over it (docs/audio.md); absent on older records' },
      ),
    ),
    answered_by_ms: Type.Optional(
      Nullable(
        Ms(
          'Answer to the moment answered_by took its final value (decided, or revised by a beep or words); ' +
            'null when it stayed unknown or was not asked for; absent on older records',
        ),
      ),
    ),
  },
  { description: 'Per-turn latency of an audio call (Openline extension); null for calls without audio' },
);

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
    metadata: FreeObject({ description: "The request's metadata; {} when it had none" }),
    summary: Nullable(Type.String()),
    price: Nullable(Type.Number()),
    local_dialing: Type.Boolean(),
    carrier: Type.String({
      description: 'The network the call ran on: sandbox, twilio, sip or web (a browser, docs/web-calls.md)',
    }),
    call_ended_by: Nullable(Type.String()),
    pathway_id: Nullable(Type.String({ description: 'The pathway the call followed, else null' })),
    pathway_logs: Nullable(Type.String()),
    pathway_tags: Type.Array(Type.String(), {
      description: 'The tags (data.tag) of the pathway nodes the call reached, each once, in order; [] without any',
    }),
    analysis_schema: Nullable(FreeObject()),
    analysis: Nullable(FreeObject()),
    concatenated_transcript: Nullable(Type.String()),
    warnings: Type.Array(Type.String(), {
      description:
        'What the server did differently from what was asked (a voice it does not have, replaced by the default)',
    }),
    transcripts: Type.Array(TranscriptItem),
    latency: Nullable(CallLatency),
    trace_id: Nullable(
      Type.String({ description: 'The OpenTelemetry trace of the call (OTEL_EXPORTER_OTLP_ENDPOINT set), else null' }),
    ),
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
