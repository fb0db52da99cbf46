import { useEffect, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import type { PathwayLogEntry } from '../../../src/pathways/logs.js';
import type { PathwayDetail } from '../../../src/schemas/pathway.js';
import { api, blobUrl, type Agent, type CallRecord } from '../api';
import { agentName } from './resources';
import { PathwaySteps } from '../components/steps';
import { Badge, counted, Json as JsonView, Loading, Problem, time, useTitle } from '../components/ui';
import { Recording } from '../components/waveform';
import { ListenButton } from '../components/listen';
import { StackedBars } from '../components/bars';
import { duration } from './calls';

interface WebhookLog {
  data: {
    url: string;
    delivered: boolean;
    metadata: {
      sent_at: string;
      response_code: number | null;
      response_time: number | null;
      send_type: string;
      attempt: number;
      error: string | null;
    }[];
  };
}

/** Whom a web call talked to: the record's `to` is an agent's id, a pathway's id or an inbound number. */
function webTarget(call: CallRecord): { kind: 'agent' | 'pathway' | 'number'; id: string } {
  if (call.request_data.pathway_id === call.to) return { kind: 'pathway', id: call.to };
  if (call.to.startsWith('+')) return { kind: 'number', id: call.to };
  return { kind: 'agent', id: call.to };
}

/** Seconds from the call's start, as m:ss, for the transcript timeline. */
function offset(at: string, start: string | null): string {
  if (!start) return time(at);
  const seconds = Math.max(0, Math.round((Date.parse(at) - Date.parse(start)) / 1000));
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
}

/** Who said a transcript line, as the dashboard names them. */
export const ROLE_NAMES: Record<string, string> = {
  user: 'Caller',
  assistant: 'Agent',
  robot: 'Phone system',
  'agent-action': 'Action',
};

/** Who hung up, in words, with the API's value (`call_ended_by`) beside them. */
function endedBy(c: CallRecord): string {
  if (!c.call_ended_by) return '—';
  const who =
    c.call_ended_by === 'ASSISTANT'
      ? 'The agent'
      : c.call_ended_by === 'USER'
        ? c.inbound
          ? 'The caller'
          : 'The person called'
        : null;
  return who ? `${who} (${c.call_ended_by})` : c.call_ended_by;
}

/** How long after a call's end the page waits for its summary and analysis (a model may be slow). */
const POST_CALL_WAIT_MS = 2 * 60_000;

/**
 * Whether the call's post-call work (summary and analysis) is still to come: it runs once the call
 * has ended, for calls that connected, and writes one or both; a call that ended long ago has none.
 */
function awaitingPostCall(c: CallRecord): boolean {
  if (!c.completed || c.started_at === null || c.summary !== null || c.analysis !== null) return false;
  const ended = Date.parse(c.started_at) + (c.call_length ?? 0) * 60_000;
  return Date.now() - ended < POST_CALL_WAIT_MS;
}

export function CallPage() {
  const { id = '' } = useParams();
  const queries = useQueryClient();
  const call = useQuery({
    queryKey: ['call', id],
    queryFn: () => api<CallRecord>(`/v1/calls/${id}`),
    // Live while the call runs, then until its summary and analysis are written.
    refetchInterval: (q) =>
      !q.state.data ? false : !q.state.data.completed ? 1_500 : awaitingPostCall(q.state.data) ? 2_000 : false,
  });
  const web = call.data?.carrier === 'web' ? webTarget(call.data) : null;
  // A web call's `to` is the id of the agent or pathway the browser talked to: its name instead.
  const target = useQuery({
    queryKey: ['web-call-target', web?.kind, web?.id],
    queryFn: async () =>
      web?.kind === 'agent'
        ? agentName((await api<{ agent: Agent }>(`/v1/agents/${web.id}`)).agent)
        : (await api<PathwayDetail>(`/v1/pathway/${web!.id}`)).name,
    enabled: web?.kind === 'agent' || web?.kind === 'pathway',
    retry: false,
    staleTime: Infinity,
  });
  const title = !call.data
    ? call.error
      ? 'Call'
      : null
    : !web
      ? `Call to ${call.data.to}`
      : web.kind === 'number'
        ? `Web call to ${web.id}`
        : target.data
          ? `Web call with ${web.kind} “${target.data}”`
          : `Web call with the ${web.kind}`;
  useTitle(title);
  const stop = useMutation({
    mutationFn: () => api(`/v1/calls/${id}/stop`, { method: 'POST' }),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['call', id] }),
  });

  if (call.isPending) return <Loading what="the call" />;
  if (call.error || !call.data)
    return (
      <section>
        <h1>Call</h1>
        <Problem error={call.error} />
        <Link to="/calls">Back to calls</Link>
      </section>
    );
  const c = call.data;
  return (
    <section className="call">
      <div className="page-head">
        <h1>
          {title} <Badge value={c.completed ? c.status : c.queue_status} />
        </h1>
        {!c.completed && (
          <div className="actions">
            {c.status === 'started' && <ListenButton callId={c.call_id} />}
            <button type="button" className="danger" onClick={() => stop.mutate()} disabled={stop.isPending}>
              Stop call
            </button>
          </div>
        )}
      </div>
      <Problem error={stop.error} />
      <dl className="facts">
        <dt>Call ID</dt>
        <dd>
          <code>{c.call_id}</code>
        </dd>
        <dt>Direction</dt>
        <dd>{c.inbound ? 'inbound' : 'outbound'}</dd>
        <dt>From</dt>
        <dd>{c.from ?? (web ? 'the browser' : '—')}</dd>
        <dt>Created</dt>
        <dd>{time(c.created_at)}</dd>
        <dt>Length</dt>
        <dd>{duration(c.call_length) || '—'}</dd>
        <dt>Answered by</dt>
        <dd>
          <Badge value={c.answered_by} />
          {typeof c.latency?.answered_by_ms === 'number' && (
            <span className="muted"> decided {(c.latency.answered_by_ms / 1000).toFixed(1)} s after the answer</span>
          )}
        </dd>
        <dt>Ended by</dt>
        <dd>{endedBy(c)}</dd>
        <dt>Price</dt>
        <dd>{c.price === null ? '—' : `$${c.price.toFixed(3)}`}</dd>
        {c.batch_id && (
          <>
            <dt>Batch</dt>
            <dd>
              <Link to={`/calls?batch_id=${c.batch_id}`}>{c.batch_id}</Link>
            </dd>
          </>
        )}
        {c.campaign_id && (
          <>
            <dt>Campaign</dt>
            <dd>
              <Link to={`/campaigns/${c.campaign_id}`}>{c.campaign_id}</Link>
            </dd>
          </>
        )}
        {c.error_message && (
          <>
            <dt>Error</dt>
            <dd className="problem-text">{c.error_message}</dd>
          </>
        )}
      </dl>
      {c.warnings.length > 0 && (
        <ul className="warnings" aria-label="Warnings">
          {c.warnings.map((w) => (
            <li key={w}>{w}</li>
          ))}
        </ul>
      )}

      <h2>Transcript</h2>
      {c.transcripts.length === 0 ? (
        <p className="empty">{c.completed ? 'Nothing was said.' : 'Waiting for the first words…'}</p>
      ) : (
        <ol className="timeline" aria-label="Transcript">
          {c.transcripts.map((line) => (
            <li key={line.id} className={`line line-${line.user}`}>
              <time dateTime={line.created_at}>{offset(line.created_at, c.started_at ?? c.created_at)}</time>
              <span className="who">{ROLE_NAMES[line.user] ?? line.user}</span>
              <span className="said">{line.text}</span>
            </li>
          ))}
        </ol>
      )}

      {c.record &&
        (c.completed && c.recording_url === null ? (
          <>
            <h2>Recording</h2>
            <p className="muted">
              No recording was made of this call
              {c.carrier === 'sandbox' &&
                c.metadata.openline_sandbox_audio !== true &&
                ': a sandbox call is recorded only in audio mode ("openline_sandbox_audio": true in its metadata)'}
              .
            </p>
          </>
        ) : (
          <RecordingSection callId={c.call_id} completed={c.completed} />
        ))}

      {c.latency && c.latency.turns.length > 0 && (
        <>
          <h2>Latency</h2>
          <StackedBars
            title="What the caller waited, per turn"
            unit="ms"
            rows={c.latency.turns.map((t) => ({
              label: `Turn ${t.turn}`,
              parts: [
                { name: 'end of turn', value: t.turn_ms },
                { name: 'reply', value: t.llm_ms },
                { name: 'speech', value: t.tts_ms },
                { name: 'send', value: t.send_ms },
              ],
            }))}
          />
          <p className="muted">
            Median wait {Math.round(c.latency.summary.total_ms_p50 ?? 0)} ms, longest{' '}
            {Math.round(c.latency.summary.total_ms_max ?? 0)} ms over {counted(c.latency.summary.turns, 'turn')}.
          </p>
          {c.latency.interruptions && c.latency.interruptions.held > 0 && (
            <p className="muted">
              Voices over the agent: it fell silent {counted(c.latency.interruptions.held, 'time')} (
              {Math.round(c.latency.interruptions.silent_ms_p50 ?? 0)} ms after the voice began, median), went on{' '}
              {counted(c.latency.interruptions.resumed, 'time')}, was interrupted{' '}
              {counted(c.latency.interruptions.cut, 'time')}.
            </p>
          )}
        </>
      )}

      <h2>Summary and analysis</h2>
      {c.summary ? (
        <p>{c.summary}</p>
      ) : (
        <p className="muted">
          {!c.completed
            ? 'The summary is written when the call ends.'
            : awaitingPostCall(c)
              ? 'The summary is written now that the call has ended…'
              : 'No summary.'}
        </p>
      )}
      {c.analysis && <JsonView value={c.analysis} />}

      <h2>Variables</h2>
      <JsonView value={c.variables} />

      {c.pathway_logs && <PathwayLog logs={c.pathway_logs} />}

      {c.completed && c.request_data.webhook ? <Webhooks callId={c.call_id} /> : null}

      <details>
        <summary>Request</summary>
        <JsonView value={c.request_data} />
      </details>
    </section>
  );
}

