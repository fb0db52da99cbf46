import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.js';
import { ScaledClock, systemClock, type Clock } from './clock.js';
import { migrate, openStorage, ping, type Storage } from './store/db.js';
import { loadMasterKey, SecretBox } from './security/secrets.js';
import { AccountStore } from './store/accounts.js';
import { CredentialStore } from './store/credentials.js';
import { CallStore } from './store/calls.js';
import { ToolStore } from './store/tools.js';
import { KnowledgeStore } from './store/knowledge.js';
import { KnowledgeGapStore } from './store/knowledge-gaps.js';
import { CitationSchemaStore } from './store/citation-schemas.js';
import { SpeechSampleStore } from './store/speech-samples.js';
import { PersonaStore } from './store/personas.js';
import { VaultStore } from './store/vault.js';
import { SecretResolver } from './vault/resolver.js';
import { PersonaRouter } from './pathways/persona-router.js';
import { KnowledgeLibrary, noticingGaps } from './knowledge/library.js';
import { AgentStore } from './store/agents.js';
import { InboundStore } from './store/inbound.js';
import { CampaignStore } from './store/campaigns.js';
import { PathwayStore } from './store/pathways.js';
import { BatchStore } from './store/batches.js';
import { BlockedStore } from './store/blocked.js';
import { AgentTestStore } from './store/agent-tests.js';
import { checkRun, runCaller } from './agent-tests/scenario-runs.js';
import { CallEventBus, CallEventLog } from './calls/events.js';
import { A2pStore } from './store/a2p.js';
import type { JobQueue } from './jobs/queue.js';
import { SqlJobQueue } from './jobs/sql-queue.js';
import type { Carrier, DialRequest } from './carriers/types.js';
import type { CarrierCredential } from './schemas/account.js';
import { SandboxNetwork } from './carriers/sandbox/network.js';
import { CallEngine } from './calls/engine.js';
import { OfflineAgent } from './agent/offline.js';
import { OutboundClient } from './outbound/http.js';
import { WebhookService } from './outbound/webhooks.js';
import { WebhookStore } from './store/webhooks.js';
import { CampaignDialer } from './campaigns/dialer.js';
import { LlmAgent } from './agent/llm.js';
import { OpenAiProvider } from './providers/llm/openai.js';
import { PostCallService } from './postcall/summary.js';
import { afterCall } from './postcall/after-call.js';
import { TwilioCarrier } from './carriers/twilio/carrier.js';
import { CarrierSelector } from './carriers/selector.js';
import type { SipCarrier } from './carriers/sip/carrier.js';
import { startSip } from './carriers/sip/service.js';
import { WebCalls } from './carriers/webrtc/service.js';
import { LiveListening } from './calls/listen.js';
import type { Agent } from './agent/types.js';
import { SmsConversations } from './sms/conversations.js';
import { sendSms } from './sms/send.js';
import { sendVoicemailSms } from './sms/voicemail.js';
import { WebCallTokenStore } from './store/web-call-tokens.js';
import { carrierAudioLegs } from './carriers/audio-legs.js';
import { createSpeech, type Speech } from './providers/speech.js';
import { FrameScheduler } from './media/pacer.js';
import { PathwayAgent, type PathwayAgentDeps } from './pathways/runner.js';
import { PathwayChats } from './pathways/chat.js';
import { toolResolver, type CallRequest, type CallTool } from './schemas/call-request.js';
import { runTool, type ToolResult } from './agent/tools.js';
import { crawlSite, readWebPages, type CrawledSite, type WebPages } from './knowledge/web.js';
import { answerFromKnowledge, type KnowledgeAnswer, type KnowledgeChatTurn } from './agent/knowledge.js';
import { LlmError } from './providers/llm/types.js';
import { ApiError } from './errors.js';
import { PathwayFolderStore } from './store/pathway-folders.js';
import { Metrics } from './observability/metrics.js';
import { inSpan } from './observability/tracing.js';

