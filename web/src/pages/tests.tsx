import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from 'react-router';
import { api } from '../api';
import { Badge, Loading, Problem, time } from '../components/ui';

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

const agentOf = (s: Scenario) =>
  s.pathway_id ? `pathway ${s.pathway_id}` : s.agent_id ? `agent ${s.agent_id}` : (s.phone_number ?? 'inline call');

/** Tests: the account's agent test scenarios, a Run button each, and the latest runs. */
export function TestsPage() {
  const queries = useQueryClient();
  const navigate = useNavigate();
  const scenarios = useQuery({
    queryKey: ['scenarios'],
    queryFn: async () => (await api<{ scenarios: Scenario[] }>('/v1/agent-testing/scenarios')).scenarios,
    refetchInterval: (q) => (q.state.data?.some((s) => s.most_recent_run?.status === 'RUNNING') ? 2_000 : false),
  });
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
      <Problem error={scenarios.error ?? run.error} />
      {scenarios.isPending ? (
        <Loading what="scenarios" />
      ) : scenarios.data?.length === 0 ? (
        <p className="empty">No scenarios yet.</p>
      ) : (
        <table className="list">
          <thead>
            <tr>
              <th scope="col">Scenario</th>
              <th scope="col">Agent under test</th>
              <th scope="col">Assertions</th>
              <th scope="col">Last run</th>
              <th scope="col">Score</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {scenarios.data?.map((s) => (
              <tr key={s.id}>
                <td>{s.name}</td>
                <td>{agentOf(s)}</td>
                <td>{s.assertions.length}</td>
                <td>
                  {s.most_recent_run ? (
                    <Link to={`/tests/runs/${s.most_recent_run.id}`}>
                      <Badge value={s.most_recent_run.status} />
                    </Link>
                  ) : (
                    <span className="muted">never run</span>
                  )}
                </td>
                <td>{score(s.most_recent_run?.score ?? null)}</td>
                <td>
                  <button type="button" disabled={run.isPending} onClick={() => run.mutate(s.id)}>
                    Run
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Latest runs</h2>
      <Problem error={runs.error} />
      {runs.isPending ? (
        <Loading what="runs" />
      ) : runs.data?.length === 0 ? (
        <p className="empty">No runs yet.</p>
      ) : (
        <table className="list">
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Scenario</th>
              <th scope="col">Status</th>
              <th scope="col">Score</th>
            </tr>
          </thead>
          <tbody>
            {runs.data?.map((r) => (
              <tr key={r.id}>
                <td>
                  <Link to={`/tests/runs/${r.id}`}>{time(r.created_at)}</Link>
                </td>
                <td>{r.scenario.name}</td>
                <td>
                  <Badge value={r.status} />
                </td>
                <td>{score(r.overall_score)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
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
      {r.assertion_results.length === 0 ? (
        <p className="empty">{r.status === 'RUNNING' ? 'The call is under way.' : 'No assertions.'}</p>
      ) : (
        <table className="list">
          <thead>
            <tr>
              <th scope="col">Assertion</th>
              <th scope="col">Result</th>
              <th scope="col">Message</th>
              <th scope="col">Weight</th>
            </tr>
          </thead>
          <tbody>
            {r.assertion_results.map((a) => (
              <tr key={a.assertion_id}>
                <td>
                  {a.name ?? a.type}
                  {!a.is_required && <span className="muted"> (optional)</span>}
                </td>
                <td>
                  <Badge value={a.passed ? 'passed' : 'failed'} />
                </td>
                <td>{a.message}</td>
                <td>{a.weight}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
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
