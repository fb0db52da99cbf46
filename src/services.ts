import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.js';
import { systemClock, type Clock } from './clock.js';
import { migrate, openStorage, ping, type Storage } from './store/db.js';
import { loadMasterKey, SecretBox } from './security/secrets.js';
import { AccountStore } from './store/accounts.js';
import { CredentialStore } from './store/credentials.js';
import { CallStore } from './store/calls.js';
import { ToolStore } from './store/tools.js';
import { AgentStore } from './store/agents.js';
import { InboundStore } from './store/inbound.js';
import { CampaignStore } from './store/campaigns.js';
import { PathwayStore } from './store/pathways.js';
import { A2pStore } from './store/a2p.js';
import type { JobQueue } from './jobs/queue.js';
import { SqlJobQueue } from './jobs/sql-queue.js';

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
  agents: AgentStore;
  inbound: InboundStore;
  campaigns: CampaignStore;
  pathways: PathwayStore;
  a2p: A2pStore;
  /** Storage and queue reachable (GET /readyz). */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export interface BuildOptions {
  clock?: Clock;
  logger?: FastifyBaseLogger;
}

/** Opens storage, migrates it, and wires every store and the job queue. */
export async function buildServices(config: Config, options: BuildOptions = {}): Promise<Services> {
  const clock = options.clock ?? systemClock;
  const storage = await openStorage(config);
  await migrate(storage);
  const secrets = new SecretBox(loadMasterKey(config));
  const { db } = storage;
  const queue = new SqlJobQueue(db, clock, storage.dialect, options.logger);
  return {
    config,
    clock,
    storage,
    secrets,
    queue,
    accounts: new AccountStore(db, secrets, clock),
    credentials: new CredentialStore(db, secrets, clock),
    calls: new CallStore(db, clock),
    tools: new ToolStore(db, clock),
    agents: new AgentStore(db, clock),
    inbound: new InboundStore(db, clock),
    campaigns: new CampaignStore(db, clock),
    pathways: new PathwayStore(db, clock),
    a2p: new A2pStore(db, clock),
    async ready() {
      await ping(storage);
      await queue.ping();
    },
    async close() {
      await queue.stop();
      await storage.close();
    },
  };
}
