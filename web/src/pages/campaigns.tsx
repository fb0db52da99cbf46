import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from 'react-router';
import { nextCampaignState } from '../../../src/schemas/campaign.js';
import type { CampaignProgress as Progress } from '../../../src/store/campaigns.js';
import { usePathways } from '../queries';
import { api, type CampaignDetail, type CampaignSummary } from '../api';
import { CsvInput, describeRows, type CsvRows } from '../components/csv';
import { StackedBars } from '../components/bars';
import { Badge, Field, Loading, Problem, brief, chosenCsv, time, useTitle, wholeNumberField } from '../components/ui';

/** Campaigns: the list and a new campaign from a CSV of numbers. */
export function CampaignsPage() {
  useTitle('Campaigns');
  const navigate = useNavigate();
  const campaigns = useQuery({
    queryKey: ['campaigns'],
    queryFn: async () => (await api<{ campaigns: CampaignSummary[] }>('/v1/campaigns')).campaigns,
    refetchInterval: (q) => (q.state.data?.some((c) => c.campaign_state === 'active') ? 3_000 : false),
  });
  const pathways = usePathways();
  const [form, setForm] = useState({ name: '', task: '', pathway_id: '', retries: '0', max_concurrent: '10' });
  const [file, setFile] = useState<CsvRows | null>(null);
  const create = useMutation({
    mutationFn: async () =>
      api<{ campaign_id: string }>('/v1/campaigns', {
        method: 'POST',
        body: {
          name: form.name,
          numbers: chosenCsv('Numbers (CSV)', file).rows,
          ...(form.pathway_id ? { pathway_id: form.pathway_id } : { task: form.task }),
          sequence: { retries: wholeNumberField('Retries per number', form.retries, 0) },
          pacing: { max_concurrent: wholeNumberField('Calls at once', form.max_concurrent, 10) },
        },
      }),
    onSuccess: (result) => navigate(`/campaigns/${result.campaign_id}`),
  });
  const set = (name: keyof typeof form) => (e: { target: { value: string } }) =>
    setForm({ ...form, [name]: e.target.value });

  return (
    <section>
      <h1>Campaigns</h1>
      <form
        className="editor"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <h2>New campaign</h2>
        <div className="grid">
          <Field label="Campaign name">
            <input required value={form.name} onChange={set('name')} />
          </Field>
          <Field label="Pathway">
            <select value={form.pathway_id} onChange={set('pathway_id')}>
              <option value="">none: follow the task</option>
              {pathways.data?.pathways.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Task" hint="{{variables}} come from the CSV's columns">
            <textarea rows={3} value={form.task} onChange={set('task')} required={!form.pathway_id} />
          </Field>
          <Field label="Retries per number">
            <input inputMode="numeric" value={form.retries} onChange={set('retries')} />
          </Field>
          <Field label="Calls at once">
            <input inputMode="numeric" value={form.max_concurrent} onChange={set('max_concurrent')} />
          </Field>
          <CsvInput label="Numbers (CSV)" onRows={setFile} />
        </div>
        <Problem error={create.error} describe={describeRows('numbers', file)} />
        <button type="submit" disabled={create.isPending}>
          Create campaign
        </button>
      </form>
      <Problem error={campaigns.error} />
      {campaigns.isPending ? (
        <Loading what="campaigns" />
      ) : campaigns.data?.length === 0 ? (
        <p className="empty">No campaigns yet.</p>
      ) : (
        <table className="list">
          <thead>
            <tr>
              <th scope="col">Campaign</th>
              <th scope="col">State</th>
              <th scope="col">Numbers</th>
              <th scope="col">Answered</th>
              <th scope="col">Voicemail</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {campaigns.data?.map((c) => (
              <tr key={c.campaign_id}>
                <td className="text">
                  <Link to={`/campaigns/${c.campaign_id}`}>{c.campaign_name}</Link>
                </td>
                <td>
                  <Badge value={c.campaign_state} />
                </td>
                <td>{c.count}</td>
                <td>{c.human_answered}</td>
                <td>{c.voicemail_answered}</td>
                <td>{time(c.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

const ACTIONS = [
  ['pause', 'Pause'],
  ['resume', 'Resume'],
  ['stop', 'Stop'],
] as const;

/** One campaign: live progress, outcomes as a chart, pause / resume / stop. */
export function CampaignPage() {
  const { id = '' } = useParams();
  const queries = useQueryClient();
  const progress = useQuery({
    queryKey: ['campaign', id],
    queryFn: () => api<Progress>(`/v1/campaigns/${id}/progress`),
    refetchInterval: (q) => (q.state.data?.campaign_state === 'active' ? 1_500 : false),
  });
  const detail = useQuery({
    queryKey: ['campaign-detail', id],
    queryFn: async () => (await api<{ campaigns: CampaignDetail[] }>(`/v1/campaigns/${id}`)).campaigns[0],
  });
  const pathways = usePathways(Boolean(detail.data?.sequences[0]?.pathway_id));
  useTitle(detail.data && `Campaign ${detail.data.campaign_name}`);
  const act = useMutation({
    mutationFn: (action: string) => api(`/v1/campaigns/${id}/${action}`, { method: 'POST' }),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['campaign', id] }),
  });
  if (progress.isPending) return <Loading what="the campaign" />;
  if (!progress.data) return <Problem error={progress.error} />;
  const { numbers, calls, campaign_state: state } = progress.data;
  const share = numbers.total === 0 ? 0 : Math.round((numbers.finished / numbers.total) * 100);
  const campaign = detail.data;
  const first = campaign?.sequences[0];
  const pathwayName = pathways.data?.pathways.find((p) => p.id === first?.pathway_id)?.name;
  return (
    <section>
      <div className="page-head">
        <h1>
          {campaign?.campaign_name ?? 'Campaign'} <Badge value={state} />
        </h1>
        <div className="actions">
          {ACTIONS.filter(([action]) => nextCampaignState(state, action)).map(([action, label]) => (
            <button
              key={action}
              type="button"
              className={action === 'stop' ? 'danger' : 'secondary'}
              onClick={() => act.mutate(action)}
              disabled={act.isPending}
            >
              {label}
            </button>
          ))}
        </div>
      </div>
      <Problem error={act.error ?? progress.error ?? detail.error} />
      {campaign && (
        <p className="muted">
          {first?.pathway_id ? (
            <>
              Pathway <Link to={`/pathways/${first.pathway_id}`}>{pathwayName ?? first.pathway_id}</Link>
            </>
          ) : (
            first?.task && <>Task: {brief(first.task)}</>
          )}
          {' · '}
          {campaign.campaign_config.retries} {campaign.campaign_config.retries === 1 ? 'retry' : 'retries'} per number,
          up to {campaign.campaign_config.pacing.max_concurrent} calls at once · created {time(campaign.created_at)}
        </p>
      )}
      <p>
        <progress max={numbers.total} value={numbers.finished} aria-label="Numbers finished" /> {numbers.finished} of{' '}
        {numbers.total} numbers finished ({share} %), {numbers.dialing} being called, {numbers.pending} waiting
        {numbers.waiting_retry > 0 && `, ${numbers.waiting_retry} waiting for a retry`}.
      </p>
      <StackedBars
        title="Calls by outcome"
        unit="calls"
        rows={[
          { label: 'Answered', parts: [{ name: 'answered', value: calls.answered }] },
          { label: 'Voicemail', parts: [{ name: 'voicemail', value: calls.voicemail }] },
          { label: 'No answer', parts: [{ name: 'no answer', value: calls.no_answer }] },
          { label: 'Unknown', parts: [{ name: 'unknown', value: calls.unknown }] },
          { label: 'Failed', parts: [{ name: 'failed', value: calls.failed }] },
          { label: 'Live', parts: [{ name: 'live', value: calls.live }] },
        ]}
      />
      <p>
        <Link to={`/calls?campaign_id=${id}`}>The campaign's calls ({calls.placed})</Link>
      </p>
    </section>
  );
}
