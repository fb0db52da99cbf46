import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { systemClock } from '../clock.js';
import {
  CliError,
  accountsCreate,
  accountsLimit,
  accountsList,
  keysCreate,
  keysList,
  keysRevoke,
  type Output,
} from './commands.js';
import type { CampaignIo } from './campaign.js';
import { errorMessage } from '../domain/records.js';

// Each command loads what it needs when it runs (storage for accounts and keys, the campaign and
// test clients for theirs): a command line starts in a fraction of the time of loading them all.

/** The whole usage text (each command group's own part from its module). */
async function usage(): Promise<string> {
  const [{ CAMPAIGN_USAGE }, { TEST_USAGE }] = await Promise.all([import('./campaign.js'), import('./test.js')]);
  return `Usage: openline <command> [options]

Manages the accounts and API keys of an Openline server. Works directly on the server's storage
(DATA_DIR, default ./data, or OPENLINE_DATABASE_URL), so run it with the server's environment.
Campaign commands (below) talk to the running server instead.

Commands:
  accounts create [--name NAME]          Create an account; prints its first API key as the last line
  accounts list                          List accounts (the first one is the default account)
  accounts limit [--rate N|default] [--concurrent N|default] [--account ID]
                                         The account's own limits: requests a minute per API key
                                         (--rate) and calls at once (--concurrent; calls beyond it
                                         wait queued); default: the server's setting; 0: no limit
  keys create [--account ID]             Create an API key; prints it as the last line
  keys list [--account ID]               List API keys (prefixes only)
  keys revoke KEY_ID [--account ID]      Revoke an API key
  help                                   Show this help

--account defaults to the first account created.

${CAMPAIGN_USAGE}

${TEST_USAGE}`;
}

/** Wrong command line: the usage is shown and the exit code is 2. */
class UsageError extends Error {}

interface Parsed {
  command: string;
  args: string[];
  name: string | undefined;
  account: string | undefined;
  rate: string | undefined;
  concurrent: string | undefined;
  help: boolean;
}

function parse(argv: string[]): Parsed {
  let values: {
    name?: string | undefined;
    account?: string | undefined;
    rate?: string | undefined;
    concurrent?: string | undefined;
    help?: boolean | undefined;
  };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        name: { type: 'string' },
        account: { type: 'string' },
        rate: { type: 'string' },
        concurrent: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw new UsageError(errorMessage(error));
  }
  const command = positionals.slice(0, 2).join(' ');
  return {
    command,
    args: positionals.slice(2),
    name: values.name,
    account: values.account,
    rate: values.rate,
    concurrent: values.concurrent,
    help: values.help === true,
  };
}

/** Commands and what each accepts, so that a misplaced option is an error rather than ignored. */
const COMMANDS: Record<string, { args: number; options: ('name' | 'account' | 'rate' | 'concurrent')[] }> = {
  'accounts create': { args: 0, options: ['name'] },
  'accounts list': { args: 0, options: [] },
  'accounts limit': { args: 0, options: ['account', 'rate', 'concurrent'] },
  'keys create': { args: 0, options: ['account'] },
  'keys list': { args: 0, options: ['account'] },
  'keys revoke': { args: 1, options: ['account'] },
};

function checkUsage(p: Parsed): void {
  const spec = COMMANDS[p.command];
  if (!spec) {
    throw new UsageError(p.command ? `Unknown command: ${p.command}` : 'Missing command');
  }
  if (p.args.length < spec.args) throw new UsageError(`${p.command} needs a KEY_ID`);
  if (p.args.length > spec.args) throw new UsageError(`Unexpected argument: ${p.args[spec.args] ?? ''}`);
  if (p.command === 'accounts limit' && p.rate === undefined && p.concurrent === undefined) {
    throw new UsageError('accounts limit needs --rate or --concurrent');
  }
  for (const option of ['name', 'account', 'rate', 'concurrent'] as const) {
    if (p[option] !== undefined && !spec.options.includes(option)) {
      throw new UsageError(`${p.command} does not take --${option}`);
    }
    if (p[option] !== undefined && p[option].trim() === '') throw new UsageError(`--${option} must not be empty`);
  }
}

