import { renderSpoken, renderTemplate } from '../domain/template.js';
import { normalizePhone } from '../domain/phone.js';
import {
  edgeConditionsHold,
  startNodeId,
  type PathwayEdge,
  type PathwayNode,
  type NodeType,
} from '../domain/pathway-graph.js';
import type { ResolvedPathway } from '../store/pathways.js';
import { historyOf } from '../agent/llm.js';
import type { Agent, AgentAction, AgentContext, AgentInput, AgentReply } from '../agent/types.js';
import type { ChatMessage } from '../providers/llm/types.js';
import type { OutboundClient } from '../outbound/http.js';
import { nodeTag, type PathwayLogEntry } from './logs.js';
import {
  answerFrom,
  bestMatch,
  INTENT_WORDS,
  conditionMet,
  extractValue,
  lineFromPrompt,
  type Candidate,
  type ExtractVarType,
} from './offline.js';
import { chooseRoute, generateLine, type ModelSettings, type PathwayLlm, type RouteOption } from './llm.js';
import { callWebhook } from './webhook.js';
import { isRecord } from '../domain/records.js';
import { knownLines } from '../agent/knowledge.js';
import { TRANSFER_FAILED_LINE } from '../agent/offline.js';
import type { SecretScope } from '../vault/resolver.js';

/** A caller's turn may walk through this many nodes at most (webhooks, SMS, pathway hops). */
const MAX_STEPS_PER_TURN = 25;
/** Turns a node may be kept without progress before the call ends politely: a call never loops forever. */
const MAX_STAYS = 4;
const MAX_SILENCES = 3;
/** A Wait for Response node waits longer: it re-prompts nobody and ends only after this many. */
const MAX_WAIT_SILENCES = 5;
const GOODBYE = 'Thank you for your time. Goodbye!';
const GREETING_ONLY = /^\W*(?:(?:hello|hi|hey|yes|yeah|hallo)\W*)+$/i;
/** Only "hello?" (not "yes", which may answer the first question). */
const HELLO_ONLY = /^\W*(?:(?:hello|hi|hey|hallo)\W*)+$/i;
const UNAVAILABLE = "I'm sorry, this line can't take your call right now. Goodbye!";

export interface PathwayAgentDeps {
  /** Loads a pathway's graph for the call (src/store/pathways.ts resolveVersion). */
  resolve(accountId: string, pathwayId: string, version: number | null): Promise<ResolvedPathway | undefined>;
  /** The account a call belongs to (the engine's call row). */
  accountOf(callId: string): Promise<string | undefined>;
  /** Stores the call's pathway_logs (JSON text). */
  saveLogs(callId: string, logs: string): Promise<void>;
  /** The guarded outbound client (CONTRACT.md section 8) for Webhook nodes. */
  http?: OutboundClient;
  /** The texts of the account's knowledge bases among `ids` (nodes may name one in `kb` or `kbTool`). */
  knowledgeTexts?(accountId: string, ids: readonly string[]): Promise<Map<string, string>>;
  /** The variables a Webhook node's request is rendered over: the call's, plus the secrets it names. */
  secretScope?: SecretScope;
  /** Sends a text message through the call's carrier (SMS nodes). */
  sendSms?(message: { callId: string; to: string; body: string }): Promise<SmsResult> | SmsResult;
  /** With a language model: choices, extraction and speech by it; else the offline model. */
  llm?: PathwayLlm;
  now(): Date;
  log?: { warn(object: object, message: string): void };
}

export type SmsResult = { ok: true } | { ok: false; reason: string };

/** What one respond() builds up while it walks the graph. */
interface TurnOut {
  say: string[];
  action: AgentAction | null;
  notes: string[];
}

interface Decision {
  kind: 'edge' | 'global' | 'stay';
  edge?: PathwayEdge;
  global?: PathwayNode;
  reason: string;
  by: PathwayLogEntry['decided_by'];
  conditionMet: boolean;
}

const str = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value : undefined;

/** A node's extractVars as typed triples (the save checks guarantee the shape). */
function extractVarsOf(node: PathwayNode): [string, ExtractVarType, string][] {
  const vars = node.data.extractVars;
  if (!Array.isArray(vars)) return [];
  return vars.flatMap((v: unknown) =>
    Array.isArray(v) && typeof v[0] === 'string' && typeof v[1] === 'string'
      ? [[v[0], v[1] as ExtractVarType, typeof v[2] === 'string' ? v[2] : '']]
      : [],
  );
}

/** The knowledge base ids a node names: `kb` or `kbTool` holding the id of one of the account's. */
function knowledgeIds(node: PathwayNode): string[] {
  return [node.data.kb, node.data.kbTool].flatMap((v) =>
    typeof v === 'string' && /^KB-/.test(v.trim()) ? [v.trim()] : [],
  );
}

const hasConditions = (edge: PathwayEdge): boolean => Array.isArray(edge.conditions) && edge.conditions.length > 0;

