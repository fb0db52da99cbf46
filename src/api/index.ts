import type { Api } from './types.js';
import type { Services } from '../services.js';
import calls, { registerLogsAlias } from './calls.js';
import tools from './tools.js';
import knowledge from './knowledge.js';
import knowledgeGaps from './knowledge-gaps.js';
import personas from './personas.js';
import secrets from './secrets.js';
import agents from './agents.js';
import voices from './voices.js';
import inbound, { registerInboundLabelRoute } from './inbound.js';
import pathwayFolders from './pathway-folders.js';
import campaigns from './campaigns.js';
import pathways, { pathwayChatRoutes, registerOlderPathwayRoutes } from './pathways.js';
import sms, { registerA2PAlias } from './sms.js';
import accounts from './accounts.js';
import sandbox from './sandbox.js';
import webhooks from './webhooks.js';
import batches from './batches.js';
import blocked from './blocked.js';
import { authorizeRoutes } from './web-calls.js';
import { listenRoutes } from './listen.js';
import smsConversations from './sms-conversations.js';
import agentTesting from './agent-testing.js';
import simulations from './simulations.js';
import citationSchemas from './citation-schemas.js';
import mcp from './mcp.js';

export type RouteModule = (app: Api, services: Services) => Promise<void>;

/** One module per resource, each registered under /v1 and /api/v1. */
export const API_ROUTES: RouteModule[] = [
  calls,
  tools,
  knowledge,
  knowledgeGaps,
  personas,
  secrets,
  agents,
  voices,
  inbound,
  campaigns,
  pathwayFolders,
  pathways,
  pathwayChatRoutes,
  sms,
  accounts,
  sandbox,
  webhooks,
  batches,
  blocked,
  authorizeRoutes,
  listenRoutes,
  smsConversations,
  agentTesting,
  simulations,
  citationSchemas,
  mcp,
];

/** Routes outside the /v1 prefix. */
export async function registerTopLevelAliases(app: Api, services: Services): Promise<void> {
  await registerA2PAlias(app, services);
  await registerLogsAlias(app, services);
  await registerOlderPathwayRoutes(app, services);
  await registerInboundLabelRoute(app, services);
}
