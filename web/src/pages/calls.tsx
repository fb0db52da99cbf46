import { useState, type FormEvent } from 'react';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { api, query, type CallSummary } from '../api';
import { Badge, Loading, Problem, time, useTitle } from '../components/ui';

const PAGE_SIZE = 50;
const FILTERS = [
  'to_number',
  'from_number',
  'queue_status',
  'answered_by',
  'batch_id',
  'campaign_id',
  'created_after',
  'created_before',
] as const;
type Filter = (typeof FILTERS)[number];

const STATUSES = ['queued', 'allocated', 'started', 'complete', 'call_error', 'queue_error', 'complete_error'];
const ANSWERED_BY = ['human', 'voicemail', 'unknown', 'no-answer'];

interface CallList {
  count: number;
  calls: CallSummary[];
  next_cursor: string | null;
}

/** Minutes as m:ss. */
export function duration(minutes: number | null): string {
  if (minutes === null) return '';
  const seconds = Math.round(minutes * 60);
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
}

/** The calls list: the filters of GET /v1/calls, kept in the URL; live while calls run. */
/** A browser's call: inbound with no caller number (phone calls always have one). */
const isWebCall = (call: CallSummary): boolean => call.inbound && call.from === null;

export function CallsPage() {
  useTitle('Calls');
  const [params, setParams] = useSearchParams();
  const filters = Object.fromEntries(FILTERS.map((f) => [f, params.get(f) ?? ''])) as Record<Filter, string>;
  const cursor = params.get('cursor') ?? undefined;
  const [draft, setDraft] = useState(filters);
  // Cursors of the pages before this one, for "Previous page".
  const [back, setBack] = useState<string[]>([]);
  // The form follows the address: Back, Forward or a link to other filters shows those filters.
  const shownKey = JSON.stringify(filters);
  const [formKey, setFormKey] = useState(shownKey);
  if (formKey !== shownKey) {
    setFormKey(shownKey);
    setDraft(filters);
    setBack([]);
  }

  const calls = useQuery({
    queryKey: ['calls', filters, cursor],
    queryFn: () =>
      api<CallList>(
        `/v1/calls${query({
          ...filters,
          created_after: filters.created_after && new Date(filters.created_after).toISOString(),
          created_before: filters.created_before && new Date(filters.created_before).toISOString(),
          limit: PAGE_SIZE,
          cursor,
        })}`,
      ),
    placeholderData: keepPreviousData,
    // Live: while any call on the page is not finished, read the page again every 2 seconds.
    refetchInterval: (q) => (q.state.data?.calls.some((c) => !c.completed) ? 2_000 : 10_000),
  });

  const apply = (event: FormEvent) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const f of FILTERS) if (draft[f].trim()) next.set(f, draft[f].trim());
    setBack([]);
    setParams(next);
  };
  const page = (to: string | undefined, history: string[]) => {
    const next = new URLSearchParams(params);
    if (to) next.set('cursor', to);
    else next.delete('cursor');
    setBack(history);
    setParams(next);
  };
  const set = (f: Filter) => (e: { target: { value: string } }) => setDraft({ ...draft, [f]: e.target.value });

  return (
    <section>
      <div className="page-head">
        <h1>Calls</h1>
        <Link className="button" to="/calls/new">
          New call
        </Link>
      </div>
      <form className="filters" onSubmit={apply} aria-label="Filter calls">
        <label>
          To number
          <input value={draft.to_number} onChange={set('to_number')} placeholder="+14155550123" />
        </label>
        <label>
          From number
          <input value={draft.from_number} onChange={set('from_number')} />
        </label>
        <label>
          Status
          <select value={draft.queue_status} onChange={set('queue_status')}>
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Answered by
          <select value={draft.answered_by} onChange={set('answered_by')}>
            <option value="">any</option>
            {ANSWERED_BY.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Batch
          <input value={draft.batch_id} onChange={set('batch_id')} />
        </label>
        <label>
          Campaign
          <input value={draft.campaign_id} onChange={set('campaign_id')} />
        </label>
        <label>
          From date
          <input type="datetime-local" value={draft.created_after} onChange={set('created_after')} />
        </label>
        <label>
          To date
          <input type="datetime-local" value={draft.created_before} onChange={set('created_before')} />
        </label>
        <button type="submit">Apply filters</button>
      </form>
      <Problem error={calls.error} />
      {calls.isPending ? (
        <Loading what="calls" />
      ) : calls.data && calls.data.calls.length === 0 ? (
        <p className="empty">
          No calls{params.toString() ? ' match these filters' : ' yet'}. <Link to="/calls/new">Place one</Link>.
        </p>
      ) : (
        calls.data && (
          <>
            <table className="list">
              <caption className="sr-only">Calls, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Created</th>
                  <th scope="col">Direction</th>
                  <th scope="col">To</th>
                  <th scope="col">From</th>
                  <th scope="col">Status</th>
                  <th scope="col">Answered by</th>
                  <th scope="col">Length</th>
                </tr>
              </thead>
              <tbody>
                {calls.data.calls.map((call) => (
                  <tr key={call.call_id}>
                    <td>
                      <Link to={`/calls/${call.call_id}`}>{time(call.created_at)}</Link>
                    </td>
                    <td>{call.inbound ? 'inbound' : 'outbound'}</td>
                    {/* A web call: from the browser, to an agent's or pathway's id (its page names it). */}
                    <td title={isWebCall(call) ? call.to : undefined}>
                      {isWebCall(call) && !call.to.startsWith('+') ? 'web call' : call.to}
                    </td>
                    <td>{isWebCall(call) ? 'the browser' : call.from}</td>
                    <td>
                      <Badge value={call.completed ? call.status : call.queue_status} />
                    </td>
                    <td>
                      <Badge value={call.answered_by} />
                    </td>
                    <td>{duration(call.call_length)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <div className="pager">
              <button
                type="button"
                className="secondary"
                disabled={back.length === 0}
                onClick={() => page(back[back.length - 1] || undefined, back.slice(0, -1))}
              >
                Previous page
              </button>
              <button
                type="button"
                className="secondary"
                disabled={!calls.data.next_cursor}
                onClick={() => page(calls.data.next_cursor ?? undefined, [...back, cursor ?? ''])}
              >
                Next page
              </button>
            </div>
          </>
        )
      )}
    </section>
  );
}