/** An edge's variable conditions as text: `monthly_bill >= 100 and owns_home == true`. */
function conditionsText(edge: PathwayEdge): string {
  const conditions: unknown[] = Array.isArray(edge.conditions) ? edge.conditions : [];
  return conditions
    .map((c) =>
      isRecord(c)
        ? `${String(c.variable)} ${String(c.operator ?? '==')}${c.value === undefined ? '' : ` ${JSON.stringify(c.value)}`}`
        : '',
    )
    .join(' and ');
}

const filled = (value: unknown): boolean => value !== undefined && value !== null && value !== '';

/** Webhook and SMS edges: an edge labelled as the failure route ("error", "failed") versus the others. */
const FAILURE_LABEL = /\b(error|errors|fail|failed|failure|unsuccessful)\b/i;

/**
 * The pathway runner (seed 2.8, issue 6): one agent per call that walks a pathway's graph. It
 * speaks each node's static text or generated speech, reads the caller's words to pick the next
 * edge (by the language model from the labels and descriptions, or by the offline model's word
 * matching), extracts variables, calls webhooks, sends SMS, presses buttons, transfers, jumps to
 * global nodes and back, keeps a node until its condition is met, and ends where the graph ends.
 * Every step goes to `pathway_logs`. One respond() may walk several nodes (a webhook, then the
 * text node after it), as the agent interface gives one reply per input.
 */
export class PathwayAgent implements Agent {
  readonly label: string;
  private graph: ResolvedPathway | undefined;
  private accountId: string | undefined;
  /** The texts of the knowledge bases the graph's nodes name by id, read when it is loaded. */
  private knowledgeTexts = new Map<string, string>();
  private loadFailed: string | undefined;
  private currentId: string | undefined;
  /** The node a global node was entered from, to go back to. */
  private returnTo: string | undefined;
  private stays = 0;
  /** A Press Button node entered at the start presses once a menu (or anything) is heard. */
  private pendingPress = false;
  /** The caller has said more than a greeting. */
  private answered = false;
  private readonly logs: PathwayLogEntry[] = [];

  constructor(private readonly d: PathwayAgentDeps) {
    this.label = d.llm ? d.llm.model : 'offline';
  }

  /** The steps so far (tests and the record). */
  get steps(): readonly PathwayLogEntry[] {
    return this.logs;
  }

  /** The node the conversation is in (pathway chat shows it), once the pathway has started. */
  get currentNode(): { id: string; name: string } | undefined {
    const node = this.currentId === undefined ? undefined : this.node(this.currentId);
    return node && { id: node.id, name: typeof node.data.name === 'string' ? node.data.name : node.id };
  }

  async respond(input: AgentInput, ctx: AgentContext): Promise<AgentReply> {
    const out: TurnOut = { say: [], action: null, notes: [] };
    const before = this.logs.length;
    try {
      await this.load(ctx);
      if (!this.graph) {
        out.notes.push(`Pathway not available: ${this.loadFailed ?? 'unknown pathway'}`);
        out.say.push(UNAVAILABLE);
        out.action = { type: 'finish' };
      } else {
        await this.handle(input, ctx, out);
      }
    } catch (error) {
      // A bug or a store failure must not leave the caller in silence.
      this.d.log?.warn({ call_id: ctx.callId, err: error }, 'pathway step failed');
      out.notes.push(`Pathway step failed: ${(error as Error).message}`);
      out.say.push(UNAVAILABLE);
      out.action = { type: 'finish' };
    }
    if (this.logs.length !== before) {
      try {
        await this.d.saveLogs(ctx.callId, JSON.stringify(this.logs));
      } catch (error) {
        this.d.log?.warn({ call_id: ctx.callId, err: error }, 'pathway logs not stored');
      }
    }
    const say = out.say.filter((s) => s.trim() !== '').join(' ');
    return {
      say: say === '' ? null : say,
      action: out.action,
      ...(out.notes.length > 0 && { note: out.notes.join('; ') }),
    };
  }

  private async load(ctx: AgentContext): Promise<void> {
    if (this.graph || this.loadFailed) return;
    const pathwayId = ctx.request.pathway_id;
    this.accountId = await this.d.accountOf(ctx.callId);
    if (!pathwayId || !this.accountId) {
      this.loadFailed = 'the call has no pathway';
      return;
    }
    const graph = await this.d.resolve(this.accountId, pathwayId, ctx.request.pathway_version);
    if (!graph || graph.nodes.length === 0) {
      this.loadFailed = graph ? 'the pathway has no nodes' : 'the pathway or its version no longer exists';
      return;
    }
    this.graph = graph;
    const ids = [...new Set(graph.nodes.flatMap(knowledgeIds))];
    if (ids.length > 0 && this.d.knowledgeTexts) this.knowledgeTexts = await this.d.knowledgeTexts(this.accountId, ids);
  }

