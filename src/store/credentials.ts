import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from './types.js';
import type { Clock } from '../clock.js';
import type { SecretBox } from '../security/secrets.js';
import {
  CARRIER_PROVIDERS,
  credentialLabel,
  pickCredential,
  type CarrierCredential,
  type CarrierProvider,
  type StoredCredential,
} from '../schemas/account.js';

/**
 * Binds a sealed secret to its account, row and provider: a ciphertext copied into another
 * account's row, or relabelled as another provider, fails to open.
 */
function associated(accountId: string, id: string, provider: string): string {
  return `carrier:${accountId}:${id}:${provider}`;
}

/** The opaque `encrypted_key` reference: random, so it reveals nothing and cannot be guessed. */
function newReference(): string {
  return `ek_${randomBytes(24).toString('base64url')}`;
}

function isProvider(value: string): value is CarrierProvider {
  return (CARRIER_PROVIDERS as string[]).includes(value);
}

/** Carrier credentials of each account (CONTRACT section 3), encrypted at rest with the master key. */
export class CredentialStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly box: SecretBox,
    private readonly clock: Clock,
  ) {}

  /** Stores the credentials and returns the reference clients send as the encrypted_key header. */
  async create(accountId: string, credential: CarrierCredential): Promise<StoredCredential> {
    const clean = pickCredential(credential);
    const id = newReference();
    const { provider, ...secret } = clean;
    const row = {
      id,
      account_id: accountId,
      provider,
      secret_enc: this.box.seal(JSON.stringify(secret), associated(accountId, id, provider)),
      label: credentialLabel(clean),
      created_at: this.clock.now().toISOString(),
    };
    await this.db.insertInto('carrier_credentials').values(row).execute();
    return { id, provider, label: row.label, created_at: row.created_at };
  }

  async list(accountId: string): Promise<StoredCredential[]> {
    const rows = await this.db
      .selectFrom('carrier_credentials')
      .select(['id', 'provider', 'label', 'created_at'])
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.filter((r): r is typeof r & { provider: CarrierProvider } => isProvider(r.provider));
  }

  /** Every account's references of one provider (the SIP trunks that register, at start). */
  references(provider: CarrierProvider): Promise<{ account_id: string; id: string }[]> {
    return this.db
      .selectFrom('carrier_credentials')
      .select(['account_id', 'id'])
      .where('provider', '=', provider)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  /**
   * The decrypted credentials behind a reference of this account; undefined for an unknown
   * reference or another account's. Throws when the row exists but cannot be opened (the master
   * key changed or the row was tampered with): that is a server fault, not a bad request.
   */
  async resolve(accountId: string, encryptedKey: string): Promise<CarrierCredential | undefined> {
    const row = await this.db
      .selectFrom('carrier_credentials')
      .select(['id', 'provider', 'secret_enc'])
      .where('account_id', '=', accountId)
      .where('id', '=', encryptedKey)
      .executeTakeFirst();
    if (!row) return undefined;
    if (!isProvider(row.provider))
      throw new Error(`stored carrier credentials have an unknown provider: ${row.provider}`);
    let plain: string;
    try {
      plain = this.box.open(row.secret_enc, associated(accountId, row.id, row.provider));
    } catch {
      throw new Error('stored carrier credentials cannot be decrypted (was the master key changed?)');
    }
    return pickCredential({ ...(JSON.parse(plain) as object), provider: row.provider } as CarrierCredential);
  }

  async delete(accountId: string, encryptedKey: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('carrier_credentials')
      .where('account_id', '=', accountId)
      .where('id', '=', encryptedKey)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** How many of the account's inbound numbers are bound to this reference. */
  async inboundNumbersUsing(accountId: string, encryptedKey: string): Promise<number> {
    const row = await this.db
      .selectFrom('inbound_numbers')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .where('credential_id', '=', encryptedKey)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }
}
