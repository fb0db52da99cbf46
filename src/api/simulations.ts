import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, FreeObject, IdParams } from '../schemas/common.js';
import { notFound } from '../errors.js';
import { assertValid } from './validation.js';
import { startBatch, type PlannedRun } from './agent-testing.js';
import { agentCall, presentRun, type ScenarioSpec } from '../agent-tests/scenario-runs.js';
import type { TestRunRow } from '../store/agent-tests.js';
import { fromJson } from '../store/json.js';

type Json = Record<string, unknown>;

const tags = ['Agent testing'];
/** The most simulated callers of one simulation, as the hosted API allows. */
const MAX_PROFILES = 5;

/** One simulated caller: who they are and what they want. */
interface Profile {
  name: string;
  objective: string;
}

interface SimulationBody {
  pathway_id: string;
  pathway_version?: number | string | undefined;
  start_node_id?: string | undefined;
  request_data?: Json | undefined;
  max_turns?: number | undefined;
  advanced_instructions?: string | undefined;
}

const Common = {
  pathway_id: Type.String({ minLength: 1, description: 'The pathway the simulated callers call' }),
  pathway_version: Type.Optional(
    Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: '^\\d+$' })], {
      description: 'Default: the production version',
    }),
  ),
  start_node_id: Type.Optional(Type.String({ minLength: 1 })),
  request_data: Type.Optional(FreeObject({ description: 'Variables of the calls ({{name}})' })),
  max_turns: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, description: "The caller's lines at most" })),
  advanced_instructions: Type.Optional(Type.String({ maxLength: 4000, description: 'Said to every simulated caller' })),
};

/**
 * Starts a simulation: each profile is a caller played by the language model (its objective the
 * goal, its name the personality) who calls the pathway through this server's own engine, as an
 * agent test run with no assertions; the simulation is the batch of those runs.
 */
async function simulate(
  app: Api,
  request: FastifyRequest,
  services: Services,
  body: SimulationBody,
  profiles: Profile[],
  field: string,
) {
  const errors: string[] = [];
  const planned: PlannedRun[] = [];
  const version = body.pathway_version === undefined ? undefined : Number(body.pathway_version);
  for (const [i, profile] of profiles.entries()) {
    const spec: ScenarioSpec = {
      name: profile.name,
      pathway_id: body.pathway_id,
      ...(body.start_node_id && { start_node_id: body.start_node_id }),
      ...(body.request_data && { request_data: body.request_data }),
      tester_persona_prompt: [profile.objective, body.advanced_instructions].filter(Boolean).join('\n'),
      tester_persona_name: profile.name,
      max_turns: body.max_turns ?? 10,
      assertions: [],
    };
    const own: string[] = [];
    const call = await agentCall(services, request.account.id, spec as Json, { version_number: version }, own);
    errors.push(...own);
    // No scripted lines: the language model plays every caller.
    if (call) planned.push({ id: `simulation:${i + 1}`, spec, lines: [], call });
  }
  if (!services.config.llm)
    errors.push(
      ...profiles.map(
        (_p, i) =>
          `${field}[${i}]: objective needs a language model to play the caller (set OPENAI_API_KEY or OPENLINE_LLM_BASE_URL)`,
      ),
    );
  if (!(await services.pathways.get(request.account.id, body.pathway_id)))
    errors.push('pathway_id is not a pathway of this account');
  assertValid(request, [...new Set(errors)]);
  const { batch, runs } = await startBatch(app, request, services, planned, {
    repeat: 1,
    version_number: version ?? null,
    webhook_url: null,
    settings: {
      scenario_ids: planned.map((p) => p.id),
      trigger_source: 'simulation',
      pathway_id: body.pathway_id,
      pathway_version: version ?? null,
    },
  });
  return { batch, runs: runs.map((run, i) => ({ ...run, name: profiles[i]!.name })) };
}

/** A simulated caller's state in the hosted API's words. */
function personaState(row: TestRunRow) {
  const run = presentRun(row);
  const maxTurns = fromJson<{ tester?: { max_turns?: number | null } }>(row.settings, {}).tester?.max_turns ?? null;
  const status =
    row.status === 'RUNNING'
      ? 'in_progress'
      : row.status === 'ERROR'
        ? 'failed'
        : maxTurns !== null && run.turn_count >= maxTurns
          ? 'max_turns_reached'
          : 'completed';
  return {
    name: run.scenario.name,
    run_id: run.run_id,
    call_id: run.call_id,
    status,
    turns: run.turn_count,
    transcript: run.chat_history.map((m) => ({ role: m.role, text: m.content })),
    error: run.error_message,
  };
}