  private async handle(input: AgentInput, ctx: AgentContext, out: TurnOut): Promise<void> {
    const graph = this.graph!;
    if (input.kind === 'start' || this.currentId === undefined) {
      const wanted = ctx.request.start_node_id;
      let start = wanted ? this.node(wanted) : undefined;
      if (wanted && !start)
        out.notes.push(`start_node_id ${wanted} is not a node of this pathway: starting at the start node`);
      start ??= this.node(startNodeId(graph.nodes) ?? graph.nodes[0]!.id)!;
      await this.enter(start, ctx, out, {
        reason: wanted && start.id === wanted ? 'start_node_id' : 'start node',
        via: 'start',
      });
      if (input.kind === 'start') return;
    }
    switch (input.kind) {
      case 'heard':
        return this.onHeard(input.text, ctx, out);
      case 'ivr_menu':
        return this.onMenu(input.text, ctx, out);
      case 'silence':
        return this.onSilence(input.times, ctx, out);
      case 'tool_result':
        // A Transfer Call node's transfer failed and the caller is back: they hear so, on the same
        // node. Pathways ask for no custom tools.
        if (input.name === 'transfer' && !input.ok) out.say.push(TRANSFER_FAILED_LINE);
        return;
    }
  }

  /**
   * What a node knows: the text of the account's knowledge base its `kb` or `kbTool` names, else
   * its `kb` text, else the text of a Knowledge Base node that has no `kb`.
   */
  private knowledgeOf(node: PathwayNode): string | undefined {
    const ids = knowledgeIds(node);
    const stored = ids.flatMap((id) => this.knowledgeTexts.get(id) ?? []);
    if (stored.length > 0) return stored.join('\n\n');
    // A `kb` that names a knowledge base no longer there holds no text of its own.
    const kb = str(node.data.kb);
    if (kb !== undefined && ids.includes(kb.trim())) return undefined;
    return kb ?? (node.type === 'Knowledge Base' ? str(node.data.text) : undefined);
  }

  private node(id: string): PathwayNode | undefined {
    return this.graph?.nodes.find((n) => n.id === id);
  }

  private current(): PathwayNode {
    return this.node(this.currentId!)!;
  }

  private outgoing(node: PathwayNode): PathwayEdge[] {
    return this.graph!.edges.filter((e) => e.source === node.id);
  }

  private globals(except: PathwayNode): PathwayNode[] {
    return this.graph!.nodes.filter((n) => n.data.isGlobal === true && n.id !== except.id);
  }

  private log(
    node: PathwayNode,
    entry: Partial<
      Omit<PathwayLogEntry, 'step' | 'at' | 'pathway_id' | 'version' | 'node_id' | 'node_name' | 'node_type'>
    > &
      Pick<PathwayLogEntry, 'event' | 'reason'>,
  ): void {
    const graph = this.graph!;
    const tag = nodeTag(node.data);
    this.logs.push({
      step: this.logs.length + 1,
      at: this.d.now().toISOString(),
      pathway_id: graph.pathway_id,
      version: graph.version_number,
      node_id: node.id,
      node_name: node.data.name,
      node_type: node.type,
      event: entry.event,
      heard: entry.heard ?? null,
      said: entry.said ?? null,
      chosen_edge: entry.chosen_edge ?? null,
      reason: entry.reason,
      decided_by: entry.decided_by ?? 'rule',
      variables: entry.variables ?? {},
      action: entry.action ?? null,
      ...(tag !== undefined && { tag }),
    });
  }

  // ---- Model settings and prompts ------------------------------------------------------------

  private settings(node: PathwayNode, ctx: AgentContext): ModelSettings {
    const options = isRecord(node.data.modelOptions) ? node.data.modelOptions : {};
    const temperature = typeof options.temperature === 'number' ? options.temperature : ctx.request.temperature;
    return {
      model: str(options.modelName) ?? this.d.llm!.model,
      temperature,
      ...(ctx.onFirstToken && { onFirstToken: ctx.onFirstToken }),
      ...(ctx.signal && { signal: ctx.signal }),
    };
  }

  /** globalPrompt: the node's own, else the first one set anywhere in the graph, else its global config's. */
  private globalPrompt(node: PathwayNode): string | undefined {
    return (
      str(node.data.globalPrompt) ??
      this.graph!.nodes.map((n) => str(n.data.globalPrompt)).find(Boolean) ??
      this.graph!.globalPrompt
    );
  }

  private systemPrompt(node: PathwayNode, ctx: AgentContext): string {
    const vars = ctx.variables;
    const global = this.globalPrompt(node);
    const lines = [
      ...(global ? [renderTemplate(global, vars).trim(), ''] : []),
      ctx.inbound
        ? 'You are a voice agent answering an incoming phone call.'
        : 'You are a voice agent on a phone call you placed.',
      'You follow a conversation pathway: one step at a time, each with its own instructions.',
      'Everything you write is spoken aloud: one to three short, natural sentences; no lists, markdown or stage directions.',
      `Speak the language ${ctx.request.language} (BCP 47 tag) unless the caller clearly uses another one.`,
      '',
      `Current step: "${node.data.name}" (${node.type}).`,
    ];
    const kb = this.knowledgeOf(node);
    const instructions =
      str(node.data.prompt) ??
      (kb === str(node.data.text) ? 'Answer the caller from the knowledge below.' : str(node.data.text));
    if (instructions) lines.push(`Instructions for this step: ${renderTemplate(instructions, vars)}`);
    if (str(node.data.condition)) lines.push(`This step is done only when: ${node.data.condition as string}`);
    if (kb) lines.push('', 'Knowledge for this step (answer from it):', renderTemplate(kb, vars));
    const examples = node.data.dialogueExamples;
    if (typeof examples === 'string' && examples.trim()) lines.push('', 'Example dialogue:', examples);
    lines.push('', 'Call variables:', JSON.stringify(vars));
    lines.push(...knownLines(ctx));
    return lines.join('\n');
  }

