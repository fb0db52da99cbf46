import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from 'react-router';
import { api } from '../api';
import { useAgents, usePathways } from '../queries';
import { agentName } from './resources';
import {
  Badge,
  Field,
  FieldProblems,
  JsonArea,
  ListTable,
  Loading,
  Problem,
  parseJsonField,
  problemsByField,
  time,
  useTitle,
} from '../components/ui';

interface Scenario {
  id: string;
  name: string;
  pathway_id: string | null;
  agent_id: string | null;
  phone_number: string | null;
  assertions: unknown[];
  most_recent_run: { id: string; status: string; score: number | null; completed_at: string | null } | null;
}

interface AssertionResult {
  assertion_id: string;
  name: string | null;
  type: string;
  passed: boolean;
  message: string;
  is_required: boolean;
  weight: number;
}

interface TestRun {
  id: string;
  scenario: { id: string; name: string };
  status: string;
  overall_score: number | null;
  created_at: string;
  completed_at: string | null;
  call_id: string | null;
  error_message: string | null;
  assertion_results: AssertionResult[];
  chat_history: { role: string; content: string }[];
}

const score = (value: number | null) => (value === null ? '—' : `${Math.round(value * 100)}%`);

/** The agent under test: a pathway or an agent by its name (a link), or the call's number. */
function AgentUnderTest({ scenario: s, names }: { scenario: Scenario; names: Map<string, string> }) {
  if (s.pathway_id)
    return (
      <>
        pathway <Link to={`/pathways/${s.pathway_id}`}>{names.get(s.pathway_id) ?? s.pathway_id}</Link>
      </>
    );
  if (s.agent_id)
    return (
      <>
        agent <Link to="/agents">{names.get(s.agent_id) ?? s.agent_id}</Link>
      </>
    );
  return <>{s.phone_number ?? 'inline call'}</>;
}

/** An agent or a pathway the form offers, by its id and the name the dashboard gives it. */
interface Choice {
  id: string;
  name: string;
}

/** How the form names the agent under test. */
type AgentKind = 'agent_id' | 'pathway_id' | 'call';

interface ScenarioForm {
  name: string;
  kind: AgentKind;
  /** An agent or pathway id, or a Send Call body as JSON. */
  agent: string;
  /** The caller's lines, one a line. */
  lines: string;
  /** The assertions, as a JSON list. */
  assertions: string;
}

const EMPTY_SCENARIO: ScenarioForm = {
  name: '',
  kind: 'agent_id',
  agent: '',
  lines: '',
  assertions: '[\n  {"type": "CONTAINS", "config": {"value": "goodbye"}}\n]',
};

/** The fields of the form, and the names the server's errors give them. */
const SCENARIO_FIELDS = {
  name: ['name'],
  agent: ['agent_id', 'pathway_id', 'phone_number', 'call'],
  lines: ['input_messages', 'tester_persona_prompt'],
  assertions: ['assertions'],
};

function scenarioBody(form: ScenarioForm) {
  const agent =
    form.kind === 'call'
      ? { call: parseJsonField('call (the Send Call body)', form.agent) }
      : form.agent.trim() && { [form.kind]: form.agent.trim() };
  return {
    name: form.name,
    ...agent,
    input_messages: form.lines
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean)
      .map((content) => ({ role: 'user', content })),
    assertions: parseJsonField('assertions', form.assertions) ?? [],
  };
}