/** The typed bag of services built once at start-up and passed to every part that needs them. */
export interface Services {
  config: Config;
  clock: Clock;
  storage: Storage;
  secrets: SecretBox;
  queue: JobQueue;
  accounts: AccountStore;
  credentials: CredentialStore;
  calls: CallStore;
  tools: ToolStore;
  /** Knowledge bases: what agents look things up in. */
  knowledge: KnowledgeStore;
  /** Questions callers asked that a call's knowledge bases had nothing on (GET /v1/knowledge/gaps). */
  knowledgeGaps: KnowledgeGapStore;
  /** Reusable extraction schemas calls are analyzed with (/v1/citation_schemas). */
  citationSchemas: CitationSchemaStore;
  speechSamples: SpeechSampleStore;
  personas: PersonaStore;
  /** Secrets accounts keep for their tools and webhooks (`{{secrets.NAME}}`). */
  vault: VaultStore;
  pathwayFolders: PathwayFolderStore;
  /** Reads web pages for a knowledge base, through the guarded client. */
  readWebPages(urls: readonly string[]): Promise<WebPages>;
  /** The pages of a site (its sitemap, or the page's links), through the guarded client. */
  crawlSite(url: string, limit: number): Promise<CrawledSite>;
  /**
   * Answers a question from one of the account's knowledge bases as a call's agent would
   * (POST /v1/knowledge/answer and /chat); undefined when the account has no such knowledge base.
   */
  askKnowledge(
    accountId: string,
    id: string,
    question: string,
    history: readonly KnowledgeChatTurn[],
  ): Promise<KnowledgeAnswer | undefined>;
  /** Runs one custom tool once, as a call would (its secrets filled in, through the guarded client). */
  testTool(accountId: string, tool: CallTool, input: unknown, variables: Record<string, unknown>): Promise<ToolResult>;
  agents: AgentStore;
  inbound: InboundStore;
  campaigns: CampaignStore;
  pathways: PathwayStore;
  batches: BatchStore;
  blocked: BlockedStore;
  /** Agent test scenarios, runs and batches (/v1/agent-testing, docs/agent-tests.md). */
  agentTests: AgentTestStore;
  /** Pathways run as text (POST /v1/pathway/chat/create): the dashboard's chat panel. */
  pathwayChats: PathwayChats;
  /** The events of the calls this process runs (GET /v1/calls/{id}/events). */
  callEvents: CallEventBus;
  a2p: A2pStore;
  /** The sandbox telephone network (CONTRACT.md section 6), always present. */
  sandbox: SandboxNetwork;
  /** The carrier outbound calls are placed on: Twilio for calls with Twilio credentials, else the sandbox. */
  carrier: Carrier;
  /** Twilio Programmable Voice (docs/twilio.md): BYO accounts, or the server's own when configured. */
  twilio: TwilioCarrier;
  /** Web calls: browsers talking to agents over WebRTC (docs/web-calls.md). */
  webCalls: WebCalls;
  /** AI conversations over SMS: numbers with agent settings answer texts (docs/api-notes.md, SMS). */
  smsConversations: SmsConversations;
  /** Live listening to the audio calls this process runs (POST /v1/calls/{id}/listen). */
  listening: LiveListening;
  /** The single-use tokens of POST /v1/agents/{id}/authorize. */
  webCallTokens: WebCallTokenStore;
  /** The speech providers of the configuration (OPENLINE_TTS, Deepgram): audio calls and voice samples. */
  speech: Speech;
  engine: CallEngine;
  /** End-of-call webhooks, their delivery log, and streamed events (CONTRACT.md section 8). */
  webhooks: WebhookService;
  /** Post-call summary and analysis (seed 2.1/2.3), and the analyze endpoint's questions. */
  postCall: PostCallService;
  /** Prometheus metrics (GET /metrics). */
  metrics: Metrics;
  /** The process's 20 ms frame scheduler: every audio call's outbound pacing and its lateness figures. */
  frames: FrameScheduler;
  /** Starts the job workers and the call engine (the HTTP server does not need them). */
  startWorkers(): Promise<void>;
  /** An account's SIP trunk was stored or deleted: the registrations of accounts' trunks follow (docs/sip.md). */
  sipTrunksChanged(): Promise<void>;
  /** Storage and queue reachable (GET /readyz); throws while draining. */
  ready(): Promise<void>;
  /** True once drain() began: new dial jobs, inbound calls and readiness are refused. */
  readonly draining: boolean;
  /**
   * Graceful restart (SIGTERM): stops taking dial jobs and new inbound calls at once, lets live
   * calls finish for up to `deadlineMs`, then ends the rest, whose records say why. Resolves with
   * how many calls were cut; close() follows.
   */
  drain(deadlineMs: number): Promise<{ cut: number }>;
  close(): Promise<void>;
}

