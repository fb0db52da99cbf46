import type { Call, TranscriptRow } from '../store/calls.js';
import type { CallRecord, CallSummary } from '../schemas/call-record.js';
import { pathwayTags } from '../pathways/logs.js';

/** The seed 2.3 record of a call: the Call Details reply and the end-of-call webhook body. */
export function toCallRecord(
  row: Call,
  transcripts: TranscriptRow[],
  options: { publicUrl: string; endpointUrl: string },
): CallRecord {
  const hit = built.get(row);
  if (hit && hit.transcripts === transcripts) return hit.record;
  const record = buildRecord(row, transcripts, options);
  built.set(row, { transcripts, record });
  return record;
}

/** Records already built from an unchanged row (the call store hands out the same row until it changes). */
const built = new WeakMap<Call, { transcripts: TranscriptRow[]; record: CallRecord }>();

function buildRecord(
  row: Call,
  transcripts: TranscriptRow[],
  options: { publicUrl: string; endpointUrl: string },
): CallRecord {
  const requestData: Record<string, unknown> = { ...row.request };
  return {
    warnings: Array.isArray(requestData.warnings) ? (requestData.warnings as string[]) : [],
    call_id: row.id,
    c_id: row.id,
    call_length: row.call_length,
    corrected_duration: row.corrected_duration === null ? null : String(Math.round(row.corrected_duration)),
    batch_id: row.batch_id,
    campaign_id: row.campaign_id,
    to: row.to_number,
    from: row.from_number,
    transferred_to: row.transferred_to,
    request_data: requestData,
    completed: row.completed,
    inbound: row.inbound,
    created_at: row.created_at,
    started_at: row.started_at,
    end_at: row.end_at,
    queue_status: row.queue_status,
    status: row.status,
    endpoint_url: options.endpointUrl,
    max_duration: row.max_duration,
    error_message: row.error_message,
    variables: row.variables,
    answered_by: row.answered_by,
    record: row.record,
    recording_url: row.record && row.recording_path ? `${options.publicUrl}/v1/calls/${row.id}/recording` : null,
    // The hosted record shows `{}` when the request had no metadata.
    metadata: row.metadata ?? {},
    summary: row.summary,
    price: row.price,
    local_dialing: false,
    carrier: row.carrier,
    call_ended_by: row.call_ended_by,
    pathway_id: typeof requestData.pathway_id === 'string' ? requestData.pathway_id : null,
    pathway_logs: row.pathway_logs,
    pathway_tags: pathwayTags(row.pathway_logs),
    analysis_schema: row.analysis_schema,
    analysis: row.analysis,
    concatenated_transcript: row.concatenated_transcript,
    transcripts: transcripts.map((t) => ({
      id: t.id,
      created_at: t.created_at,
      text: t.text,
      user: t.user,
      c_id: row.id,
      status: t.status,
      transcript_id: t.transcript_id,
    })),
    latency: row.latency,
    trace_id: row.trace_id ?? null,
  };
}

export function toCallSummary(row: Call): CallSummary {
  return {
    call_id: row.id,
    c_id: row.id,
    created_at: row.created_at,
    call_length: row.call_length,
    to: row.to_number,
    from: row.from_number,
    completed: row.completed,
    queue_status: row.queue_status,
    status: row.status,
    error_message: row.error_message,
    answered_by: row.answered_by,
    batch_id: row.batch_id,
    campaign_id: row.campaign_id,
    inbound: row.inbound,
  };
}
