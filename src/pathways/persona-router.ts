import type { Agent, AgentContext, AgentInput, AgentReply } from '../agent/types.js';
import type { CallRequest, PersonaRoute } from '../schemas/call-request.js';
import { historyOf } from '../agent/llm.js';
import { bestMatch, contentWords, INTENT_WORDS } from './offline.js';
import { chooseRoute, type PathwayLlm } from './llm.js';

/** Words (as contentWords stems them) of greeting and small talk: no topic a pathway could be for. */
const GREETING_WORDS: ReadonlySet<string> = new Set([
  'hello',
  'hi',
  'hey',
  'okay',
  'ok',
  'thank',
  'bye',
  'good',
  'morn',
  'afternoon',
  'even',
  'speak',
  'sure',
  'fine',
  'great',
]);

export interface PersonaRouterDeps {
  /** The agent that runs a pathway for a request (the pathway runner of calls). */
  pathwayAgent(request: CallRequest): Agent;
  /** With a language model, it chooses the route; without one, the caller's words do. */
  llm?: PathwayLlm;
  log?: { warn(object: object, message: string): void };
}

/**
 * The route, if any, whose topic the caller's words are about. The language model chooses among
 * the routes' names and prompts; without one (or when it fails), the route sharing the most topic
 * words with what was heard, if any.
 */
export async function chooseRouteFor(
  heard: string,
  ctx: AgentContext,
  routes: readonly PersonaRoute[],
  deps: Pick<PersonaRouterDeps, 'llm' | 'log'>,
): Promise<number | undefined> {
  // "Hello?", "Yes", "Okay": words with no topic route nowhere, and cost no model request.
  if (![...contentWords(heard)].some((word) => !INTENT_WORDS.has(word) && !GREETING_WORDS.has(word))) return undefined;
  if (deps.llm) {
    try {
      const decision = await chooseRoute(
        deps.llm,
        { model: deps.llm.model, ...(ctx.signal && { signal: ctx.signal }) },
        {
          system:
            'You route a phone call: when what the caller wants is what one of the paths is for, the call is handed to it.',
          history: historyOf(ctx.transcript),
          heard,
          options: routes.map((r, i) => ({
            id: String(i),
            kind: 'edge',
            label: r.name || r.prompt,
            description: r.prompt,
          })),
        },
      );
      return decision.choice === null ? undefined : Number(decision.choice);
    } catch (error) {
      deps.log?.warn({ call_id: ctx.callId, err: error }, 'persona routing by the model failed: routing by words');
    }
  }
  const match = bestMatch(
    heard,
    routes.map((r, i) => ({ id: String(i), text: `${r.name} ${r.prompt}` })),
  );
  return match && match.matched.some((word) => !INTENT_WORDS.has(word)) ? Number(match.id) : undefined;
}

/**
 * A persona with pathway conditions: its own agent talks until the caller's words are about what
 * one of the conditions is for, then the call is handed to that condition's pathway (from its
 * start node, or `start_node_id`), which runs the rest of the call.
 */
export class PersonaRouter implements Agent {
  private routed: { agent: Agent; request: CallRequest } | undefined;

  constructor(
    private readonly base: Agent,
    private readonly routes: readonly PersonaRoute[],
    private readonly deps: PersonaRouterDeps,
  ) {}

  get label(): string {
    return this.base.label;
  }

  /** As restartable as whoever answers now: a pathway's turns are not. */
  get restartable(): boolean {
    return (this.routed?.agent ?? this.base).restartable === true;
  }

  classifyAnswer: Agent['classifyAnswer'] = (words, signal) =>
    this.base.classifyAnswer ? this.base.classifyAnswer(words, signal) : Promise.resolve(undefined);

  async respond(input: AgentInput, ctx: AgentContext): Promise<AgentReply> {
    if (this.routed) return this.routed.agent.respond(input, { ...ctx, request: this.routed.request });
    if (input.kind === 'heard') {
      const index = await chooseRouteFor(input.text, ctx, this.routes, this.deps);
      const route = index === undefined ? undefined : this.routes[index];
      // An abandoned turn changes nothing: the words it was asked about are asked again.
      if (route && !ctx.signal?.aborted) return this.handOver(route, ctx);
    }
    return this.base.respond(input, ctx);
  }

  private async handOver(route: PersonaRoute, ctx: AgentContext): Promise<AgentReply> {
    const request: CallRequest = {
      ...ctx.request,
      pathway_id: route.pathway_id,
      pathway_version: route.pathway_version,
      start_node_id: route.start_node_id,
    };
    const agent = this.deps.pathwayAgent(request);
    this.routed = { agent, request };
    const reply = await agent.respond({ kind: 'start' }, { ...ctx, request });
    const note = `Handed to pathway ${route.name || route.pathway_id}`;
    return { ...reply, note: reply.note ? `${note}; ${reply.note}` : note };
  }
}
