import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { Static } from '@sinclair/typebox';
import type { MeResponse } from '../../../src/schemas/account.js';
import { api } from '../api';
import { Field, Loading, Problem, time, useTitle } from '../components/ui';

type Me = Static<typeof MeResponse>;
interface Blocked {
  phone_number: string;
  reason: string | null;
  created_at: string;
}

const ROTATE =
  'Rotate the webhook signing secret? Webhooks are signed with the new secret at once: every receiver that checks signatures rejects them until it is given the new secret.';

/** Settings: the account, its API keys (prefixes only), connecting an MCP client, the webhook signing secret, blocked numbers. */
export function SettingsPage() {
  useTitle('Settings');
  const queries = useQueryClient();
  const me = useQuery({ queryKey: ['me'], queryFn: () => api<Me>('/v1/me') });
  const blocked = useQuery({
    queryKey: ['blocked'],
    queryFn: async () => (await api<{ blocked_numbers: Blocked[] }>('/v1/blocked_numbers')).blocked_numbers,
  });
  const [secret, setSecret] = useState<string | null>(null);
  const rotate = useMutation({
    mutationFn: () => api<{ webhook_secret: string }>('/v1/webhook-secret', { method: 'POST' }),
    onSuccess: (r) => setSecret(r.webhook_secret),
  });
  const [number, setNumber] = useState('');
  const block = useMutation({
    mutationFn: () => api('/v1/blocked_numbers', { method: 'POST', body: { phone_number: number } }),
    onSuccess: () => {
      setNumber('');
      void queries.invalidateQueries({ queryKey: ['blocked'] });
    },
  });
  const unblock = useMutation({
    mutationFn: (n: string) => api(`/v1/blocked_numbers/${encodeURIComponent(n)}`, { method: 'DELETE' }),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['blocked'] }),
  });

  if (me.isPending) return <Loading what="the account" />;
  return (
    <section>
      <h1>Settings</h1>
      <Problem error={me.error} />
      {me.data && (
        <>
          <h2>Account</h2>
          <dl className="facts">
            <dt>Name</dt>
            <dd>{me.data.account.name}</dd>
            <dt>Account ID</dt>
            <dd>
              <code>{me.data.account.id}</code>
            </dd>
          </dl>
          <h2>API keys</h2>
          <p className="muted">
            Keys are stored as hashes: only their first characters are shown. Create and revoke keys with{' '}
            <code>npx openline keys create|list|revoke</code>.
          </p>
          <table className="list">
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Created</th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {me.data.keys.map((k) => (
                <tr key={k.id}>
                  <td>
                    <code>{k.prefix}…</code>
                  </td>
                  <td>{time(k.created_at)}</td>
                  <td>{k.revoked_at ? `revoked ${time(k.revoked_at)}` : 'active'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <h2>AI agents (MCP)</h2>
      <p className="muted">
        Claude Code, Cursor and other MCP clients place calls, wait for them and read their transcripts through this
        server&apos;s MCP endpoint, with an API key:
      </p>
      <pre className="snippet" aria-label="MCP connection command">
        <code>{`claude mcp add --transport http openline ${window.location.origin}/v1/mcp \\\n  --header "Authorization: Bearer $OPENLINE_API_KEY"`}</code>
      </pre>
      <h2>Webhook signing secret</h2>
      <p className="muted">Webhooks are signed with this secret. A new one is shown once, here.</p>
      <button
        type="button"
        className="secondary"
        onClick={() => {
          if (window.confirm(ROTATE)) rotate.mutate();
        }}
        disabled={rotate.isPending}
      >
        Rotate webhook secret
      </button>
      <Problem error={rotate.error} />
      {secret && (
        <p>
          New secret: <code className="secret">{secret}</code>
        </p>
      )}
      <h2>Blocked numbers</h2>
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          block.mutate();
        }}
      >
        <Field label="Number to block">
          <input value={number} onChange={(e) => setNumber(e.target.value)} required />
        </Field>
        <button type="submit" disabled={block.isPending}>
          Block
        </button>
      </form>
      <Problem error={block.error ?? blocked.error ?? unblock.error} />
      <ul>
        {blocked.data?.map((b) => (
          <li key={b.phone_number}>
            {b.phone_number} <span className="muted">{b.reason ?? ''}</span>{' '}
            <button
              type="button"
              className="secondary"
              onClick={() => unblock.mutate(b.phone_number)}
              aria-label={`Unblock ${b.phone_number}`}
            >
              Unblock
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
