/**
 * Agent tests through the API (docs/agent-tests.md, "Through the API"): the hosted service's
 * agent-testing shapes (scenarios, runs, batch runs, simulation sets), and Openline's own ways to
 * name the agent under test (`agent_id`, an inbound `phone_number`, an inline Send Call body).
 */
import { Type, type Static } from '@sinclair/typebox';
import { FreeObject, Nullable, checked } from './common.js';

const Text = Type.String({ minLength: 1 });

export const AssertionInput = Type.Object(
  {
    type: Type.String({
      minLength: 1,
      description:
        'LLM_JUDGE, CONTAINS, NOT_CONTAINS, REGEX, VARIABLE_EQUALS, VARIABLE_EXISTS, NODE_VISITED, NODE_NOT_VISITED, ' +
        'NODE_SEQUENCE, ENDED_BY, TRANSFERRED_TO, ANSWERED_BY, CALL_STATUS or MAX_DURATION (case-insensitive)',
    }),
    config: Type.Optional(FreeObject({ description: 'The type\'s settings, e.g. {"value": "confirmed"}' })),
    name: Type.Optional(Type.String()),
    is_required: Type.Optional(
      Type.Boolean({ description: 'A failed required assertion fails the run. Default true' }),
    ),
    weight: Type.Optional(Type.Number({ minimum: 0, description: 'Its share of the score. Default 1' })),
    order: Type.Optional(Type.Integer()),
  },
  { additionalProperties: true },
);
export type AssertionInput = Static<typeof AssertionInput>;

export const InputMessage = Type.Union([
  Type.String(),
  Type.Object(
    {
      role: Type.Optional(Type.String({ description: 'user (the simulated caller); other roles are skipped' })),
      content: Type.Optional(Type.String()),
    },
    {
      additionalProperties: true,
      description:
        "A line of the caller. Openline also reads after_ms (a pause before it, 0 to 60000) and interrupt (true: said over the agent's next words)",
    },
  ),
]);

export const scenarioFields = {
  name: Text,
  description: Type.Optional(Type.String()),
  category: Type.Optional(Type.String()),
  scenario_type: Type.Optional(Type.String()),
  pathway_id: Type.Optional(Text),
  persona_id: Type.Optional(Type.String({ description: 'Accepted and stored; Openline tests pathways and agents' })),
  agent_id: Type.Optional(Text),
  phone_number: Type.Optional(
    Type.String({ minLength: 1, description: "One of the account's inbound numbers: its settings are the agent" }),
  ),
  call: Type.Optional(
    FreeObject({ description: 'The agent as an inline Send Call body (task, first_sentence, tools, ...)' }),
  ),
  tester_persona_prompt: Type.Optional(Type.String()),
  tester_persona_name: Type.Optional(Type.String()),
  max_turns: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })),
  request_data: Type.Optional(FreeObject()),
  start_node_id: Type.Optional(Type.String()),
  bland_tone_enabled: Type.Optional(Type.Boolean()),
  is_required_for_promotion: Type.Optional(Type.Boolean()),
  enabled: Type.Optional(Type.Boolean()),
  input_messages: Type.Optional(
    Type.Array(InputMessage, {
      maxItems: 200,
      description: "The simulated caller's lines: the first when they answer, each next after the agent speaks",
    }),
  ),
  advanced_instructions: Type.Optional(Type.String()),
  metadata: Type.Optional(FreeObject()),
  assertions: Type.Optional(Type.Array(AssertionInput, { maxItems: 100 })),
};

export const ScenarioCreate = Type.Object(scenarioFields, { additionalProperties: true });
export type ScenarioCreate = Static<typeof ScenarioCreate>;
export const ScenarioUpdate = Type.Partial(ScenarioCreate, { additionalProperties: true, 'x-update': true });
export type ScenarioUpdate = Static<typeof ScenarioUpdate>;

export const FromCallBody = Type.Object(
  {
    call_id: Text,
    ...Type.Partial(Type.Object(scenarioFields)).properties,
  },
  { additionalProperties: true },
);

const webhook_url = Type.Optional(checked(Type.String({ description: 'Gets the result, signed' }), 'http_url'));
const version_number = Type.Optional(
  Type.Integer({ minimum: 0, description: 'Pathway version to test. Default: the production version' }),
);

export const RunBody = Type.Object(
  {
    version_number,
    request_data_override: Type.Optional(FreeObject({ description: 'Keys replace those of request_data' })),
    webhook_url,
  },
  { additionalProperties: true },
);
export type RunBody = Static<typeof RunBody>;

export const BatchRunBody = Type.Object(
  {
    scenario_ids: Type.Array(Text, { minItems: 1, maxItems: 200 }),
    version_number,
    webhook_url,
    repeat: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100, description: 'Runs of each scenario (pass rates). Default 1' }),
    ),
    request_data_override: Type.Optional(FreeObject()),
  },
  { additionalProperties: true },
);
export type BatchRunBody = Static<typeof BatchRunBody>;

