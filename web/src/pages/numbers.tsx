import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { api, type InboundNumber, type Json } from '../api';
import { Field, JsonArea, ListTable, Problem, parseJsonField, time, useTitle } from '../components/ui';
import { WebCallPanel } from '../components/web-call';

const SETTINGS = [
  'prompt',
  'pathway_id',
  'voice',
  'first_sentence',
  'model',
  'language',
  'max_duration',
  'record',
  'webhook',
  'transfer_phone_number',
  'tools',
] as const;

const path = (number: string) => `/v1/inbound/${encodeURIComponent(number)}`;

/** Inbound numbers: buy one (on the sandbox without a carrier), set its agent, ring it from a sandbox caller. */
export function NumbersPage() {
  useTitle('Numbers');
  const queries = useQueryClient();
  const navigate = useNavigate();
  const numbers = useQuery({
    queryKey: ['numbers'],
    queryFn: async () => (await api<{ inbound_numbers: InboundNumber[] }>('/v1/inbound')).inbound_numbers,
  });
  const [areaCode, setAreaCode] = useState('');
  const [editing, setEditing] = useState<{ number: string; text: string } | null>(null);
  const [caller, setCaller] = useState('+14155550100');
  const [talking, setTalking] = useState<string | null>(null);
  const refresh = () => queries.invalidateQueries({ queryKey: ['numbers'] });

  const buy = useMutation({
    mutationFn: () =>
      api('/v1/inbound/purchase', {
        method: 'POST',
        body: {
          ...(areaCode.trim() && { area_code: areaCode.trim() }),
          prompt: 'You are the receptionist of this business. Greet the caller and help them.',
        },
      }),
    onSuccess: refresh,
  });
  const save = useMutation({
    mutationFn: async () => {
      if (!editing) return;
      await api(path(editing.number), { method: 'POST', body: parseJsonField('Settings', editing.text) as Json });
    },
    onSuccess: () => {
      setEditing(null);
      void refresh();
    },
  });
  const ring = useMutation({
    mutationFn: (to: string) =>
      api<{ call_id: string }>('/v1/sandbox/inbound', { method: 'POST', body: { from: caller, to } }),
    onSuccess: (result) => navigate(`/calls/${result.call_id}`),
  });

  return (
    <section>
      <h1>Numbers</h1>
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          buy.mutate();
        }}
      >
        <Field label="Area code" hint="Optional, e.g. 415">
          <input value={areaCode} onChange={(e) => setAreaCode(e.target.value)} inputMode="numeric" maxLength={3} />
        </Field>
        <button type="submit" disabled={buy.isPending}>
          Buy a number
        </button>
      </form>
      <Problem error={buy.error ?? numbers.error ?? ring.error} />
      <div className="inline-form">
        <Field label="Sandbox caller for Ring" hint="555-0100 is a person; docs/sandbox.md lists the others">
          <input value={caller} onChange={(e) => setCaller(e.target.value)} />
        </Field>
      </div>
      {editing && (
        <form
          // Another number's settings are a new form, whose JSON takes the focus again.
          key={editing.number}
          className="editor"
          onSubmit={(e) => {
            e.preventDefault();
            save.mutate();
          }}
        >
          <h2>Settings of {editing.number}</h2>
          <JsonArea
            label="Settings (JSON)"
            rows={14}
            autoFocus
            value={editing.text}
            onChange={(text) => setEditing({ ...editing, text })}
          />
          <Problem error={save.error} />
          <div className="actions">
            <button type="submit" disabled={save.isPending}>
              Save settings
            </button>
            <button type="button" className="secondary" onClick={() => setEditing(null)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {talking && (
        <WebCallPanel
          key={talking}
          target={{ phoneNumber: talking }}
          title={talking}
          onClose={() => setTalking(null)}
        />
      )}
      <ListTable
        rows={numbers.data}
        pending={numbers.isPending}
        what="numbers"
        empty="No numbers yet: buy one to take inbound calls."
        rowKey={(n) => n.phone_number}
        columns={[
          { header: 'Number', cell: (n) => n.phone_number },
          { header: 'Carrier', cell: (n) => n.carrier },
          {
            header: 'Answers with',
            cell: (n) => (n.pathway_id ? `pathway ${n.pathway_id}` : (n.prompt ?? '').slice(0, 60) || '—'),
          },
          { header: 'Since', cell: (n) => time(n.created_at) },
          {
            header: 'Actions',
            hiddenHeader: true,
            className: 'actions',
            cell: (n) => (
              <>
                <button
                  type="button"
                  className="secondary"
                  onClick={() =>
                    setEditing({
                      number: n.phone_number,
                      text: JSON.stringify(Object.fromEntries(SETTINGS.map((k) => [k, n[k]])), null, 2),
                    })
                  }
                  aria-label={`Configure ${n.phone_number}`}
                >
                  Configure
                </button>
                <button
                  type="button"
                  disabled={talking !== null}
                  onClick={() => setTalking(n.phone_number)}
                  aria-label={`Talk from the browser to ${n.phone_number}`}
                >
                  Talk from the browser
                </button>
                {n.carrier === 'sandbox' && (
                  <button
                    type="button"
                    onClick={() => ring.mutate(n.phone_number)}
                    disabled={ring.isPending}
                    aria-label={`Ring ${n.phone_number}`}
                  >
                    Ring
                  </button>
                )}
              </>
            ),
          },
        ]}
      />
    </section>
  );
}