/** Profiles as the hosted API's clients send them: `{name, objective}`, or a description alone. */
function profilesOf(raw: unknown[]): Profile[] {
  return raw.map((p, i) => {
    if (typeof p === 'string') return { name: `Caller ${i + 1}`, objective: p };
    const o = p as Json;
    const objective = [o.objective, o.prompt, o.description, o.persona].find((x) => typeof x === 'string') as string;
    return { name: typeof o.name === 'string' && o.name.trim() ? o.name : `Caller ${i + 1}`, objective };
  });
}

const ProfileSchema = Type.Union([
  Type.String({ minLength: 1, maxLength: 4000, description: 'What the caller is like and wants' }),
  Type.Object(
    {
      name: Type.Optional(Type.String({ maxLength: 200 })),
      objective: Type.Optional(Type.String({ minLength: 1, maxLength: 4000 })),
      prompt: Type.Optional(Type.String({ minLength: 1, maxLength: 4000 })),
      description: Type.Optional(Type.String({ minLength: 1, maxLength: 4000 })),
    },
    { additionalProperties: true },
  ),
]);

/** Profiles that say nothing of what the caller wants, named by field. */
function unstated(profiles: Profile[], field: string): string[] {
  return profiles.flatMap((p, i) =>
    typeof p.objective === 'string' && p.objective.trim()
      ? []
      : [`${field}[${i}].objective is required: what the caller wants`],
  );
}

/**
 * Simulations (the hosted API's `bland simulate` and pathway simulations): callers played by the
 * language model call a pathway, in parallel, through this server's engine on the sandbox network.
 */
export default async function routes(app: Api, services: Services): Promise<void> {
  app.post(
    '/calls/simulate',
    {
      schema: {
        tags,
        summary: 'Simulate callers of a pathway',
        description:
          '1 to 5 `profiles` (`{name, objective}`), each a caller played by the configured language model, call the ' +
          'pathway at once; each call is an agent test run (GET /v1/agent-testing/runs/{run_id}) and the simulation ' +
          'their batch (GET /v1/agent-testing/batches/{simulation_id}). Needs a language model.',
        body: Type.Object(
          { ...Common, profiles: Type.Array(ProfileSchema, { minItems: 1, maxItems: MAX_PROFILES }) },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            simulation_id: Type.String(),
            calls: Type.Array(
              Type.Object({
                profile_name: Type.String(),
                call_id: Type.Union([Type.String(), Type.Null()]),
                run_id: Type.String(),
              }),
            ),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const profiles = profilesOf(request.body.profiles);
      assertValid(request, unstated(profiles, 'profiles'));
      const { batch, runs } = await simulate(app, request, services, request.body, profiles, 'profiles');
      return {
        status: 'success' as const,
        simulation_id: batch.id,
        calls: runs.map((r) => ({ profile_name: r.name, call_id: r.call_id, run_id: r.run_id })),
      };
    },
  );

  app.post(
    '/pathway/simulations/run',
    {
      schema: {
        tags,
        summary: 'Run a pathway simulation',
        description:
          'As POST /v1/calls/simulate, with `personas`: descriptions of the callers, or `{name, objective}`. ' +
          'GET /v1/pathway/simulations/{simulation_id} follows it.',
        body: Type.Object(
          { ...Common, personas: Type.Array(ProfileSchema, { minItems: 1, maxItems: MAX_PROFILES }) },
          { additionalProperties: true },
        ),
        response: { 200: FreeObject(), ...errorResponses },
      },
    },
    async (request) => {
      const profiles = profilesOf(request.body.personas);
      assertValid(request, unstated(profiles, 'personas'));
      const { batch, runs } = await simulate(app, request, services, request.body, profiles, 'personas');
      return {
        status: 'success',
        simulation_id: batch.id,
        pathway_id: request.body.pathway_id,
        pathway_version: request.body.pathway_version === undefined ? null : Number(request.body.pathway_version),
        personas: runs.map((r) => ({ name: r.name, run_id: r.run_id, call_id: r.call_id, status: 'in_progress' })),
      };
    },
  );

  app.get(
    '/pathway/simulations/:id',
    {
      schema: {
        tags,
        summary: 'Get a pathway simulation',
        description:
          "Each simulated caller's `status` (`in_progress`, `completed`, `max_turns_reached` or `failed`), its call, " +
          'turns and transcript.',
        params: IdParams,
        response: { 200: FreeObject(), ...errorResponses },
      },
    },
    async (request) => {
      const batch = await services.agentTests.batch(request.account.id, request.params.id);
      const settings = fromJson<Json>(batch?.settings ?? '{}', {});
      if (!batch || settings.trigger_source !== 'simulation') throw notFound('Simulation');
      const runs = await services.agentTests.batchRuns(request.account.id, batch.id);
      const personas = runs.map(personaState);
      return {
        status: 'success',
        simulation_id: batch.id,
        pathway_id: settings.pathway_id ?? null,
        pathway_version: settings.pathway_version ?? null,
        state: personas.some((p) => p.status === 'in_progress') ? 'in_progress' : 'completed',
        personas,
      };
    },
  );
}