export const SimulationSetBody = Type.Object(
  {
    scenario_ids: Type.Array(Text, { minItems: 1, maxItems: 200 }),
    simulations_per_scenario: Type.Integer({ minimum: 1, maximum: 100 }),
    pathway_id: Type.Optional(Type.String()),
    persona_id: Type.Optional(Type.String()),
    version_number,
    webhook_url,
  },
  { additionalProperties: true },
);
export type SimulationSetBody = Static<typeof SimulationSetBody>;

export const RunsQuery = Type.Object({
  scenario_id: Type.Optional(Type.String()),
  pathway_id: Type.Optional(Type.String()),
  persona_id: Type.Optional(Type.String()),
  batch_id: Type.Optional(Type.String()),
  status: Type.Optional(Type.String()),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
});

export const Assertion = Type.Object(
  {
    id: Type.String(),
    type: Type.String(),
    name: Nullable(Type.String()),
    config: FreeObject(),
    is_required: Type.Boolean(),
    weight: Type.Number(),
    order: Type.Integer(),
  },
  { additionalProperties: true },
);

export const Scenario = Type.Object(
  {
    id: Type.String(),
    org_id: Type.String({ description: 'The account' }),
    name: Type.String(),
    pathway_id: Nullable(Type.String()),
    persona_id: Nullable(Type.String()),
    agent_id: Nullable(Type.String()),
    phone_number: Nullable(Type.String()),
    call: Nullable(FreeObject()),
    description: Nullable(Type.String()),
    category: Nullable(Type.String()),
    scenario_type: Nullable(Type.String()),
    tester_persona_prompt: Nullable(Type.String()),
    tester_persona_name: Nullable(Type.String()),
    max_turns: Nullable(Type.Integer()),
    request_data: Nullable(FreeObject()),
    start_node_id: Nullable(Type.String()),
    bland_tone_enabled: Type.Boolean(),
    is_required_for_promotion: Type.Boolean(),
    enabled: Type.Boolean(),
    input_messages: Nullable(Type.Array(Type.Unknown())),
    advanced_instructions: Nullable(Type.String()),
    metadata: Nullable(FreeObject()),
    assertions: Type.Array(Assertion),
    most_recent_run: Nullable(
      Type.Object({
        id: Type.String(),
        status: Type.String(),
        score: Nullable(Type.Number()),
        completed_at: Nullable(Type.String()),
      }),
    ),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { additionalProperties: true },
);

export const AssertionResult = Type.Object(
  {
    assertion_id: Type.String(),
    name: Nullable(Type.String()),
    type: Type.String(),
    target: Type.String(),
    expected: Type.Unknown(),
    passed: Type.Boolean(),
    message: Type.String({ description: 'Why it passed or failed' }),
    is_required: Type.Boolean(),
    weight: Type.Number(),
  },
  { additionalProperties: true },
);

export const TestRun = Type.Object(
  {
    id: Type.String(),
    run_id: Type.String({ description: 'The id again' }),
    scenario_id: Type.String(),
    pathway_id: Nullable(Type.String()),
    persona_id: Nullable(Type.String()),
    batch_id: Nullable(Type.String()),
    status: Type.String({ description: 'RUNNING, PASSED, FAILED or ERROR' }),
    overall_score: Nullable(Type.Number({ description: 'Passed weight over all weight, 0 to 1' })),
    score: Nullable(Type.Number()),
    turn_count: Type.Integer(),
    duration_ms: Nullable(Type.Integer()),
    created_at: Type.String(),
    completed_at: Nullable(Type.String()),
    version_number: Nullable(Type.Integer()),
    call_id: Nullable(Type.String({ description: 'The sandbox call: GET /v1/calls/{call_id}' })),
    error_message: Nullable(Type.String()),
    scenario: Type.Object({ id: Type.String(), name: Type.String() }),
    assertion_results: Type.Array(AssertionResult),
    chat_history: Type.Array(Type.Object({ role: Type.String(), content: Type.String() })),
    transcript: Type.String({ description: 'One "role: words" line per turn' }),
    variables_extracted: FreeObject(),
    nodes_visited: Type.Array(Type.String()),
  },
  { additionalProperties: true },
);

export const TestBatch = Type.Object(
  {
    id: Type.String(),
    batch_id: Type.String(),
    status: Type.String({ description: 'RUNNING until every run ended; then PASSED, FAILED or ERROR' }),
    total_scenarios: Type.Integer(),
    passed_scenarios: Type.Integer({ description: 'Scenarios whose every run passed' }),
    failed_scenarios: Type.Integer(),
    total_runs: Type.Integer(),
    passed_runs: Type.Integer(),
    pass_rate: Type.Number({ description: 'Passed runs over ended runs (0 while none ended)' }),
    repeat: Type.Integer(),
    trigger_source: Type.String(),
    publish_on_pass: Type.Boolean(),
    created_at: Type.String(),
    scenarios: Type.Array(
      Type.Object({
        scenario_id: Type.String(),
        name: Type.String(),
        runs: Type.Integer(),
        passed: Type.Integer(),
        pass_rate: Type.Number(),
      }),
    ),
    runs: Type.Array(TestRun),
  },
  { additionalProperties: true },
);
