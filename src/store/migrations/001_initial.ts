import type { Kysely } from 'kysely';
import type { Dialect } from '../db.js';

// Migrations see the database as it was when they were written, not as types.ts says today.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export async function up(db: AnyDb, dialect: Dialect): Promise<void> {
  const serial = dialect === 'postgres' ? 'serial' : 'integer';

  await db.schema
    .createTable('accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('webhook_secret_enc', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .execute();
  await db.schema.createIndex('api_keys_account').on('api_keys').column('account_id').execute();

  await db.schema
    .createTable('carrier_credentials')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('secret_enc', 'text', (c) => c.notNull())
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('calls')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('to_number', 'text', (c) => c.notNull())
    .addColumn('from_number', 'text')
    .addColumn('batch_id', 'text')
    .addColumn('campaign_id', 'text')
    .addColumn('inbound', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('queue_status', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('completed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('answered_by', 'text')
    .addColumn('scheduled_at', 'text')
    .addColumn('started_at', 'text')
    .addColumn('end_at', 'text')
    .addColumn('ended_at', 'text')
    .addColumn('error_message', 'text')
    .addColumn('call_length', 'double precision')
    .addColumn('corrected_duration', 'double precision')
    .addColumn('price', 'double precision')
    .addColumn('call_ended_by', 'text')
    .addColumn('transferred_to', 'text')
    .addColumn('max_duration', 'integer', (c) => c.notNull())
    .addColumn('record', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('recording_path', 'text')
    .addColumn('summary', 'text')
    .addColumn('request', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text')
    .addColumn('variables', 'text')
    .addColumn('analysis_schema', 'text')
    .addColumn('analysis', 'text')
    .addColumn('pathway_logs', 'text')
    .addColumn('concatenated_transcript', 'text')
    .addColumn('credential_id', 'text')
    .addColumn('carrier', 'text', (c) => c.notNull())
    .addColumn('carrier_call_id', 'text')
    .addColumn('retry_of', 'text')
    .execute();
  await db.schema
    .createIndex('calls_account_created')
    .on('calls')
    .columns(['account_id', 'created_at', 'id'])
    .execute();
  await db.schema.createIndex('calls_account_to').on('calls').columns(['account_id', 'to_number']).execute();
  await db.schema.createIndex('calls_account_batch').on('calls').columns(['account_id', 'batch_id']).execute();
  await db.schema.createIndex('calls_account_campaign').on('calls').columns(['account_id', 'campaign_id']).execute();
  await db.schema.createIndex('calls_queue_status').on('calls').column('queue_status').execute();

  await db.schema
    .createTable('transcripts')
    .addColumn('id', serial, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('call_id', 'text', (c) => c.notNull().references('calls.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('user', 'text', (c) => c.notNull())
    .addColumn('status', 'text')
    .addColumn('transcript_id', 'text')
    .execute();
  await db.schema.createIndex('transcripts_call').on('transcripts').columns(['call_id', 'id']).execute();

  await db.schema
    .createTable('tools')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('definition', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tools_account').on('tools').columns(['account_id', 'created_at']).execute();

  await db.schema
    .createTable('agents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('config', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agents_account').on('agents').columns(['account_id', 'created_at']).execute();

  await db.schema
    .createTable('inbound_numbers')
    .addColumn('phone_number', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('carrier', 'text', (c) => c.notNull())
    .addColumn('credential_id', 'text')
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('sms_webhook', 'text')
    .execute();
  await db.schema.createIndex('inbound_account').on('inbound_numbers').columns(['account_id', 'created_at']).execute();

  await db.schema
    .createTable('campaigns')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('request_data', 'text', (c) => c.notNull())
    .addColumn('sequences', 'text', (c) => c.notNull())
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('from_number', 'text')
    .addColumn('current_step', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('number_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('campaigns_account').on('campaigns').columns(['account_id', 'created_at']).execute();

  await db.schema
    .createTable('campaign_numbers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('campaign_id', 'text', (c) => c.notNull().references('campaigns.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('phone_number', 'text', (c) => c.notNull())
    .addColumn('request_data', 'text')
    .addColumn('metadata', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('step', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_at', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('campaign_numbers_campaign')
    .on('campaign_numbers')
    .columns(['campaign_id', 'position'])
    .execute();

  await db.schema
    .createTable('pathways')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('nodes', 'text', (c) => c.notNull())
    .addColumn('edges', 'text', (c) => c.notNull())
    .addColumn('production_version_id', 'text')
    .addColumn('staging_version_id', 'text')
    .execute();
  await db.schema.createIndex('pathways_account').on('pathways').columns(['account_id', 'created_at']).execute();

  await db.schema
    .createTable('pathway_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('pathway_id', 'text', (c) => c.notNull().references('pathways.id').onDelete('cascade'))
    .addColumn('version_number', 'integer', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('nodes', 'text', (c) => c.notNull())
    .addColumn('edges', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('pathway_versions_number', ['pathway_id', 'version_number'])
    .execute();

  await db.schema
    .createTable('a2p_registrations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('failure_reason', 'text')
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('decide_at', 'text')
    .execute();

  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('run_at', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('locked_by', 'text')
    .addColumn('locked_until', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('jobs_due').on('jobs').columns(['state', 'run_at']).execute();
}
