import type { Kysely, Selectable } from 'kysely';
import type { Database, SpeechSamplesTable } from './types.js';
import type { Clock } from '../clock.js';
import { newId } from '../security/secrets.js';
import { ownedRows, type OwnedRows } from './owned.js';

/** How many samples an account keeps: the newest; older ones are removed as new ones come. */
export const SAMPLES_KEPT = 100;

/** What POST /v1/speak said, without its audio. */
export interface SpeechSample {
  id: string;
  text: string;
  voice_id: string;
  output_format: string;
  latency_ms: number;
  created_at: string;
}

const toSample = ({ id, text, voice_id, output_format, latency_ms, created_at }: Selectable<SpeechSamplesTable>) => ({
  id,
  text,
  voice_id,
  output_format,
  latency_ms,
  created_at,
});

/** Each account's speech samples (/v1/speak/samples). */
export class SpeechSampleStore {
  private readonly rows: OwnedRows<'speech_samples'>;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {
    this.rows = ownedRows(db, 'speech_samples');
  }

  /** Keeps one; the account's oldest beyond SAMPLES_KEPT go. */
  async add(
    accountId: string,
    input: { text: string; voiceId: string; outputFormat: string; wav: Buffer; latencyMs: number },
  ): Promise<SpeechSample> {
    // Newest first means by created_at: one sample a millisecond after the account's last at the
    // earliest, so that samples kept in one millisecond still have an order (and the oldest goes).
    const last = await this.db
      .selectFrom('speech_samples')
      .select('created_at')
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    const now = this.clock.now().getTime();
    const at = last ? Math.max(now, Date.parse(last.created_at) + 1) : now;
    const row = {
      id: newId(),
      account_id: accountId,
      text: input.text,
      voice_id: input.voiceId,
      output_format: input.outputFormat,
      audio: input.wav.toString('base64'),
      latency_ms: Math.round(input.latencyMs),
      created_at: new Date(at).toISOString(),
    };
    await this.db.insertInto('speech_samples').values(row).execute();
    const kept = this.db
      .selectFrom('speech_samples')
      .select('id')
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(SAMPLES_KEPT);
    await this.db
      .deleteFrom('speech_samples')
      .where('account_id', '=', accountId)
      .where('id', 'not in', kept)
      .execute();
    return toSample(row);
  }

  /** The account's samples, newest first, `voiceId`'s alone when given. */
  async list(
    accountId: string,
    page: { limit: number; offset: number; voiceId?: string | undefined },
  ): Promise<SpeechSample[]> {
    let query = this.db
      .selectFrom('speech_samples')
      .select(['id', 'text', 'voice_id', 'output_format', 'latency_ms', 'created_at'])
      .where('account_id', '=', accountId);
    if (page.voiceId) query = query.where('voice_id', '=', page.voiceId);
    return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute();
  }

  /** One sample with its WAV file. */
  async get(accountId: string, id: string): Promise<(SpeechSample & { wav: Buffer }) | undefined> {
    const row = await this.rows.get(accountId, id);
    return row && { ...toSample(row), wav: Buffer.from(row.audio, 'base64') };
  }
}
