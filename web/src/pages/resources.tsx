import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, type Agent, type Json } from '../api';
import { JsonArea, Loading, Problem, brief, parseJsonField, time, useTitle } from '../components/ui';
import { WebCallPanel, type TalkTarget } from '../components/web-call';
import { ToolTabs } from '../layout';

/** A resource kept with create / read / update / delete endpoints and edited as JSON. */
interface Kind<T> {
  title: string;
  one: string;
  list(): Promise<T[]>;
  id(item: T): string;
  name(item: T): string;
  created(item: T): string | null;
  /** What is edited: the item without its id and timestamps. */
  editable(item: T): Json;
  template: Json;
  create(body: Json): Promise<unknown>;
  update(id: string, body: Json): Promise<unknown>;
  remove(id: string): Promise<unknown>;
  /** Whom "Talk to this ..." calls from the browser, for kinds one can talk to. */
  talk?(item: T): TalkTarget;
  /** Further buttons of a row (e.g. "Promote draft"): the list is reloaded once one is done. */
  actions?: { label: string; run(item: T): Promise<unknown> }[];
}

function ResourcePage<T>({ kind }: { kind: Kind<T> }) {
  useTitle(kind.title);
  const queries = useQueryClient();
  const key = [kind.title];
  const items = useQuery({ queryKey: key, queryFn: kind.list });
  const [editing, setEditing] = useState<{ id: string | null; text: string } | null>(null);
  const [talking, setTalking] = useState<{ target: TalkTarget; title: string } | null>(null);
  const done = () => {
    setEditing(null);
    void queries.invalidateQueries({ queryKey: key });
  };
  const save = useMutation({
    mutationFn: async () => {
      if (!editing) return;
      const body = parseJsonField(kind.one, editing.text);
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new Error(`The ${kind.one} must be a JSON object`);
      await (editing.id ? kind.update(editing.id, body as Json) : kind.create(body as Json));
    },
    onSuccess: done,
  });
  const remove = useMutation({ mutationFn: (id: string) => kind.remove(id), onSuccess: done });
  const act = useMutation({
    mutationFn: ({ run, item }: { run: (item: T) => Promise<unknown>; item: T }) => run(item),
    onSuccess: done,
  });

  return (
    <section>
      <div className="page-head">
        <h1>{kind.title}</h1>
        <button type="button" onClick={() => setEditing({ id: null, text: JSON.stringify(kind.template, null, 2) })}>
          New {kind.one}
        </button>
      </div>
      {editing && (
        <form
          // Another item's editor is a new form, whose JSON takes the focus again.
          key={editing.id ?? ''}
          className="editor"
          onSubmit={(e) => {
            e.preventDefault();
            save.mutate();
          }}
        >
          <h2>{editing.id ? `Edit ${kind.one}` : `New ${kind.one}`}</h2>
          <JsonArea
            label={`${kind.one} (JSON)`}
            rows={16}
            autoFocus
            value={editing.text}
            onChange={(text) => setEditing({ ...editing, text })}
          />
          <Problem error={save.error} />
          <div className="actions">
            <button type="submit" disabled={save.isPending}>
              Save {kind.one}
            </button>
            <button type="button" className="secondary" onClick={() => setEditing(null)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {talking && <WebCallPanel key={JSON.stringify(talking)} {...talking} onClose={() => setTalking(null)} />}
      <Problem error={items.error ?? remove.error ?? act.error} />
      {items.isPending ? (
        <Loading what={kind.title.toLowerCase()} />
      ) : items.data?.length === 0 ? (
        <p className="empty">No {kind.title.toLowerCase()} yet.</p>
      ) : (
        <table className="list">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">ID</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {items.data?.map((item) => (
              <tr key={kind.id(item)}>
                <td className="text">{kind.name(item)}</td>
                <td>
                  <code>{kind.id(item)}</code>
                </td>
                <td>{time(kind.created(item))}</td>
                <td className="actions">
                  {kind.talk && (
                    <button
                      type="button"
                      disabled={talking !== null}
                      onClick={() =>
                        setTalking({ target: kind.talk!(item), title: `${kind.one} “${kind.name(item)}”` })
                      }
                      aria-label={`Talk to this ${kind.one}: ${kind.name(item)}`}
                    >
                      Talk to this {kind.one}
                    </button>
                  )}
                  {kind.actions?.map((action) => (
                    <button
                      key={action.label}
                      type="button"
                      className="secondary"
                      disabled={act.isPending}
                      onClick={() => act.mutate({ run: action.run, item })}
                      aria-label={`${action.label}: ${kind.one} ${kind.name(item)}`}
                    >
                      {action.label}
                    </button>
                  ))}
                  <button
                    type="button"
                    className="secondary"
                    onClick={() =>
                      setEditing({ id: kind.id(item), text: JSON.stringify(kind.editable(item), null, 2) })
                    }
                    aria-label={`Edit ${kind.one} ${kind.name(item)}`}
                  >
                    Edit
                  </button>
                  <button
                    type="button"
                    className="danger"
                    onClick={() => {
                      if (window.confirm(`Delete ${kind.one} ${kind.name(item)}?`)) remove.mutate(kind.id(item));
                    }}
                    aria-label={`Delete ${kind.one} ${kind.name(item)}`}
                  >
                    Delete
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

const without = (item: Json, ...names: string[]): Json =>
  Object.fromEntries(Object.entries(item).filter(([name]) => !names.includes(name)));

/**
 * What the dashboard calls an agent (agents have no name field): its prompt's first sentence when
 * that is short, else the prompt's start cut at a word, with an ellipsis.
 */
export function agentName(agent: Agent): string {
  if (typeof agent.prompt !== 'string' || agent.prompt.trim() === '') return `Agent ${agent.agent_id.slice(0, 8)}`;
  const sentence = /^[^.!?]*[.!?](?=\s|$)/.exec(agent.prompt.trim())?.[0];
  return sentence && sentence.length <= 60 ? sentence : brief(agent.prompt, 60);
}

const AGENTS: Kind<Agent> = {
  title: 'Agents',
  one: 'agent',
  list: async () => (await api<{ agents: Agent[] }>('/v1/agents')).agents,
  id: (a) => a.agent_id,
  name: agentName,
  created: (a) => a.created_at,
  editable: (a) => without(a as unknown as Json, 'agent_id', 'created_at', 'updated_at'),
  template: {
    prompt: 'You are Ava, a friendly receptionist of Sunny Dental. Help callers book a cleaning.',
    first_sentence: 'Hi, this is Ava from Sunny Dental.',
  },
  create: (body) => api('/v1/agents', { method: 'POST', body }),
  update: (id, body) => api(`/v1/agents/${id}`, { method: 'POST', body }),
  remove: (id) => api(`/v1/agents/${id}`, { method: 'DELETE' }),
  talk: (a) => ({ agentId: a.agent_id }),
};

interface Tool extends Json {
  tool_id: string;
  name: string;
  created_at?: string;
}

const TOOLS: Kind<Tool> = {
  title: 'Tools',
  one: 'tool',
  list: async () => (await api<{ tools: Tool[] }>('/v1/tools')).tools,
  id: (t) => t.tool_id,
  name: (t) => t.name,
  created: (t) => t.created_at ?? null,
  editable: (t) => without(t, 'tool_id', 'created_at', 'updated_at'),
  template: {
    name: 'BookAppointment',
    description: 'Books an appointment for the caller',
    url: 'https://example.com/appointments',
    method: 'POST',
    input_schema: { type: 'object', properties: { date: { type: 'string' } }, required: ['date'] },
    response: { confirmation: '$.confirmation' },
  },
  create: (body) => api('/v1/tools', { method: 'POST', body }),
  update: (id, body) => api(`/v1/tools/${id}`, { method: 'POST', body }),
  remove: (id) => api(`/v1/tools/${id}`, { method: 'DELETE' }),
};

interface PersonaVersion extends Json {
  version_number: number;
}
interface Persona extends Json {
  id: string;
  name: string;
  created_at: string;
  current_production_version: PersonaVersion;
  current_draft_version: PersonaVersion;
}

/** What a persona's editor shows: who it is, and its draft's behaviour (what Save changes). */
const BEHAVIOUR = [
  'personality_prompt',
  'orchestration_prompt',
  'call_config',
  'default_tools',
  'kb_ids',
  'pathway_conditions',
];

const PERSONAS: Kind<Persona> = {
  title: 'Personas',
  one: 'persona',
  list: async () => (await api<{ data: Persona[] }>('/v1/personas')).data,
  id: (p) => p.id,
  name: (p) =>
    `${p.name} (live: version ${p.current_production_version.version_number}, draft: ${p.current_draft_version.version_number})`,
  created: (p) => p.created_at,
  editable: (p) => ({
    ...Object.fromEntries(['name', 'role', 'description', 'tags'].map((k) => [k, p[k]])),
    ...Object.fromEntries(BEHAVIOUR.map((k) => [k, p.current_draft_version[k]])),
  }),
  template: {
    name: 'Ava',
    role: 'Receptionist',
    personality_prompt: 'You are Ava, the friendly receptionist of Sunny Dental.',
    call_config: { voice: 'maya', max_duration: 10 },
    kb_ids: [],
  },
  create: (body) => api('/v1/personas', { method: 'POST', body }),
  update: (id, body) => api(`/v1/personas/${id}`, { method: 'PATCH', body }),
  remove: (id) => api(`/v1/personas/${id}`, { method: 'DELETE' }),
  actions: [{ label: 'Promote draft', run: (p) => api(`/v1/personas/${p.id}/versions/promote`, { method: 'POST' }) }],
};

interface Secret extends Json {
  id: string;
  name: string;
  reference: string;
  created_at: string;
}

const SECRETS: Kind<Secret> = {
  title: 'Secrets',
  one: 'secret',
  list: async () => (await api<{ data: Secret[] }>('/v1/secrets')).data,
  id: (s) => s.id,
  name: (s) => `${s.name}: ${s.reference}${s.static ? '' : ' (refreshed)'}`,
  created: (s) => s.created_at,
  // The value is never shown: Save with a "secret" (or "config") gives a new one.
  editable: (s) => ({ name: s.name }),
  template: { name: 'crm_token', secret: 'paste the value here' },
  create: (body) => api('/v1/secrets', { method: 'POST', body }),
  update: (id, body) => api(`/v1/secrets/${id}`, { method: 'PATCH', body }),
  remove: (id) => api(`/v1/secrets/${id}`, { method: 'DELETE' }),
};

export const AgentsPage = () => <ResourcePage kind={AGENTS} />;
export const PersonasPage = () => <ResourcePage kind={PERSONAS} />;
export const SecretsPage = () => (
  <>
    <ToolTabs />
    <ResourcePage kind={SECRETS} />
  </>
);
export const ToolsPage = () => (
  <>
    <ToolTabs />
    <ResourcePage kind={TOOLS} />
  </>
);
