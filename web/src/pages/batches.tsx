import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api } from '../api';
import { CsvInput, describeRows, type CsvRows } from '../components/csv';
import { Badge, Field, ListTable, Problem, chosenCsv, time, useTitle } from '../components/ui';

interface Batch {
  batch_id: string;
  label: string | null;
  created_at: string;
  call_count: number;
  queued: number;
  in_progress: number;
  completed: number;
  failed: number;
  status: string;
}

/** Batches: one task to many numbers from a CSV, with progress; calls open in the calls list. */
export function BatchesPage() {
  useTitle('Batches');
  const queries = useQueryClient();
  const batches = useQuery({
    queryKey: ['batches'],
    queryFn: async () => (await api<{ batches: Batch[] }>('/v1/batches')).batches,
    refetchInterval: (q) => (q.state.data?.some((b) => b.status === 'in_progress') ? 2_000 : false),
  });
  const [label, setLabel] = useState('');
  const [prompt, setPrompt] = useState('');
  const [file, setFile] = useState<CsvRows | null>(null);
  const create = useMutation({
    mutationFn: async () =>
      api('/v1/batches', {
        method: 'POST',
        body: { ...(label && { label }), base_prompt: prompt, call_data: chosenCsv('Numbers (CSV)', file).rows },
      }),
    onSuccess: () => {
      setFile(null);
      void queries.invalidateQueries({ queryKey: ['batches'] });
    },
  });
  const stop = useMutation({
    mutationFn: (id: string) => api(`/v1/batches/${id}/stop`, { method: 'POST' }),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['batches'] }),
  });

  return (
    <section>
      <h1>Batches</h1>
      <form
        className="editor"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <h2>New batch</h2>
        <Field label="Label">
          <input value={label} onChange={(e) => setLabel(e.target.value)} />
        </Field>
        <Field label="Task" hint="{{variables}} come from the CSV's columns">
          <textarea rows={4} required value={prompt} onChange={(e) => setPrompt(e.target.value)} />
        </Field>
        <CsvInput label="Numbers (CSV)" onRows={setFile} />
        <Problem error={create.error} describe={describeRows('call_data', file)} />
        <button type="submit" disabled={create.isPending}>
          Start batch
        </button>
      </form>
      <Problem error={batches.error ?? stop.error} />
      <ListTable
        rows={batches.data}
        pending={batches.isPending}
        what="batches"
        empty="No batches yet."
        rowKey={(b) => b.batch_id}
        columns={[
          {
            header: 'Batch',
            className: 'text',
            cell: (b) => <Link to={`/calls?batch_id=${b.batch_id}`}>{b.label ?? b.batch_id}</Link>,
          },
          { header: 'Created', cell: (b) => time(b.created_at) },
          { header: 'Status', cell: (b) => <Badge value={b.status} /> },
          { header: 'Calls', cell: (b) => b.call_count },
          { header: 'Done', cell: (b) => b.completed },
          { header: 'Failed', cell: (b) => b.failed },
          {
            header: 'Actions',
            hiddenHeader: true,
            cell: (b) =>
              b.status === 'in_progress' && (
                <button
                  type="button"
                  className="danger"
                  onClick={() => stop.mutate(b.batch_id)}
                  aria-label={`Stop batch ${b.label ?? b.batch_id}`}
                >
                  Stop
                </button>
              ),
          },
        ]}
      />
    </section>
  );
}