/** A new scenario: its name, the agent under test, the caller's lines and the assertions. */
function NewScenario({ agents, pathways, onCreated }: { agents: Choice[]; pathways: Choice[]; onCreated(): void }) {
  const [form, setForm] = useState<ScenarioForm>(EMPTY_SCENARIO);
  const create = useMutation({
    mutationFn: async () =>
      api<{ id: string }>('/v1/agent-testing/scenarios', { method: 'POST', body: scenarioBody(form) }),
    onSuccess: () => {
      setForm(EMPTY_SCENARIO);
      onCreated();
    },
  });
  const { byField, other } = problemsByField(create.error, SCENARIO_FIELDS);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  const set = (field: keyof ScenarioForm) => (e: { target: { value: string } }) =>
    // A new kind of agent under test starts with nothing chosen.
    setForm({ ...form, [field]: e.target.value, ...(field === 'kind' && { agent: '' }) });
  return (
    <form onSubmit={submit} className="scenario-form" aria-label="New scenario">
      <div>
        <Field label="Scenario name">
          <input value={form.name} onChange={set('name')} />
        </Field>
        <FieldProblems lines={byField.name} />
      </div>
      <div>
        <Field label="Agent under test">
          <select value={form.kind} onChange={set('kind')}>
            <option value="agent_id">An agent</option>
            <option value="pathway_id">A pathway</option>
            <option value="call">A Send Call body (JSON)</option>
          </select>
        </Field>
        {form.kind === 'call' ? (
          <JsonArea
            label="Send Call body"
            rows={4}
            value={form.agent}
            onChange={(agent) => setForm({ ...form, agent })}
          />
        ) : (
          <Field
            label={form.kind === 'agent_id' ? 'Agent' : 'Pathway'}
            hint={
              (form.kind === 'agent_id' ? agents : pathways).length === 0
                ? `This account has no ${form.kind === 'agent_id' ? 'agents' : 'pathways'} yet`
                : undefined
            }
          >
            <select value={form.agent} onChange={set('agent')}>
              <option value="">{form.kind === 'agent_id' ? 'Choose an agent' : 'Choose a pathway'}</option>
              {(form.kind === 'agent_id' ? agents : pathways).map((choice) => (
                <option key={choice.id} value={choice.id}>
                  {choice.name}
                </option>
              ))}
            </select>
          </Field>
        )}
        <FieldProblems lines={byField.agent} />
      </div>
      <div>
        <Field label="Caller lines" hint="One a line: the first on answering, each next after the agent speaks">
          <textarea rows={4} value={form.lines} onChange={set('lines')} />
        </Field>
        <FieldProblems lines={byField.lines} />
      </div>
      <div>
        <JsonArea
          label="Assertions"
          rows={4}
          value={form.assertions}
          onChange={(assertions) => setForm({ ...form, assertions })}
        />
        <FieldProblems lines={byField.assertions} />
      </div>
      <div>
        {other.length > 0 && <Problem error={new Error(other.join('; '))} />}
        <button type="submit" disabled={create.isPending}>
          Create scenario
        </button>
      </div>
    </form>
  );
}

/** Tests: the account's agent test scenarios, a Run button each, a form for a new one, and the latest runs. */
export function TestsPage() {
  useTitle('Tests');
  const queries = useQueryClient();
  const navigate = useNavigate();
  const scenarios = useQuery({
    queryKey: ['scenarios'],
    queryFn: async () => (await api<{ scenarios: Scenario[] }>('/v1/agent-testing/scenarios')).scenarios,
    refetchInterval: (q) => (q.state.data?.some((s) => s.most_recent_run?.status === 'RUNNING') ? 2_000 : false),
  });
  const pathways = usePathways();
  const agents = useAgents();
  const pathwayChoices: Choice[] = pathways.data?.pathways.map((p) => ({ id: p.id, name: p.name })) ?? [];
  const agentChoices: Choice[] = agents.data?.map((a) => ({ id: a.agent_id, name: agentName(a) })) ?? [];
  const names = new Map([...pathwayChoices, ...agentChoices].map((c) => [c.id, c.name]));
  const runs = useQuery({
    queryKey: ['test-runs'],
    queryFn: async () => (await api<{ runs: TestRun[] }>('/v1/agent-testing/runs?limit=20')).runs,
    refetchInterval: (q) => (q.state.data?.some((r) => r.status === 'RUNNING') ? 2_000 : false),
  });
  const run = useMutation({
    mutationFn: (id: string) =>
      api<{ run_id: string }>(`/v1/agent-testing/scenarios/${id}/run`, { method: 'POST', body: {} }),
    onSuccess: (r) => {
      void queries.invalidateQueries({ queryKey: ['scenarios'] });
      void queries.invalidateQueries({ queryKey: ['test-runs'] });
      void navigate(`/tests/runs/${r.run_id}`);
    },
  });

  return (
    <section>
      <h1>Tests</h1>
      <p className="muted">
        Scenarios run a scripted caller against an agent or pathway on the sandbox network and judge the call (POST
        /v1/agent-testing/scenarios; see docs/agent-tests.md).
      </p>
      <NewScenario
        agents={agentChoices}
        pathways={pathwayChoices}
        onCreated={() => void queries.invalidateQueries({ queryKey: ['scenarios'] })}
      />
      <Problem error={scenarios.error ?? run.error} />
      <ListTable
        rows={scenarios.data}
        pending={scenarios.isPending}
        what="scenarios"
        empty="No scenarios yet."
        rowKey={(s) => s.id}
        columns={[
          { header: 'Scenario', className: 'text', cell: (s) => s.name },
          { header: 'Agent under test', cell: (s) => <AgentUnderTest scenario={s} names={names} /> },
          { header: 'Assertions', cell: (s) => s.assertions.length },
          {
            header: 'Last run',
            cell: (s) =>
              s.most_recent_run ? (
                <Link to={`/tests/runs/${s.most_recent_run.id}`}>
                  <Badge value={s.most_recent_run.status} />
                </Link>
              ) : (
                <span className="muted">never run</span>
              ),
          },
          { header: 'Score', cell: (s) => score(s.most_recent_run?.score ?? null) },
          {
            header: 'Actions',
            hiddenHeader: true,
            cell: (s) => (
              <button
                type="button"
                disabled={run.isPending}
                onClick={() => run.mutate(s.id)}
                aria-label={`Run ${s.name}`}
              >
                Run
              </button>
            ),
          },
        ]}
      />
      <h2>Latest runs</h2>
      <Problem error={runs.error} />
      <ListTable
        rows={runs.data}
        pending={runs.isPending}
        what="runs"
        empty="No runs yet."
        rowKey={(r) => r.id}
        columns={[
          { header: 'Run', cell: (r) => <Link to={`/tests/runs/${r.id}`}>{time(r.created_at)}</Link> },
          { header: 'Scenario', className: 'text', cell: (r) => r.scenario.name },
          { header: 'Status', cell: (r) => <Badge value={r.status} /> },
          { header: 'Score', cell: (r) => score(r.overall_score) },
        ]}
      />
    </section>
  );
}