export interface BuildOptions {
  clock?: Clock;
  logger?: FastifyBaseLogger;
  /** Speech providers in place of the configuration's (benchmarks: fakes of fixed latency). */
  speech?: Speech;
}

/** Opens storage, migrates it, and wires every store and the job queue. */
export async function buildServices(config: Config, options: BuildOptions = {}): Promise<Services> {
  const clock = options.clock ?? (config.timeScale === 1 ? systemClock : new ScaledClock(config.timeScale));
  const storage = await openStorage(config);
  await migrate(storage);
  const secrets = new SecretBox(loadMasterKey(config));
  const { db } = storage;
  // PostgreSQL may be shared by several processes: pg-boss (loaded only there); else the embedded queue.
  const queue: JobQueue =
    storage.dialect === 'postgres' && config.databaseUrl
      ? await (
          await import('./jobs/pgboss-queue.js')
        ).PgBossQueue.open({ url: config.databaseUrl, clock, log: options.logger })
      : new SqlJobQueue(db, clock, storage.dialect, options.logger);
  const calls = new CallStore(db, clock, { soleWriter: storage.dialect === 'sqlite' });
  // The engine is made below; the live-calls gauge reads it when scraped.
  let liveCalls = (): number => 0;
  const metrics = new Metrics({ db, queue, liveCalls: () => liveCalls() });
  const accounts = new AccountStore(db, secrets, clock);
  // Every request to a user's URL leaves through this one guarded client (CONTRACT.md section 8).
  const webhooks = new WebhookService({
    calls,
    store: new WebhookStore(db, clock),
    queue,
    clock,
    client: new OutboundClient({ allowPrivate: config.allowPrivateUrls }),
    secret: (accountId) => accounts.webhookSecret(accountId),
    recordOptions: { publicUrl: config.publicUrl, endpointUrl: config.endpointUrl },
    log: options.logger,
    onDelivery: (delivered) => metrics.webhookDelivered(delivered),
  });
  const sandbox = new SandboxNetwork({
    clock,
    personaDirs: config.personaDirs,
    audio: { enabled: config.sandboxAudio, ...(config.dataDir === ':memory:' ? {} : { dataDir: config.dataDir }) },
  });
  const credentials = new CredentialStore(db, secrets, clock);
  const twilio = new TwilioCarrier({
    publicUrl: config.publicUrl,
    apiUrl: config.twilioApiUrl,
    server: config.twilio,
    defaultFrom: config.twilioPhoneNumber,
    calls,
    credentials,
    ...(options.logger ? { log: options.logger } : {}),
  });
  // One 20 ms grid paces the outbound audio of every audio call in this process, in four phases
  // 5 ms apart so that hundreds of calls' frames leave in small bursts, each call keeping
  // audioAheadMs at the carrier.
  const frames = new FrameScheduler({ phases: 4, aheadFrames: config.audioAheadMs / 20 });
  const speech = options.speech ?? createSpeech(config);
  const audioLegs = carrierAudioLegs(config, speech, frames, options.logger, (provider) =>
    metrics.providerError(provider, 'failed'),
  );
  twilio.useAudioLeg(audioLegs);
  /** SIP (OPENLINE_SIP_LISTEN / OPENLINE_SIP_TRUNK), started with the workers. */
  let sip: SipCarrier | undefined;
  /** The carrier credentials a call named with encrypted_key (the carrier selector and SIP read them). */
  const credentialOf = async (request: DialRequest): Promise<CarrierCredential | undefined> => {
    const row = await calls.byId(request.callId);
    return row?.credential_id ? credentials.resolve(row.account_id, row.credential_id) : undefined;
  };
  const carrier = new CarrierSelector(sandbox, twilio, credentialOf);
  const offline = new OfflineAgent();
  const pathways = new PathwayStore(db, clock);
  const citationSchemas = new CitationSchemaStore(db, clock);
  const batches = new BatchStore(db, clock);
  const blocked = new BlockedStore(db, clock);
  const agentTests = new AgentTestStore(db, clock);
  const callEvents = new CallEventBus();
  const eventLog = new CallEventLog({
    bus: callEvents,
    calls,
    stream: (event) => webhooks.event(event.call_id, event.category, event.message, event.log_level),
    clock,
    log: options.logger,
  });
  const listening = new LiveListening();
  // Webhook nodes of pathways leave through the guarded client, as custom tools do (CONTRACT.md section 8).
  const pathwayHttp = new OutboundClient({ allowPrivate: config.allowPrivateUrls });
  // Secrets for tools, dynamic_data and webhooks; refreshed ones are fetched through the guarded client too.
  const vault = new VaultStore(db, clock, secrets);
  const secretResolver = new SecretResolver(vault, pathwayHttp, clock);
  const secretScope = (accountId: string, template: unknown, variables: Record<string, unknown>) =>
    secretResolver.scope(accountId, template, variables);
  /** Runs an account's custom tool with its secrets in scope, as calls, texts and the tool test do. */
  const runAccountTool = async (
    accountId: string,
    tool: CallTool,
    input: unknown,
    variables: Record<string, unknown>,
  ) => runTool(tool, input, await secretScope(accountId, tool, variables), pathwayHttp);
  // With an LLM configured (CONTRACT.md section 7) every call gets its own LlmAgent; else offline.
  const llm = config.llm;
  const provider = llm && new OpenAiProvider({ apiKey: llm.apiKey, baseUrl: llm.baseUrl, timeoutMs: llm.timeoutMs });
  // Post-call work is not latency-bound like a turn of conversation: it may wait longer for a reply.
  const postCall = new PostCallService({
    calls,
    llm: llm && {
      provider: new OpenAiProvider({
        apiKey: llm.apiKey,
        baseUrl: llm.baseUrl,
        timeoutMs: Math.max(llm.timeoutMs, 30_000),
      }),
      models: llm.models,
    },
    log: options.logger,
    citationSchemas,
  });
  /** The pathway runner of a call or of a pathway chat; `accountOf` and `saveLogs` differ. */
  const pathwayAgent = (
    request: CallRequest,
    own: Pick<PathwayAgentDeps, 'accountOf' | 'saveLogs' | 'sendSms'>,
  ): PathwayAgent =>
    new PathwayAgent({
      resolve: (accountId, pathwayId, version) => pathways.resolveVersion(accountId, pathwayId, version),
      http: pathwayHttp,
      secretScope,
      knowledgeTexts: async (accountId, ids) =>
        new Map((await knowledge.getMany(accountId, ids)).map((kb) => [kb.id, kb.text])),
      ...own,
      ...(llm && provider ? { llm: { provider, model: llm.models[request.model] } } : {}),
      now: () => clock.now(),
      ...(options.logger ? { log: options.logger } : {}),
    });
  /** The language model's agent for a request, or the offline model without one (CONTRACT.md section 7). */
  const modelAgent = (request: CallRequest): Agent =>
    llm && provider
      ? new LlmAgent({
          provider,
          model: llm.models[request.model],
          now: () => clock.now(),
          onFailure: (error) =>
            metrics.providerError(
              provider.name,
              error.status ? `http_${error.status}` : error.retryable ? 'retryable' : 'failed',
            ),
          ...(options.logger ? { log: options.logger } : {}),
        })
      : offline;
  /** A pathway in text only (pathway chats, SMS conversations): no logs of a call, no texts of its own. */
  const textPathwayAgent = (request: CallRequest, accountId: string): PathwayAgent =>
    pathwayAgent(request, {
      accountOf: async () => accountId,
      saveLogs: async () => {},
      sendSms: () => ({ ok: false, reason: 'a text conversation sends no other text messages' }),
    });
  const pathwayChats = new PathwayChats({
    clock,
    agentFor: textPathwayAgent,
  });
  /** The pathway runner of a call: its logs on the call's record, its texts through the call's carrier. */
  const callPathwayAgent = (request: CallRequest): PathwayAgent =>
    pathwayAgent(request, {
      accountOf: async (callId) => (await calls.byId(callId))?.account_id,
      saveLogs: (callId, logs) => calls.setPathwayLogs(callId, logs),
      // The sandbox logs a text of its own calls; any other call's goes out on Twilio.
      sendSms: (message) => (sandbox.call(message.callId) ? sandbox.sendSms(message) : twilio.sendSms(message)),
    });
  const knowledge = new KnowledgeStore(db, clock);
  const knowledgeLibrary = new KnowledgeLibrary(knowledge);
  const knowledgeGaps = new KnowledgeGapStore(db, clock);
  const personas = new PersonaStore(db, clock);
  const engine = new CallEngine({
    calls,
    queue,
    clock,
    carrier,
    // Each call's questions its knowledge bases had nothing on are kept as knowledge gaps.
    knowledgeFor: async (accountId, ids, call) => {
      const lookup = await knowledgeLibrary.lookupFor(accountId, ids);
      return (
        lookup &&
        noticingGaps(
          lookup,
          (question) =>
            void knowledgeGaps
              .record(accountId, { ...call, knowledgeBaseIds: ids, question })
              .catch((error: unknown) =>
                options.logger?.warn({ err: error, call_id: call.callId }, 'knowledge gap not recorded'),
              ),
        )
      );
    },
    secretScope,
    // A call with a pathway_id (sent, or from an inbound number's settings) follows the pathway;
    // a persona's call is handed to one of its pathways when the caller's words are about it.
    agentFor: (request) => {
      const agent = request.pathway_id ? callPathwayAgent(request) : modelAgent(request);
      if (!request.persona_routes?.length) return agent;
      return new PersonaRouter(agent, request.persona_routes, {
        pathwayAgent: callPathwayAgent,
        ...(llm && provider ? { llm: { provider, model: llm.models[request.model] } } : {}),
        ...(options.logger ? { log: options.logger } : {}),
      });
    },
    pricePerMinute: config.sandboxPricePerMinute,
    // Custom tools and dynamic_data leave through the guarded client too (CONTRACT.md section 8).
    http: new OutboundClient({ allowPrivate: config.allowPrivateUrls }),
    onEvent: (callId, category, message) => eventLog.record(callId, category, message),
    onAudioCall: (callId, leg) => listening.attach(callId, leg),
    onTranscript: (callId, user, text) =>
      callEvents.publishLine({ call_id: callId, user, text, at: clock.now().toISOString() }),
    onTurnLatency: (entry) => metrics.observeTurn(entry),
    concurrencyLimit: async (accountId) =>
      (await accounts.get(accountId))?.max_concurrent_calls ?? config.maxConcurrentCalls,
    ...(options.logger ? { log: options.logger } : {}),
  });
  liveCalls = () => engine.activeCount;
  // Every worker process runs the campaign dialer; claims are atomic, so several may share a database.
  const dialer = new CampaignDialer({
    db,
    dialect: storage.dialect,
    clock,
    queue,
    ...(options.logger ? { log: options.logger } : {}),
  });
  let working = false;
  let draining = false;
  let queueStopped: Promise<void> | undefined;
  const tools = new ToolStore(db, clock);
  const agents = new AgentStore(db, clock);
  const inbound = new InboundStore(db, clock);
  const webCalls = new WebCalls(
    {
      calls,
      agents,
      inbound,
      pathways,
      tools,
      knowledge,
      personas,
      engine,
      callEvents,
      speech,
      get draining() {
        return draining;
      },
    },
    audioLegs,
    config.webrtc,
    options.logger,
  );
  const smsConversations: SmsConversations = new SmsConversations({
    db,
    clock,
    queue,
    agentFor: (request, accountId) => (request.pathway_id ? textPathwayAgent(request, accountId) : modelAgent(request)),
    tools: (accountId) => toolResolver({ tools, knowledge }, accountId),
    runTool: runAccountTool,
    send: async (accountId, message) =>
      (await sendSms(services, accountId, { ...message, fromField: 'agent_number' })).message_id,
    ...(options.logger ? { log: options.logger } : {}),
  });
  const services: Services = {
    webCalls,
    smsConversations,
    listening,
    webCallTokens: new WebCallTokenStore(db, clock),
    config,
    speech,
    clock,
    storage,
    secrets,
    queue,
    accounts,
    credentials,
    calls,
    tools,
    knowledge,
    knowledgeGaps,
    citationSchemas,
    speechSamples: new SpeechSampleStore(db, clock),
    personas,
    vault,
    pathwayFolders: new PathwayFolderStore(db, clock),
    readWebPages: (urls) => readWebPages(urls, pathwayHttp),
    crawlSite: (url, limit) => crawlSite(url, limit, pathwayHttp),
    askKnowledge: async (accountId, id, question, history) => {
      const lookup = await knowledgeLibrary.lookupFor(accountId, [id]);
      if (!lookup) return undefined;
      try {
        return await answerFromKnowledge({
          lookup,
          question,
          history,
          ...(llm && provider && { llm: { provider, model: llm.models.base } }),
        });
      } catch (error) {
        if (!(error instanceof LlmError)) throw error;
        throw new ApiError('PROVIDER_UNAVAILABLE', `The language model failed: ${error.message}`);
      }
    },
    testTool: runAccountTool,
    agents,
    inbound,
    campaigns: new CampaignStore(db, clock),
    pathways,
    batches,
    blocked,
    agentTests,
    callEvents,
    pathwayChats,
    a2p: new A2pStore(db, clock),
    sandbox,
    carrier,
    twilio,
    engine,
    webhooks,
    postCall,
    metrics,
    frames,
    async sipTrunksChanged() {
      await sip?.accountTrunksChanged();
    },
    async startWorkers() {
      if (working) return;
      working = true;
      await engine.recover({ soleProcess: storage.dialect === 'sqlite' });
      engine.start();
      sip = await startSip(services, audioLegs, credentialOf, options.logger);
      carrier.useSip(sip);
      queue.work({
        sms_reply: metrics.timeJob('sms_reply', (job) => smsConversations.reply(job.message_id)),
        postcall: metrics.timeJob('postcall', (job) =>
          afterCall(
            {
              calls,
              summarize: (id) => postCall.callEnded(id),
              scheduleWebhook: async (id) => {
                await eventLog.callEnded(id);
                await webhooks.callEnded(id);
              },
              voicemailSms: (id) => sendVoicemailSms(services, id),
              retryAfterVoicemail: (id) => engine.retryAfterVoicemail(id),
            },
            job,
          ),
        ),
        agent_test_run: metrics.timeJob('agent_test_run', (job, run) => checkRun(services, job, run.attempt)),
        dial: metrics.timeJob('dial', (job, run) => engine.dial(job.call_id, job.wait ?? 0, run.settle)),
        webhook: metrics.timeJob('webhook', (job) =>
          inSpan('webhook delivery', { 'openline.call.id': job.call_id, 'openline.webhook.attempt': job.attempt }, () =>
            webhooks.deliver(job),
          ),
        ),
      });
      dialer.start();
    },
    async ready() {
      if (draining) throw new Error('draining: this process is shutting down');
      await ping(storage);
      await queue.ping();
    },
    get draining() {
      return draining;
    },
    async drain(deadlineMs) {
      draining = true;
      await dialer.stop();
      // Stops fetching jobs now; resolves once the jobs under way (calls among them) are over.
      queueStopped = queue.stop();
      let jobsOver = false;
      void queueStopped.then(() => (jobsOver = true));
      const deadline = performance.now() + deadlineMs;
      // Dial jobs fetched a moment ago count too, before their calls are live.
      while ((!jobsOver || engine.activeCount > 0) && performance.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const cut = engine.liveIds();
      if (cut.length === 0) return { cut: 0 };
      await engine.stopAll();
      for (const id of cut) {
        await calls.transition(id, ['complete', 'call_error'], {
          error_message: `The server shut down (graceful restart): the call was ended after ${Math.round(deadlineMs / 1000)} s of draining`,
        });
      }
      return { cut: cut.length };
    },
    async close() {
      await dialer.stop();
      postCall.close();
      await engine.stopAll();
      await sip?.close();
      frames.stop();
      await webhooks.drain();
      await (queueStopped ?? queue.stop());
      await storage.close();
    },
  };
  // An agent test run's scripted caller answers the number the run was given (docs/agent-tests.md).
  sandbox.useCallers((number) => runCaller(services, number));
  return services;
}