/** Where the data lives, for messages (never the database URL: it may hold a password). */
function describeStorage(config: Config): string {
  return config.databaseUrl ? 'PostgreSQL (OPENLINE_DATABASE_URL)' : path.join(config.dataDir, 'openline.db');
}

async function execute(p: Parsed, config: Config, io: Output): Promise<void> {
  // Run beside a server with another DATA_DIR, the command would make an empty database of its own.
  if (
    !config.databaseUrl &&
    config.dataDir !== ':memory:' &&
    !fs.existsSync(path.join(config.dataDir, 'openline.db'))
  ) {
    if (p.command !== 'accounts create') {
      throw new CliError(
        `no Openline database at ${describeStorage(config)}: run this with the server's DATA_DIR (or OPENLINE_DATABASE_URL)`,
      );
    }
    io.err(`openline: no database at ${describeStorage(config)} yet: creating one`);
  }
  const [{ migrate, openStorage }, { loadMasterKey, SecretBox }, { AccountStore }] = await Promise.all([
    import('../store/db.js'),
    import('../security/secrets.js'),
    import('../store/accounts.js'),
  ]);
  const storage = await openStorage(config);
  try {
    await migrate(storage);
    const accounts = new AccountStore(storage.db, new SecretBox(loadMasterKey(config)), systemClock);
    switch (p.command) {
      case 'accounts create':
        return await accountsCreate(accounts, io, { name: p.name ?? 'default', storage: describeStorage(config) });
      case 'accounts list':
        return await accountsList(accounts, io);
      case 'accounts limit':
        return await accountsLimit(accounts, io, { rate: p.rate, concurrent: p.concurrent }, p.account);
      case 'keys create':
        return await keysCreate(accounts, io, p.account);
      case 'keys list':
        return await keysList(accounts, io, p.account);
      case 'keys revoke':
        return await keysRevoke(accounts, io, p.args[0] ?? '', p.account);
    }
  } finally {
    await storage.close();
  }
}

const processOutput: CampaignIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  isTTY: process.stdout.isTTY === true,
};

/** Runs one command line; resolves to the exit code (0 done, 1 failed, 2 bad usage). */
export async function main(
  argv: string[],
  io: CampaignIo = processOutput,
  env: Record<string, string | undefined> = process.env,
): Promise<number> {
  if (argv[0] === 'campaign' && !argv.includes('--help') && !argv.includes('-h'))
    return campaign(argv.slice(1), io, env);
  if (argv[0] === 'test' && !argv.includes('--help') && !argv.includes('-h'))
    return (await import('./test.js')).testMain(argv.slice(1), io, env);
  let parsed: Parsed;
  try {
    parsed = parse(argv);
    if (argv.length === 0) {
      io.err(await usage());
      return 2;
    }
    if (parsed.help || parsed.command.split(' ')[0] === 'help') {
      io.out(await usage());
      return 0;
    }
    checkUsage(parsed);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.err(`openline: ${error.message}\n`);
    io.err(await usage());
    return 2;
  }
  try {
    await execute(parsed, loadConfig(env), io);
    return 0;
  } catch (error) {
    if (error instanceof ConfigError) {
      io.err(`openline: configuration error: ${error.message}`);
      return 1;
    }
    if (error instanceof CliError) {
      io.err(`openline: ${error.message}`);
      return 1;
    }
    io.err(`openline: failed: ${errorMessage(error)}`);
    return 1;
  }
}

/** `openline campaign ...`: a client of the running server (src/cli/campaign.ts). */
async function campaign(argv: string[], io: CampaignIo, env: Record<string, string | undefined>): Promise<number> {
  const { CAMPAIGN_USAGE, CampaignUsageError, campaignMain } = await import('./campaign.js');
  try {
    await campaignMain(argv, io, env);
    return 0;
  } catch (error) {
    if (error instanceof CampaignUsageError) {
      io.err(`openline: ${error.message}\n`);
      io.err(CAMPAIGN_USAGE);
      return 2;
    }
    io.err(`openline: ${error instanceof CliError ? error.message : `failed: ${errorMessage(error)}`}`);
    return 1;
  }
}
