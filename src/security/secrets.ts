import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const KEY_FILE = 'master.key';

/** Reads a 32-byte key written as 64 hex characters or as base64. */
function decodeKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (/^[0-9a-f]{64}$/i.test(trimmed)) return Buffer.from(trimmed, 'hex');
  const b = Buffer.from(trimmed, 'base64');
  return b.length === 32 ? b : undefined;
}

/**
 * The master key for secrets at rest: OPENLINE_MASTER_KEY when set, else DATA_DIR/master.key,
 * generated on first use with 0600 permissions.
 */
export function loadMasterKey(options: { masterKey?: string | undefined; dataDir: string }): Buffer {
  if (options.masterKey) {
    const key = decodeKey(options.masterKey);
    if (!key) throw new Error('OPENLINE_MASTER_KEY must be 32 bytes written as 64 hex characters or base64');
    return key;
  }
  if (options.dataDir === ':memory:') return randomBytes(32);
  const file = path.join(options.dataDir, KEY_FILE);
  if (fs.existsSync(file)) {
    const key = decodeKey(fs.readFileSync(file, 'utf8'));
    if (!key) throw new Error(`${file} does not hold a 32-byte key`);
    return key;
  }
  fs.mkdirSync(options.dataDir, { recursive: true });
  const key = randomBytes(32);
  try {
    fs.writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  } catch (error) {
    // Another process created it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return loadMasterKey(options);
    throw error;
  }
  return key;
}

/** AES-256-GCM with a random nonce; the text form is `v1.<nonce>.<tag>.<ciphertext>` in base64url. */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the master key must be 32 bytes');
  }

  seal(plaintext: string, associated = ''): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(Buffer.from(associated));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return ['v1', nonce, tag, data].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
  }

  /** Throws when the text was not sealed with this key and associated data. */
  open(sealed: string, associated = ''): string {
    const [version, nonce, tag, data] = sealed.split('.');
    if (version !== 'v1' || nonce === undefined || tag === undefined || data === undefined) {
      throw new Error('not a sealed secret');
    }
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(nonce, 'base64url'));
    decipher.setAAD(Buffer.from(associated));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** API keys are 32 random bytes: a fast hash is the right tool (no salt or stretching needed). */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export function newApiKey(): string {
  return `ol_${randomBytes(24).toString('base64url')}`;
}

export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export function newId(prefix = ''): string {
  return prefix + crypto.randomUUID();
}