/** One run: its status and score, each assertion with its message, the transcript and the call. */
export function TestRunPage() {
  const { id = '' } = useParams();
  const run = useQuery({
    queryKey: ['test-run', id],
    queryFn: () => api<TestRun>(`/v1/agent-testing/runs/${id}`),
    refetchInterval: (q) => (q.state.data?.status === 'RUNNING' ? 1_000 : false),
  });
  useTitle(run.data && `Test run: ${run.data.scenario.name}`);
  if (run.isPending) return <Loading what="the run" />;
  if (!run.data) return <Problem error={run.error} />;
  const r = run.data;
  return (
    <section>
      <p>
        <Link to="/tests">Tests</Link>
      </p>
      <h1>{r.scenario.name}</h1>
      <dl className="facts">
        <dt>Status</dt>
        <dd>
          <Badge value={r.status} />
        </dd>
        <dt>Score</dt>
        <dd>{score(r.overall_score)}</dd>
        <dt>Started</dt>
        <dd>{time(r.created_at)}</dd>
        <dt>Call</dt>
        <dd>{r.call_id ? <Link to={`/calls/${r.call_id}`}>{r.call_id}</Link> : <span className="muted">none</span>}</dd>
      </dl>
      {r.error_message && (
        <div role="alert" className="problem">
          {r.error_message}
        </div>
      )}
      <h2>Assertions</h2>
      <ListTable
        rows={r.assertion_results}
        what="assertions"
        empty={r.status === 'RUNNING' ? 'The call is under way.' : 'No assertions.'}
        rowKey={(a) => a.assertion_id}
        columns={[
          {
            header: 'Assertion',
            cell: (a) => (
              <>
                {a.name ?? a.type}
                {!a.is_required && <span className="muted"> (optional)</span>}
              </>
            ),
          },
          { header: 'Result', cell: (a) => <Badge value={a.passed ? 'passed' : 'failed'} /> },
          { header: 'Message', cell: (a) => a.message },
          { header: 'Weight', cell: (a) => a.weight },
        ]}
      />
      <h2>Transcript</h2>
      {r.chat_history.length === 0 ? (
        <p className="empty">No words yet.</p>
      ) : (
        <ol className="transcript">
          {r.chat_history.map((line, i) => (
            <li key={i} className={line.role}>
              <strong>{line.role === 'user' ? 'Caller' : 'Agent'}:</strong> {line.content}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
