import type { Generated } from 'kysely';
import type { QueueStatus } from '../domain/call-state.js';

/**
 * Column conventions, identical on SQLite and PostgreSQL: times are ISO 8601 UTC text (they sort
 * as text), booleans are integers 0/1, structured values are JSON text.
 */
export interface AccountsTable {
  id: string;
  name: string;
  created_at: string;
  /** Webhook signing secret, encrypted with the master key. */
  webhook_secret_enc: string;
  /** Requests a minute per API key of this account; null: the server's OPENLINE_RATE_LIMIT_PER_MINUTE. */
  rate_limit_per_minute: number | null;
  /** Calls at once (allocated or started); null: the server's OPENLINE_MAX_CONCURRENT_CALLS. */
  max_concurrent_calls: number | null;
}

/** The current rate-limit window of one API key (migration 090), shared by every process. */
export interface RateLimitWindowsTable {
  key: string;
  /** Start of the window, ms since the epoch. */
  window_start: number;
  count: number;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  /** SHA-256 of the key (hex); the key itself is never stored. */
  key_hash: string;
  /** The first characters of the key, to tell keys apart in listings. */
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

export interface CarrierCredentialsTable {
  /** The opaque value clients send as the `encrypted_key` header. */
  id: string;
  account_id: string;
  provider: string;
  /** Provider credentials as JSON, encrypted with the master key. */
  secret_enc: string;
  /** Non-secret identifier (e.g. the Twilio account SID's last digits) for listings. */
  label: string;
  created_at: string;
}

export interface CallsTable {
  id: string;
  account_id: string;
  created_at: string;
  updated_at: string;
  to_number: string;
  from_number: string | null;
  batch_id: string | null;
  campaign_id: string | null;
  inbound: number;
  queue_status: QueueStatus;
  status: string;
  completed: number;
  answered_by: string | null;
  scheduled_at: string | null;
  started_at: string | null;
  end_at: string | null;
  ended_at: string | null;
  error_message: string | null;
  call_length: number | null;
  corrected_duration: number | null;
  price: number | null;
  call_ended_by: string | null;
  transferred_to: string | null;
  max_duration: number;
  record: number;
  recording_path: string | null;
  /** JSON: per-turn latency of audio calls (src/media/latency.ts LatencyReport; migration 008). */
  latency: string | null;
  /** The OpenTelemetry trace id of the call, when tracing is on (migration 091). */
  trace_id: string | null;
  summary: string | null;
  /** JSON: the normalized parameters of the request (the record's request_data). */
  request: string;
  /** JSON */
  metadata: string | null;
  /** JSON */
  variables: string | null;
  /** JSON */
  analysis_schema: string | null;
  /** JSON */
  analysis: string | null;
  pathway_logs: string | null;
  concatenated_transcript: string | null;
  /** The carrier credentials reference (encrypted_key) the call was placed with, if any. */
  credential_id: string | null;
  carrier: string;
  carrier_call_id: string | null;
  /** The call this one retries (retry after voicemail). */
  retry_of: string | null;
  /** The pathway the call follows (request.pathway_id), for list filters (migration 110). */
  pathway_id: string | null;
  /** Set by the stop endpoint for a live call; the process running it hangs up. */
  stop_requested_at: string | null;
  /** Until when the process running this live call vouches for it (renewed while it runs). */
  lease_until: string | null;
}

export interface TranscriptsTable {
  id: Generated<number>;
  call_id: string;
  created_at: string;
  text: string;
  user: string;
  status: string | null;
  transcript_id: string | null;
}

export interface ToolsTable {
  id: string;
  account_id: string;
  created_at: string;
  updated_at: string;
  name: string;
  /** JSON: the tool object of seed 2.5. */
  definition: string;
}

/** Every text a knowledge base has had, numbered from 1 (migration 105). */
export interface KnowledgeVersionsTable {
  id: string;
  kb_id: string;
  account_id: string;
  version_number: number;
  text: string;
  source_urls: string | null;
  /** What made it: 'created', 'content', 'urls', 'restored from version N'. */
  change: string;
  created_at: string;
}

/** What POST /v1/speak said (migration 108): the hosted API's speech samples. */
export interface SpeechSamplesTable {
  id: string;
  account_id: string;
  text: string;
  /** The voice asked for, as the catalogue names it (its id). */
  voice_id: string;
  /** pcm_<rate>: 16-bit mono PCM at that rate, in a WAV file. */
  output_format: string;
  /** The WAV file, base64. */
  audio: string;
  latency_ms: number;
  created_at: string;
}

/** Reusable extraction schemas calls are analyzed with (migration 107). */
export interface CitationSchemasTable {
  id: string;
  account_id: string;
  name: string;
  description: string | null;
  /** JSON object: field name to type hint or description, as a call's analysis_schema. */
  schema: string;
  created_at: string;
  updated_at: string;
}

/** Questions a call's knowledge bases had nothing on (migration 106). */
export interface KnowledgeGapsTable {
  id: string;
  account_id: string;
  call_id: string;
  persona_id: string | null;
  /** JSON list of the call's knowledge bases. */
  knowledge_base_ids: string;
  question: string;
  /** 'open', 'resolved' or 'dismissed'. */
  status: string;
  answer: string | null;
  created_at: string;
  resolved_at: string | null;
}

export interface KnowledgeBasesTable {
  id: string;
  account_id: string;
  name: string;
  description: string | null;
  /** 'TEXT' (typed in), 'FILE' (read from an upload) or 'WEB_SCRAPE' (read from web pages). */
  type: string;
  text: string;
  file_name: string | null;
  file_size: number | null;
  file_type: string | null;
  /** JSON list of the pages of a WEB_SCRAPE knowledge base. */
  source_urls: string | null;
  created_at: string;
  updated_at: string;
}

export interface PersonasTable {
  id: string;
  account_id: string;
  name: string;
  role: string | null;
  description: string | null;
  /** JSON array. */
  tags: string;
  image_url: string | null;
  production_version_id: string;
  draft_version_id: string;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface PersonaVersionsTable {
  id: string;
  persona_id: string;
  /** 'draft', 'production' (the live one) or 'archived' (a production version since replaced). */
  version_type: string;
  version_number: number;
  /** JSON: the version's PersonaBehaviour. */
  behaviour: string;
  promoted_from_version_id: string | null;
  promoted_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface AccountSecretsTable {
  id: string;
  account_id: string;
  name: string;
  /** 1: a value kept as given; 0: fetched from `config` and refreshed. */
  static: number;
  /** The value, or the JSON of the refresh config, sealed (AES-256-GCM) with the master key. */
  sealed: string;
  created_at: string;
  updated_at: string;
}

export interface AgentsTable {
  id: string;
  account_id: string;
  created_at: string;
  updated_at: string;
  /** JSON: the agent settings of seed 2.6 (without agent_id). */
  config: string;
}

export interface InboundNumbersTable {
  phone_number: string;
  account_id: string;
  created_at: string;
  updated_at: string;
  carrier: string;
  credential_id: string | null;
  /** JSON: the configuration of seed 2.4. */
  config: string;
  sms_webhook: string | null;
}

export interface BlockedNumbersTable {
  account_id: string;
  phone_number: string;
  reason: string | null;
  created_at: string;
}

export interface BatchesTable {
  id: string;
  account_id: string;
  created_at: string;
  label: string | null;
  call_count: number;
  /** JSON: the settings every call of the batch shares, as sent (global / base_prompt and the rest). */
  settings: string;
  stopped_at: string | null;
}

export interface CampaignsTable {
  id: string;
  account_id: string;
  created_at: string;
  updated_at: string;
  name: string;
  state: string;
  /** JSON: request_data (call settings shared by every call). */
  request_data: string;
  /** JSON: the sequence steps. */
  sequences: string;
  /** JSON: stop_when_answer, auto_mark_complete, pacing, calling window, retries. */
  config: string;
  from_number: string | null;
  current_step: number;
  number_count: number;
  /** Pacing: the dialer's next even slot for a call of this campaign (migration 005). */
  next_dial_at: string | null;
}

export interface CampaignNumbersTable {
  id: string;
  campaign_id: string;
  position: number;
  phone_number: string;
  /** JSON */
  request_data: string | null;
  /** JSON */
  metadata: string | null;
  state: string;
  step: number;
  attempts: number;
  next_at: string | null;
  updated_at: string;
  /** The call of the current attempt, set when the dialer claims the number (migration 005). */
  call_id: string | null;
}

export interface PathwaysTable {
  id: string;
  account_id: string;
  created_at: string;
  updated_at: string;
  name: string;
  description: string | null;
  /** JSON: nodes of the draft. */
  nodes: string;
  /** JSON: edges of the draft. */
  edges: string;
  production_version_id: string | null;
  staging_version_id: string | null;
  /** The folder it is filed in; null: the top level. */
  folder_id: string | null;
}

export interface PathwayFoldersTable {
  id: string;
  account_id: string;
  name: string;
  parent_folder_id: string | null;
  created_at: string;
  updated_at: string;
}

export interface PathwayVersionsTable {
  id: string;
  pathway_id: string;
  version_number: number;
  name: string;
  /** JSON */
  nodes: string;
  /** JSON */
  edges: string;
  created_at: string;
  /** When it was first published to production; null while it never was. */
  published_at: string | null;
}

/** An event of a call (webhook_events' categories), as GET /v1/calls/{id}/events lists them. */
export interface CallEventsTable {
  id: Generated<number>;
  call_id: string;
  category: string;
  log_level: string;
  message: string;
  at: string;
}

export interface A2pRegistrationsTable {
  id: string;
  account_id: string;
  created_at: string;
  updated_at: string;
  status: string;
  failure_reason: string | null;
  /** JSON: the registration request. */
  data: string;
  decide_at: string | null;
}

export interface JobsTable {
  /** Idempotent id derived from the entity, e.g. `dial:<call_id>`. */
  id: string;
  name: string;
  /** JSON */
  payload: string;
  state: string;
  run_at: string;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  locked_by: string | null;
  locked_until: string | null;
  created_at: string;
  updated_at: string;
}

/** One end-of-call webhook message per call (migration 004). */
export interface WebhookMessagesTable {
  call_id: string;
  /** The Standard Webhooks `webhook-id`: the same on every attempt of this message. */
  id: string;
  account_id: string;
  url: string;
  /** The JSON body, stored once and sent unchanged on every attempt. */
  payload: string;
  created_at: string;
  /** When an attempt last succeeded; null while undelivered. */
  delivered_at: string | null;
}

/** One row per delivery attempt (migration 004). */
export interface WebhookDeliveriesTable {
  id: string;
  call_id: string;
  account_id: string;
  url: string;
  attempt: number;
  sent_at: string;
  response_code: number | null;
  response_time_ms: number | null;
  error: string | null;
  send_type: string;
}

/** Inbound SMS (migration 006). */
export interface SmsMessagesTable {
  id: string;
  account_id: string;
  to_number: string;
  from_number: string;
  body: string;
  carrier: string;
  carrier_message_id: string | null;
  received_at: string;
  created_at: string;
  /** The SMS webhook the message was sent to; null when the number had none. */
  webhook: string | null;
  /** inbound (received on one of the account's numbers) or outbound (sent by POST /v1/sms/send). */
  direction: string;
  /** The AI conversation the message belongs to (a number with SMS agent settings); else null. */
  conversation_id: string | null;
}

/** A number's SMS agent settings (POST /v1/sms/number/update), JSON in `config`. */
export interface SmsConfigsTable {
  phone_number: string;
  account_id: string;
  config: string;
  updated_at: string;
}

/** An AI conversation over SMS between one of the account's numbers and a person. */
export interface SmsConversationsTable {
  id: string;
  account_id: string;
  agent_number: string;
  user_number: string;
  is_active: number;
  /** JSON: the variables of the conversation. */
  request_data: string | null;
  /** JSON: the variables its agent's custom tools set, kept from one text to the next. */
  variables: string | null;
  created_at: string;
  updated_at: string;
}

/** A note of what an SMS conversation's agent did in answering one text (a custom tool's run). */
export interface SmsAgentActionsTable {
  id: string;
  conversation_id: string;
  /** The inbound text the agent was answering. */
  message_id: string;
  text: string;
  created_at: string;
}

/** A web call's single-use token (POST /v1/agents/{id}/authorize), by its SHA-256. */
export interface WebCallTokensTable {
  token_hash: string;
  account_id: string;
  agent_id: string;
  /** JSON: the variables the call gets (request_data). */
  request_data: string | null;
  expires_at: string;
  created_at: string;
  /** 1: good for any number of calls until it expires; 0: one call. */
  reusable: Generated<number>;
  /** A reusable token's limit of calls a minute. */
  calls_per_minute: number | null;
  /** JSON array of origins (`https://shop.example`) the token works from; null: any. */
  allowed_origins: string | null;
}

/** An agent test scenario (POST /v1/agent-testing/scenarios): its fields as JSON. */
export interface AgentTestScenariosTable {
  id: string;
  account_id: string;
  created_at: string;
  updated_at: string;
  /** JSON: the scenario's fields (name, agent under test, input_messages, assertions, ...). */
  spec: string;
}

/** A batch of agent test runs (POST /v1/agent-testing/batch-run). */
export interface AgentTestBatchesTable {
  id: string;
  account_id: string;
  created_at: string;
  webhook_url: string | null;
  /** null until the batch's webhook was sent; then "delivered" or why it failed. */
  webhook_status: string | null;
  /** JSON: scenario_ids, repeat, version_number, trigger_source. */
  settings: string;
}

/** One run of a scenario: a real sandbox call and its judged result. */
export interface AgentTestRunsTable {
  id: string;
  account_id: string;
  scenario_id: string;
  batch_id: string | null;
  created_at: string;
  completed_at: string | null;
  /** RUNNING, PASSED, FAILED or ERROR. */
  status: string;
  /** The sandbox number the run's scripted caller answers while the run is RUNNING. */
  caller_number: string;
  /** JSON: the caller's lines, as they were when the run started. */
  caller_lines: string;
  call_id: string | null;
  score: number | null;
  /** JSON: the scenario as run (agent, assertions) and the run's own options. */
  settings: string;
  /** JSON: assertion results, transcript, variables, nodes, error_message. */
  result: string | null;
  webhook_status: string | null;
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  carrier_credentials: CarrierCredentialsTable;
  calls: CallsTable;
  transcripts: TranscriptsTable;
  call_events: CallEventsTable;
  tools: ToolsTable;
  knowledge_bases: KnowledgeBasesTable;
  knowledge_versions: KnowledgeVersionsTable;
  knowledge_gaps: KnowledgeGapsTable;
  citation_schemas: CitationSchemasTable;
  speech_samples: SpeechSamplesTable;
  personas: PersonasTable;
  account_secrets: AccountSecretsTable;
  persona_versions: PersonaVersionsTable;
  agents: AgentsTable;
  inbound_numbers: InboundNumbersTable;
  batches: BatchesTable;
  blocked_numbers: BlockedNumbersTable;
  campaigns: CampaignsTable;
  campaign_numbers: CampaignNumbersTable;
  pathways: PathwaysTable;
  pathway_versions: PathwayVersionsTable;
  pathway_folders: PathwayFoldersTable;
  a2p_registrations: A2pRegistrationsTable;
  jobs: JobsTable;
  rate_limit_windows: RateLimitWindowsTable;
  webhook_messages: WebhookMessagesTable;
  webhook_deliveries: WebhookDeliveriesTable;
  sms_messages: SmsMessagesTable;
  web_call_tokens: WebCallTokensTable;
  sms_configs: SmsConfigsTable;
  sms_conversations: SmsConversationsTable;
  sms_agent_actions: SmsAgentActionsTable;
  agent_test_scenarios: AgentTestScenariosTable;
  agent_test_batches: AgentTestBatchesTable;
  agent_test_runs: AgentTestRunsTable;
}