  private history(ctx: AgentContext, heard?: string): ChatMessage[] {
    const messages = historyOf(ctx.transcript);
    if (heard && !ctx.transcript.some((t) => t.role === 'user' && t.text === heard))
      messages.push({ role: 'user', content: heard });
    return messages;
  }

  private warn(ctx: AgentContext, what: string, error: unknown, out: TurnOut): void {
    this.d.log?.warn({ call_id: ctx.callId, err: error }, `language model failed (${what}): offline model used`);
    out.notes.push(`Language model failed (${what}): the offline model decided`);
  }

  // ---- Speech ---------------------------------------------------------------------------------

  /**
   * What a node says: static text (isStatic, or text without a prompt) as written with
   * variables filled in; else speech generated from its prompt (or non-static text) by the model.
   * Offline, a prompt becomes a line by lineFromPrompt, and a Knowledge Base node answers the
   * caller's question from its kb by word matching.
   */
  private async speech(
    node: PathwayNode,
    ctx: AgentContext,
    out: TurnOut,
    heard?: string,
    /** The caller's words did not move the call on: the model answers them and steers back, even on a static node. */
    staying = false,
  ): Promise<string | null> {
    const vars = ctx.variables;
    const kb = this.knowledgeOf(node);
    // A Knowledge Base node given only `text` holds its knowledge there, not words to say.
    const text = node.type === 'Knowledge Base' && !str(node.data.kb) ? undefined : str(node.data.text);
    const prompt = str(node.data.prompt);
    const isStatic = node.data.isStatic === true || (node.data.isStatic !== false && text !== undefined && !prompt);
    if (isStatic && text && !(staying && this.d.llm)) return renderSpoken(text, vars);
    const instruction = prompt ?? text;
    if (this.d.llm && (instruction || kb)) {
      try {
        return await generateLine(this.d.llm, this.settings(node, ctx), {
          system: this.systemPrompt(node, ctx),
          history: this.history(ctx, heard),
          instruction: staying
            ? "Answer the caller's last words briefly, then bring the conversation back to what this step needs. Only the words to speak."
            : `Say what this step calls for now${heard ? ', in answer to the caller' : ''}. Only the words to speak.`,
        });
      } catch (error) {
        this.warn(ctx, 'speech', error, out);
      }
    }
    if (kb && heard) {
      const answer = answerFrom(renderTemplate(kb, vars), heard);
      if (answer) return answer;
    }
    if (text) return renderSpoken(text, vars);
    if (prompt) return lineFromPrompt(renderTemplate(prompt, vars));
    if (kb && heard) return "I'm sorry, I don't have that information.";
    return null;
  }

  // ---- Entering nodes -------------------------------------------------------------------------

  /**
   * Makes `node` the current one and carries it out: speech and an action, or, for the nodes
   * that do not wait for the caller (Webhook, SMS, Transfer Pathway), on to the next node.
   */
  private async enter(
    first: PathwayNode,
    ctx: AgentContext,
    out: TurnOut,
    how: { reason: string; via: 'start' | 'edge' | 'global'; heard?: string },
  ): Promise<void> {
    let node: PathwayNode | undefined = first;
    let reason = how.reason;
    for (let steps = 0; node; steps++) {
      if (steps >= MAX_STEPS_PER_TURN) {
        out.notes.push(`Pathway stopped: more than ${MAX_STEPS_PER_TURN} steps without the caller`);
        out.say.push(GOODBYE);
        out.action = { type: 'finish' };
        return;
      }
      this.currentId = node.id;
      // A detour to a global node and back is no progress: the count of tries goes on.
      if (how.via !== 'global') this.stays = 0;
      node = await this.carryOut(node, ctx, out, reason, how);
      reason = 'next step';
      how = { ...how, via: 'edge' };
    }
  }

