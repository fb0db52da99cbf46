import type { Account, AccountStore, ApiKeyInfo } from '../store/accounts.js';

/** A mistake of the caller (unknown account, no such key): reported without a stack, exit 1. */
export class CliError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}

export interface Output {
  out(line: string): void;
  err(line: string): void;
}

/** Columns padded to their widest cell, for lists read by people. */
export function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/** The account named by --account, else the first one created (the server's default account). */
export async function resolveAccount(accounts: AccountStore, id: string | undefined): Promise<Account> {
  if (id !== undefined) {
    const account = await accounts.get(id);
    if (!account) throw new CliError(`No account with id ${id} (see: openline accounts list)`);
    return account;
  }
  const [first] = await accounts.list();
  if (!first) throw new CliError('There is no account yet: create one with `openline accounts create`');
  return first;
}

export async function accountsCreate(
  accounts: AccountStore,
  io: Output,
  options: { name: string; storage: string },
): Promise<void> {
  const { account, key } = await accounts.create(options.name);
  io.out(`Created account ${account.id} (${account.name}) in ${options.storage}.`);
  io.out('Its API key, shown only this once (send it as the authorization header):');
  // Last line on purpose: scripts take it with `tail -n 1`.
  io.out(key);
}

export async function accountsList(accounts: AccountStore, io: Output): Promise<void> {
  const all = await accounts.list();
  if (all.length === 0) {
    io.out('No accounts yet: create one with `openline accounts create`.');
    return;
  }
  const rows = all.map((a, i) => [a.id, a.name, a.created_at, i === 0 ? 'default' : '']);
  for (const line of table(['ID', 'NAME', 'CREATED', ''], rows)) io.out(line);
}

export async function keysCreate(accounts: AccountStore, io: Output, accountId: string | undefined): Promise<void> {
  const account = await resolveAccount(accounts, accountId);
  const { key, info } = await accounts.createKey(account.id);
  io.out(`Created key ${info.id} for account ${account.id} (${account.name}).`);
  io.out('The key, shown only this once:');
  io.out(key);
}

function keyState(key: ApiKeyInfo): string {
  return key.revoked_at ? `revoked ${key.revoked_at}` : 'active';
}

export async function keysList(accounts: AccountStore, io: Output, accountId: string | undefined): Promise<void> {
  const account = await resolveAccount(accounts, accountId);
  const keys = await accounts.listKeys(account.id);
  io.out(`Keys of account ${account.id} (${account.name}):`);
  const rows = keys.map((k) => [k.id, `${k.prefix}…`, k.created_at, keyState(k)]);
  for (const line of table(['ID', 'PREFIX', 'CREATED', 'STATE'], rows)) io.out(line);
}

export async function keysRevoke(
  accounts: AccountStore,
  io: Output,
  keyId: string,
  accountId: string | undefined,
): Promise<void> {
  const account = await resolveAccount(accounts, accountId);
  if (!(await accounts.revokeKey(account.id, keyId))) {
    const known = (await accounts.listKeys(account.id)).find((k) => k.id === keyId);
    throw new CliError(
      known
        ? `Key ${keyId} is already revoked`
        : `Account ${account.id} has no key ${keyId} (see: openline keys list${accountId ? ` --account ${accountId}` : ''})`,
    );
  }
  io.out(`Revoked key ${keyId} of account ${account.id}.`);
  const live = (await accounts.listKeys(account.id)).filter((k) => !k.revoked_at);
  if (live.length === 0) {
    io.err(
      `Note: account ${account.id} has no active key left; create one with: openline keys create --account ${account.id}`,
    );
  }
}

/** Reads a limit option: a whole number, or "default" (the server's setting) as null. */
function limitValue(option: string, value: string): number | null {
  if (value === 'default') return null;
  const n = Number(value);
  if (!(Number.isInteger(n) && n >= 0))
    throw new CliError(`--${option} must be a whole number (0: no limit) or "default"`);
  return n;
}

/** Sets an account's own limits, or back to the server's with "default". */
export async function accountsLimit(
  accounts: AccountStore,
  io: Output,
  options: { rate?: string | undefined; concurrent?: string | undefined },
  accountId: string | undefined,
): Promise<void> {
  const account = await resolveAccount(accounts, accountId);
  const limits: Parameters<AccountStore['setLimits']>[1] = {};
  if (options.rate !== undefined) limits.rate_limit_per_minute = limitValue('rate', options.rate);
  if (options.concurrent !== undefined) limits.max_concurrent_calls = limitValue('concurrent', options.concurrent);
  await accounts.setLimits(account.id, limits);
  const describe = (value: number | null | undefined, what: string, server: string) =>
    value === undefined
      ? []
      : [value === null ? `${what}: the server's (${server})` : `${what}: ${value === 0 ? 'no limit' : value}`];
  for (const line of [
    ...describe(limits.rate_limit_per_minute, 'requests a minute per API key', 'OPENLINE_RATE_LIMIT_PER_MINUTE'),
    ...describe(limits.max_concurrent_calls, 'calls at once', 'OPENLINE_MAX_CONCURRENT_CALLS'),
  ]) {
    io.out(`Account ${account.id}: ${line}`);
  }
}
