import type { CallRequest } from '../schemas/call-request.js';
import type { Clock } from '../clock.js';
import type { AgentContext, AgentInput, AgentReply, Turn } from '../agent/types.js';
import type { PathwayLogEntry } from './logs.js';

/** A pathway walker as the chat needs it: the runner of src/pathways/runner.ts. */
export interface ChatAgent {
  respond(input: AgentInput, ctx: AgentContext): Promise<AgentReply>;
  readonly steps: readonly PathwayLogEntry[];
  readonly currentNode: { id: string; name: string } | undefined;
}

export interface PathwayChatDeps {
  clock: Clock;
  /** A runner for this chat: `accountId` owns the pathway, `chatId` names it in logs. */
  agentFor(request: CallRequest, accountId: string, chatId: string): ChatAgent;
  /** Sessions one account may keep at once; the least recently used goes first. */
  maxPerAccount?: number;
  /** A session unused this long is forgotten. */
  idleMs?: number;
}

export interface ChatTurnResult {
  chat_id: string;
  pathway_id: string;
  assistant_responses: string[];
  current_node_id: string | null;
  current_node_name: string | null;
  chat_history: { role: Turn['role']; content: string }[];
  variables: Record<string, unknown>;
  pathway_logs: PathwayLogEntry[];
  /** The conversation reached an end node or a transfer: further messages get no answer. */
  ended: boolean;
  /** `ended`, under the hosted API's name. */
  completed: boolean;
}

interface Session {
  id: string;
  accountId: string;
  request: CallRequest;
  agent: ChatAgent;
  variables: Record<string, unknown>;
  transcript: Turn[];
  started: boolean;
  ended: boolean;
  usedAt: number;
}

const DEFAULT_MAX_PER_ACCOUNT = 50;
const DEFAULT_IDLE_MS = 60 * 60_000;

/**
 * Pathway chat (the hosted API's /v1/pathway/chat): a pathway run as text, turn by turn, with the
 * same runner a call uses (offline model or the configured language model), so a pathway can be
 * tried without a phone. Sessions live in this process's memory: they are a testing tool, not call
 * records, and are forgotten after an hour unused.
 */
export class PathwayChats {
  private readonly sessions = new Map<string, Session>();
  private readonly maxPerAccount: number;
  private readonly idleMs: number;

  constructor(private readonly d: PathwayChatDeps) {
    this.maxPerAccount = d.maxPerAccount ?? DEFAULT_MAX_PER_ACCOUNT;
    this.idleMs = d.idleMs ?? DEFAULT_IDLE_MS;
  }

  create(accountId: string, request: CallRequest, variables: Record<string, unknown>): string {
    this.forgetIdle();
    const own = [...this.sessions.values()].filter((s) => s.accountId === accountId);
    if (own.length >= this.maxPerAccount) {
      const oldest = own.reduce((a, b) => (a.usedAt <= b.usedAt ? a : b));
      this.sessions.delete(oldest.id);
    }
    const id = crypto.randomUUID();
    this.sessions.set(id, {
      id,
      accountId,
      request,
      agent: this.d.agentFor(request, accountId, id),
      variables: { ...variables, call_id: id },
      transcript: [],
      started: false,
      ended: false,
      usedAt: this.d.clock.now().getTime(),
    });
    return id;
  }

  /** The chat as it stands, or undefined when it is not this account's (or was forgotten). */
  get(accountId: string, chatId: string): ChatTurnResult | undefined {
    const session = this.session(accountId, chatId);
    return session && this.result(session, []);
  }

  /**
   * Sends the user's message (none: only starts the conversation) and returns what the pathway
   * said. The first call also says the start node's opening words. Undefined: no such chat.
   */
  async send(accountId: string, chatId: string, message: string | undefined): Promise<ChatTurnResult | undefined> {
    const session = this.session(accountId, chatId);
    if (!session) return undefined;
    const responses: string[] = [];
    if (session.ended) return this.result(session, responses);
    if (!session.started) {
      session.started = true;
      await this.turn(session, { kind: 'start' }, responses);
    }
    const text = message?.trim();
    if (text && !session.ended) {
      session.transcript.push({ role: 'user', text });
      await this.turn(session, { kind: 'heard', text }, responses);
    }
    return this.result(session, responses);
  }

  private async turn(
    session: Session,
    input: { kind: 'start' } | { kind: 'heard'; text: string },
    responses: string[],
  ): Promise<void> {
    const reply = await session.agent.respond(input, {
      callId: session.id,
      request: session.request,
      inbound: false,
      variables: session.variables,
      transcript: session.transcript,
    });
    if (reply.say) {
      responses.push(reply.say);
      session.transcript.push({ role: 'assistant', text: reply.say });
    }
    const action = reply.action;
    if (action && action.type !== 'wait') {
      const what =
        action.type === 'transfer'
          ? `Transferred the call${action.target ? ` to ${action.target}` : ''}`
          : action.type === 'press_buttons'
            ? `Pressed ${action.digits}`
            : action.type === 'tool'
              ? `Used the tool ${action.name}`
              : 'Ended the call';
      session.transcript.push({ role: 'agent-action', text: what });
      if (action.type === 'finish' || action.type === 'transfer') session.ended = true;
    }
  }

  private result(session: Session, responses: string[]): ChatTurnResult {
    const node = session.agent.currentNode;
    return {
      chat_id: session.id,
      pathway_id: session.request.pathway_id ?? '',
      assistant_responses: responses,
      current_node_id: node?.id ?? null,
      current_node_name: node?.name ?? null,
      chat_history: session.transcript.map((t) => ({ role: t.role, content: t.text })),
      variables: session.variables,
      pathway_logs: [...session.agent.steps],
      ended: session.ended,
      completed: session.ended,
    };
  }

  private session(accountId: string, chatId: string): Session | undefined {
    this.forgetIdle();
    const session = this.sessions.get(chatId);
    if (!session || session.accountId !== accountId) return undefined;
    session.usedAt = this.d.clock.now().getTime();
    return session;
  }

  private forgetIdle(): void {
    const cutoff = this.d.clock.now().getTime() - this.idleMs;
    for (const [id, session] of this.sessions) if (session.usedAt < cutoff) this.sessions.delete(id);
  }
}