  /** One node's work; returns the node to go on to, if it does not wait for the caller. */
  private async carryOut(
    node: PathwayNode,
    ctx: AgentContext,
    out: TurnOut,
    reason: string,
    how: { via: 'start' | 'edge' | 'global'; heard?: string },
  ): Promise<PathwayNode | undefined> {
    const type: NodeType = node.type;
    switch (type) {
      case 'End Call': {
        const said = (await this.speech(node, ctx, out)) ?? GOODBYE;
        out.say.push(said);
        out.action = { type: 'finish' };
        this.log(node, { event: 'entered', said, reason, action: 'finish' });
        return undefined;
      }
      case 'Transfer Call': {
        const number = normalizePhone(node.data.transferNumber);
        const said = (await this.speech(node, ctx, out)) ?? 'Please hold while I transfer your call.';
        out.say.push(said);
        if (number.ok) {
          out.action = { type: 'transfer', target: number.e164 };
          this.log(node, { event: 'entered', said, reason, action: 'transfer' });
        } else {
          out.notes.push('Transfer Call node has no valid transferNumber');
          out.action = { type: 'finish' };
          this.log(node, { event: 'entered', said, reason: `${reason}; no valid transferNumber`, action: 'finish' });
        }
        return undefined;
      }
      case 'Webhook':
        return this.webhook(node, ctx, out, reason);
      case 'SMS':
        return this.sms(node, ctx, out, reason);
      case 'Transfer Pathway':
        return this.transferPathway(node, ctx, out, reason);
      case 'Press Button': {
        const digits = this.digitsOf(node);
        if (how.via === 'start') {
          // Nothing to press into yet: the first menu (or words) heard triggers it.
          this.pendingPress = true;
          this.log(node, { event: 'entered', reason: `${reason}; waits for the menu before pressing` });
          return undefined;
        }
        const said = str(node.data.text) ? renderTemplate(node.data.text as string, ctx.variables) : null;
        if (said) out.say.push(said);
        out.action = { type: 'press_buttons', digits };
        this.log(node, { event: 'entered', said, reason, action: `press_buttons ${digits}` });
        return undefined;
      }
      case 'Wait for Response': {
        const said = await this.speech(node, ctx, out, how.heard);
        if (said) out.say.push(said);
        out.action = { type: 'wait' };
        this.log(node, { event: 'entered', said, reason, action: 'wait' });
        return undefined;
      }
      case 'Default':
      case 'Knowledge Base':
      case 'Custom Code':
      case 'Scheduling': {
        const said = await this.speech(node, ctx, out, how.heard);
        if (said) out.say.push(said);
        this.log(node, { event: 'entered', said, reason });
        if (node.data.isGlobal === true && this.outgoing(node).length === 0) await this.returnFromGlobal(ctx, out);
        return undefined;
      }
    }
  }

