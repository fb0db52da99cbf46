import { useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from 'react-router';
import { usePathways } from '../queries';
import { api } from '../api';
import { Field, Loading, Problem, time, useTitle } from '../components/ui';
import { WebCallPanel } from '../components/web-call';

/** Pathways: the list, and a new one opened in the editor. */
export function PathwaysPage() {
  useTitle('Pathways');
  const navigate = useNavigate();
  const queries = useQueryClient();
  const pathways = usePathways();
  const [name, setName] = useState('');
  const [talking, setTalking] = useState<{ id: string; name: string } | null>(null);
  const create = useMutation({
    mutationFn: () =>
      api<{ pathway_id: string }>('/v1/pathway/create', {
        method: 'POST',
        body: {
          name,
          nodes: [
            {
              id: 'start',
              type: 'Default',
              data: { name: 'Start', isStart: true, text: 'Hi, this is Ava. How can I help you today?' },
              position: { x: 0, y: 0 },
            },
          ],
          edges: [],
        },
      }),
    onSuccess: (result) => {
      void queries.invalidateQueries({ queryKey: ['pathways'] });
      navigate(`/pathways/${result.pathway_id}`);
    },
  });
  return (
    <section>
      <h1>Pathways</h1>
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <Field label="Pathway name">
          <input required value={name} onChange={(e) => setName(e.target.value)} />
        </Field>
        <button type="submit" disabled={create.isPending}>
          Create pathway
        </button>
      </form>
      <Problem error={create.error ?? pathways.error} />
      {talking && (
        <WebCallPanel
          key={talking.id}
          target={{ pathwayId: talking.id }}
          title={`pathway “${talking.name}”`}
          onClose={() => setTalking(null)}
        />
      )}
      {pathways.isPending ? (
        <Loading what="pathways" />
      ) : pathways.data?.pathways.length === 0 ? (
        <p className="empty">No pathways yet.</p>
      ) : (
        <table className="list">
          <thead>
            <tr>
              <th scope="col">Pathway</th>
              <th scope="col">Production</th>
              <th scope="col">Staging</th>
              <th scope="col">Latest version</th>
              <th scope="col">Updated</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {pathways.data?.pathways.map((p) => (
              <tr key={p.id}>
                <td className="text">
                  <Link to={`/pathways/${p.id}`}>{p.name}</Link>
                  {p.description && <div className="muted">{p.description}</div>}
                </td>
                <td>{p.production_version ?? '—'}</td>
                <td>{p.staging_version ?? '—'}</td>
                <td>{p.latest_version ?? '—'}</td>
                <td>{time(p.updated_at)}</td>
                <td className="actions">
                  <button
                    type="button"
                    disabled={talking !== null}
                    onClick={() => setTalking({ id: p.id, name: p.name })}
                    aria-label={`Talk to this pathway: ${p.name}`}
                  >
                    Talk to this pathway
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