function RecordingSection({ callId, completed }: { callId: string; completed: boolean }) {
  const [url, setUrl] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    if (!completed) return;
    let made: string | null = null;
    blobUrl(`/v1/calls/${callId}/recording`).then((u) => setUrl((made = u)), setError);
    return () => {
      if (made) URL.revokeObjectURL(made);
    };
  }, [callId, completed]);
  return (
    <>
      <h2>Recording</h2>
      {!completed ? (
        <p className="muted">The recording is ready when the call ends.</p>
      ) : error ? (
        <Problem error={error} />
      ) : url ? (
        <Recording src={url} />
      ) : (
        <Loading what="the recording" />
      )}
    </>
  );
}

function PathwayLog({ logs }: { logs: string }) {
  let steps: PathwayLogEntry[];
  try {
    steps = JSON.parse(logs) as PathwayLogEntry[];
  } catch {
    return null;
  }
  return (
    <>
      <h2>Pathway steps</h2>
      <PathwaySteps steps={steps} />
    </>
  );
}

function Webhooks({ callId }: { callId: string }) {
  const queries = useQueryClient();
  const log = useQuery({
    queryKey: ['webhook', callId],
    queryFn: () => api<WebhookLog>(`/v1/postcall/webhooks/${callId}`),
    retry: false,
  });
  const resend = useMutation({
    mutationFn: () => api('/v1/postcall/webhooks/resend', { method: 'POST', body: { call_ids: [callId] } }),
    onSuccess: () => setTimeout(() => void queries.invalidateQueries({ queryKey: ['webhook', callId] }), 1_000),
  });
  if (log.isPending || log.error) return null; // no webhook for this call
  const data = log.data.data;
  return (
    <>
      <h2>Webhook</h2>
      <p>
        <code>{data.url}</code> {data.delivered ? <Badge value="delivered" /> : <Badge value="not delivered" />}{' '}
        <button type="button" className="secondary" onClick={() => resend.mutate()} disabled={resend.isPending}>
          Resend webhook
        </button>
      </p>
      <Problem error={resend.error} />
      <table className="list">
        <thead>
          <tr>
            <th scope="col">Sent</th>
            <th scope="col">Kind</th>
            <th scope="col">Response</th>
            <th scope="col">Time</th>
            <th scope="col">Error</th>
          </tr>
        </thead>
        <tbody>
          {data.metadata.map((d) => (
            <tr key={`${d.sent_at}-${d.attempt}`}>
              <td>{time(d.sent_at)}</td>
              <td>{d.send_type}</td>
              <td>{d.response_code ?? '—'}</td>
              <td>{d.response_time === null ? '—' : `${d.response_time} ms`}</td>
              <td className="text">{d.error ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