  private digitsOf(node: PathwayNode): string {
    const { sequence, digit } = node.data;
    const raw =
      typeof sequence === 'string' ? sequence : typeof digit === 'number' ? String(digit) : String(digit ?? '');
    return raw.replace(/[^0-9*#w]/gi, '');
  }

  /** Back from a global node to the node the call left: it is spoken again, so the caller knows where they are. */
  private async returnFromGlobal(ctx: AgentContext, out: TurnOut): Promise<void> {
    const back = this.returnTo ? this.node(this.returnTo) : undefined;
    this.returnTo = undefined;
    if (!back) return;
    this.currentId = back.id;
    const said = await this.speech(back, ctx, out);
    if (said) out.say.push(said);
    this.log(back, { event: 'returned', said, reason: 'back from a global node' });
  }

  /** The edge after a node that does not wait for the caller: the failure route on failure, else another. */
  private routeAfter(node: PathwayNode, ok: boolean): PathwayEdge | undefined {
    const edges = this.outgoing(node);
    const failure = edges.find((e) => FAILURE_LABEL.test(e.label));
    const success = edges.find((e) => !FAILURE_LABEL.test(e.label));
    return ok ? (success ?? failure) : (failure ?? success);
  }

  private async webhook(
    node: PathwayNode,
    ctx: AgentContext,
    out: TurnOut,
    reason: string,
  ): Promise<PathwayNode | undefined> {
    const scope =
      this.d.secretScope && this.accountId
        ? await this.d.secretScope(this.accountId, node.data, ctx.variables)
        : ctx.variables;
    const result = await callWebhook(node.data, scope, this.d.http);
    Object.assign(ctx.variables, result.variables);
    out.notes.push(
      result.ok
        ? `Webhook ${node.data.name} returned HTTP ${result.status}`
        : `Webhook ${node.data.name} failed: ${result.error}`,
    );
    const edge = this.routeAfter(node, result.ok);
    this.log(node, {
      event: 'entered',
      reason: `${reason}; ${result.ok ? `HTTP ${result.status}` : `failed: ${result.error}`}`,
      variables: result.variables,
      chosen_edge: edge ? { id: edge.id, label: edge.label, target: edge.target } : null,
      action: `webhook ${result.method}`,
    });
    return edge ? this.node(edge.target) : undefined;
  }

  private async sms(
    node: PathwayNode,
    ctx: AgentContext,
    out: TurnOut,
    reason: string,
  ): Promise<PathwayNode | undefined> {
    const explicit = node.data.phoneNumber === undefined ? undefined : normalizePhone(node.data.phoneNumber);
    const to = explicit ? (explicit.ok ? explicit.e164 : undefined) : str(ctx.variables.phone_number);
    const body = renderTemplate(String(node.data.smsBody ?? ''), ctx.variables);
    let result: SmsResult;
    if (!to) result = { ok: false, reason: 'no number to send to' };
    else if (!this.d.sendSms) result = { ok: false, reason: 'the carrier cannot send SMS' };
    else {
      try {
        result = await this.d.sendSms({ callId: ctx.callId, to, body });
      } catch (error) {
        result = { ok: false, reason: (error as Error).message };
      }
    }
    out.notes.push(result.ok ? `SMS sent (${node.data.name})` : `SMS not sent (${node.data.name}): ${result.reason}`);
    const said = result.ok && str(node.data.text) ? renderTemplate(node.data.text as string, ctx.variables) : null;
    if (said) out.say.push(said);
    const edge = this.routeAfter(node, result.ok);
    this.log(node, {
      event: 'entered',
      said,
      reason: `${reason}; ${result.ok ? 'SMS sent' : `SMS failed: ${result.reason}`}`,
      chosen_edge: edge ? { id: edge.id, label: edge.label, target: edge.target } : null,
      action: 'sms',
    });
    return edge ? this.node(edge.target) : undefined;
  }

  private async transferPathway(
    node: PathwayNode,
    _ctx: AgentContext,
    out: TurnOut,
    reason: string,
  ): Promise<PathwayNode | undefined> {
    const targetId = String(node.data.transferPathway ?? '');
    const version =
      typeof node.data.version === 'number' && Number.isInteger(node.data.version) ? node.data.version : null;
    const target = this.accountId ? await this.d.resolve(this.accountId, targetId, version) : undefined;
    if (!target || target.nodes.length === 0) {
      this.log(node, { event: 'entered', reason: `${reason}; pathway ${targetId} not found`, action: 'finish' });
      out.notes.push(`Transfer Pathway: pathway ${targetId} not found`);
      out.say.push(UNAVAILABLE);
      out.action = { type: 'finish' };
      return undefined;
    }
    const wanted = str(node.data.transferPathwayNode);
    const startId =
      (wanted && target.nodes.some((n) => n.id === wanted) ? wanted : undefined) ?? startNodeId(target.nodes);
    const firstId = startId ?? target.nodes[0]!.id;
    this.log(node, {
      event: 'entered',
      reason: `${reason}; continues in pathway ${target.pathway_id} (version ${target.version_number ?? 'draft'}) at node ${firstId}`,
      action: 'transfer_pathway',
    });
    this.graph = target;
    this.returnTo = undefined;
    return this.node(firstId);
  }

  // ---- The caller's turn ----------------------------------------------------------------------

  /** extractVars of the node by the offline model's patterns. */
  private extractOffline(node: PathwayNode, heard: string): Record<string, string | number | boolean> {
    const found: Record<string, string | number | boolean> = {};
    for (const [name, type, description] of extractVarsOf(node)) {
      const value = extractValue(name, type, description, heard);
      if (value !== undefined) found[name] = value;
    }
    return found;
  }

  /**
   * Reads the caller's words at a node: the values of its extractVars (merged into the call's
   * variables) and where to go. With a model, one function call does both (fewer round trips
   * before the caller hears an answer); if it fails, the offline model does.
   */
  private async readTurn(
    node: PathwayNode,
    heard: string,
    ctx: AgentContext,
    out: TurnOut,
    options: { extract: boolean },
  ): Promise<{ extracted: Record<string, unknown>; decision: Decision }> {
    const something =
      this.outgoing(node).length > 0 ||
      this.globals(node).length > 0 ||
      (options.extract && extractVarsOf(node).length > 0);
    // Nothing to choose or extract (the end of the graph): no need to ask a model.
    if (this.d.llm && something) {
      try {
        return await this.modelTurn(node, heard, ctx, options);
      } catch (error) {
        this.warn(ctx, 'route', error, out);
      }
    }
    const extracted = options.extract ? this.extractOffline(node, heard) : {};
    Object.assign(ctx.variables, extracted);
    return { extracted, decision: this.decide(node, heard, ctx) };
  }

  private async modelTurn(
    node: PathwayNode,
    heard: string,
    ctx: AgentContext,
    options: { extract: boolean },
  ): Promise<{ extracted: Record<string, unknown>; decision: Decision }> {
    const vars = ctx.variables;
    const edges = this.outgoing(node);
    const globals = this.globals(node);
    const condition = str(node.data.condition);
    const routeOptions: RouteOption[] = [
      ...edges.map((e): RouteOption => ({
        id: e.id,
        kind: 'edge',
        label: e.label,
        ...(typeof e.description === 'string' && { description: e.description }),
        ...(hasConditions(e) && { onlyWhen: conditionsText(e) }),
      })),
      ...globals.map((g): RouteOption => ({ id: g.id, kind: 'global', label: String(g.data.globalLabel) })),
    ];
    const choice = await chooseRoute(this.d.llm!, this.settings(node, ctx), {
      system: this.systemPrompt(node, ctx),
      history: this.history(ctx, heard),
      heard,
      ...(condition && { condition }),
      options: routeOptions,
      ...(options.extract && { vars: extractVarsOf(node) }),
    });
    const extracted = choice.extracted;
    Object.assign(vars, extracted);
    // Variable conditions are checked on the values just extracted, not left to the model.
    const open = edges.filter((e) => edgeConditionsHold(e.conditions, vars));
    const ruled = open.find(hasConditions);
    const global = globals.find((g) => g.id === choice.choice);
    let decision: Decision;
    if (global)
      decision = { kind: 'global', global, reason: choice.reason, by: 'llm', conditionMet: choice.conditionMet };
    else if (condition && !choice.conditionMet)
      decision = { kind: 'stay', reason: `condition not met: ${choice.reason}`, by: 'llm', conditionMet: false };
    else if (ruled)
      decision = { kind: 'edge', edge: ruled, reason: this.ruleReason(ruled), by: 'rule', conditionMet: true };
    else {
      const edge = open.find((e) => e.id === choice.choice);
      decision = edge
        ? { kind: 'edge', edge, reason: choice.reason, by: 'llm', conditionMet: true }
        : { kind: 'stay', reason: choice.reason, by: 'llm', conditionMet: true };
    }
    return { extracted, decision };
  }

  /** The offline model's way on from a node, after the caller's words. */
  private decide(node: PathwayNode, heard: string, ctx: AgentContext): Decision {
    const vars = ctx.variables;
    const edges = this.outgoing(node);
    // Edges whose variable conditions fail are not open; one whose conditions hold is taken as a rule.
    const open = edges.filter((e) => edgeConditionsHold(e.conditions, vars));
    const ruled = open.find(hasConditions);
    const globals = this.globals(node);
    const condition = str(node.data.condition);
    const declared = extractVarsOf(node).map(([name]) => name);
    const missing = declared.filter((name) => !filled(vars[name]));

    // The offline model: a global node wins when its label matches better than any edge.
    const edgeCandidates: Candidate[] = open.map((e) => ({
      id: e.id,
      text: `${e.label} ${typeof e.description === 'string' ? e.description : ''}`,
    }));
    const edgeMatch = bestMatch(heard, edgeCandidates);
    const globalMatch = bestMatch(
      heard,
      globals.map((g) => ({ id: g.id, text: String(g.data.globalLabel) })),
    );
    // A global node is a topic ("wants to speak to a person"): a bare yes or no never jumps to it.
    const topical = globalMatch?.matched.some((word) => !INTENT_WORDS.has(word)) ?? false;
    if (globalMatch && topical && (!edgeMatch || globalMatch.matched.length > edgeMatch.matched.length)) {
      return {
        kind: 'global',
        global: globals.find((g) => g.id === globalMatch.id)!,
        reason: `words matched the global label: ${globalMatch.matched.join(', ')}`,
        by: 'offline',
        conditionMet: true,
      };
    }
    if (condition && !conditionMet(condition, heard, { declared: declared.length, missing })) {
      return {
        kind: 'stay',
        reason: missing.length
          ? `condition not met: no value yet for ${missing.join(', ')}`
          : 'condition not met: the answer shares no words with it',
        by: 'offline',
        conditionMet: false,
      };
    }
    if (ruled) return { kind: 'edge', edge: ruled, reason: this.ruleReason(ruled), by: 'rule', conditionMet: true };
    if (edgeMatch) {
      return {
        kind: 'edge',
        edge: open.find((e) => e.id === edgeMatch.id)!,
        reason: `words matched the edge label: ${edgeMatch.matched.join(', ')}`,
        by: 'offline',
        conditionMet: true,
      };
    }
    // A question the node's knowledge answers keeps the call here, to answer it.
    const knowledge = this.knowledgeOf(node);
    if (knowledge && answerFrom(renderTemplate(knowledge, vars), heard)) {
      return { kind: 'stay', reason: 'answered from the knowledge base', by: 'offline', conditionMet: true };
    }
    const unconditioned = open.filter((e) => !(Array.isArray(e.conditions) && e.conditions.length > 0));
    if (unconditioned.length === 1 && edges.length === 1) {
      return {
        kind: 'edge',
        edge: unconditioned[0],
        reason: 'the only path from this node',
        by: 'offline',
        conditionMet: true,
      };
    }
    return {
      kind: 'stay',
      reason: edges.length ? 'no edge label matched the words' : 'no edges leave this node',
      by: 'offline',
      conditionMet: true,
    };
  }

  private ruleReason(edge: PathwayEdge): string {
    return `variables: ${conditionsText(edge)}`;
  }

  private async onHeard(heard: string, ctx: AgentContext, out: TurnOut): Promise<void> {
    const node = this.current();
    if (this.pendingPress && node.type === 'Press Button') return this.pressNow(node, out, 'words heard');
    if (!this.answered && HELLO_ONLY.test(heard)) {
      // "Hello?" as the call connects, over the first words: they are hearing them; wait for the answer.
      this.log(node, { event: 'stayed', heard, reason: 'a greeting over the first words: waiting for the answer' });
      return;
    }
    this.answered = true;
    const { extracted, decision } = await this.readTurn(node, heard, ctx, out, { extract: true });
    if (decision.kind === 'global' && decision.global) {
      const global = decision.global;
      // From a global node to another, the way back stays the first node left.
      if (node.data.isGlobal !== true) this.returnTo = node.id;
      if (this.stays + 1 >= MAX_STAYS) {
        return this.stay(node, heard, { ...decision, reason: 'too many detours' }, extracted, ctx, out);
      }
      this.stays++;
      this.log(node, {
        event: 'decided',
        heard,
        chosen_edge: { id: `global:${global.id}`, label: String(global.data.globalLabel), target: global.id },
        reason: decision.reason,
        decided_by: decision.by,
        variables: extracted,
      });
      return this.enter(global, ctx, out, { reason: 'global node', via: 'global', heard });
    }
    if (decision.kind === 'edge' && decision.edge) {
      const edge = decision.edge;
      this.log(node, {
        event: 'decided',
        heard,
        chosen_edge: { id: edge.id, label: edge.label, target: edge.target },
        reason: decision.reason,
        decided_by: decision.by,
        variables: extracted,
      });
      if (node.data.isGlobal === true) this.returnTo = undefined;
      const target = this.node(edge.target);
      if (!target) {
        out.say.push(GOODBYE);
        out.action = { type: 'finish' };
        return;
      }
      return this.enter(target, ctx, out, { reason: `edge ${edge.id}`, via: 'edge', heard });
    }
    return this.stay(node, heard, decision, extracted, ctx, out);
  }

  /** No way forward yet: re-prompt (or answer in place), or end at a dead end or after too many tries. */
  private async stay(
    node: PathwayNode,
    heard: string,
    decision: Decision,
    extracted: Record<string, unknown>,
    ctx: AgentContext,
    out: TurnOut,
  ): Promise<void> {
    const deadEnd = this.outgoing(node).length === 0 && node.data.isGlobal !== true;
    // Answering questions from a node's knowledge is progress; anything else counts as a try.
    if (!(this.knowledgeOf(node) && decision.conditionMet)) this.stays++;
    if (deadEnd || this.stays >= MAX_STAYS) {
      const said = deadEnd ? GOODBYE : "I'm sorry, I'm not able to help further on this call. Goodbye!";
      out.say.push(said);
      out.action = { type: 'finish' };
      this.log(node, {
        event: 'stayed',
        heard,
        said,
        reason: deadEnd ? 'end of the pathway: no edges leave this node' : `${decision.reason}; too many tries`,
        decided_by: decision.by,
        variables: extracted,
        action: 'finish',
      });
      return;
    }
    let said: string | null;
    if (this.d.llm) said = await this.speech(node, ctx, out, heard, true);
    else if (this.knowledgeOf(node))
      said =
        answerFrom(renderTemplate(this.knowledgeOf(node)!, ctx.variables), heard) ??
        (await this.speech(node, ctx, out));
    else {
      const again = await this.speech(node, ctx, out);
      // A bare greeting ("Hello?") over the first words is answered by saying them again, with no apology.
      const lead = GREETING_ONLY.test(heard)
        ? ''
        : decision.conditionMet
          ? "Sorry, I didn't quite catch that."
          : 'Sorry, I still need that.';
      said = again ? `${lead} ${again}`.trim() : lead || null;
    }
    if (said) out.say.push(said);
    if (node.type === 'Wait for Response') out.action = { type: 'wait' };
    this.log(node, {
      event: 'stayed',
      heard,
      said,
      reason: decision.reason,
      decided_by: decision.by,
      variables: extracted,
    });
  }

  private pressNow(node: PathwayNode, out: TurnOut, why: string): void {
    this.pendingPress = false;
    const digits = this.digitsOf(node);
    out.action = { type: 'press_buttons', digits };
    this.log(node, { event: 'menu', reason: why, action: `press_buttons ${digits}` });
  }

  /** An automated menu: a Press Button node presses; otherwise the menu's words choose an edge like a caller's. */
  private async onMenu(menu: string, ctx: AgentContext, out: TurnOut): Promise<void> {
    const node = this.current();
    if (node.type === 'Press Button') return this.pressNow(node, out, 'automated menu heard');
    const { decision } = await this.readTurn(node, menu, ctx, out, { extract: false });
    if (decision.kind === 'edge' && decision.edge) {
      const edge = decision.edge;
      this.log(node, {
        event: 'menu',
        heard: menu,
        chosen_edge: { id: edge.id, label: edge.label, target: edge.target },
        reason: decision.reason,
        decided_by: decision.by,
      });
      const target = this.node(edge.target);
      if (target) return this.enter(target, ctx, out, { reason: `edge ${edge.id}`, via: 'edge' });
      return;
    }
    // Nothing in the pathway fits the menu: listen on rather than talk to a machine.
    this.log(node, { event: 'menu', heard: menu, reason: decision.reason, decided_by: decision.by, action: 'wait' });
    out.action = { type: 'wait' };
  }

  private async onSilence(times: number, ctx: AgentContext, out: TurnOut): Promise<void> {
    const node = this.current();
    if (node.type === 'Wait for Response' && times < MAX_WAIT_SILENCES) {
      out.action = { type: 'wait' };
      this.log(node, { event: 'silence', reason: `silence ${times}: waiting for the response`, action: 'wait' });
      return;
    }
    if (times >= MAX_SILENCES) {
      out.say.push("I can't hear you, so I'll end the call now. Goodbye!");
      out.action = { type: 'finish' };
      this.log(node, { event: 'silence', said: out.say.at(-1)!, reason: `silence ${times}: ending`, action: 'finish' });
      return;
    }
    const again = node.type === 'Default' || node.type === 'Knowledge Base' ? await this.speech(node, ctx, out) : null;
    const said = again ? `Are you still there? ${again}` : 'Are you still there?';
    out.say.push(said);
    this.log(node, { event: 'silence', said, reason: `silence ${times}: prompting again` });
  }
}
