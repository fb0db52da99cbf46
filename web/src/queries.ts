import { useQuery } from '@tanstack/react-query';
import type { PathwaySummary } from '../../src/schemas/pathway.js';
import { api, type Agent } from './api';

/** The account's pathways (GET /v1/pathway), one cached query for every page that lists or names them. */
export function usePathways(enabled = true) {
  return useQuery({
    queryKey: ['pathways'],
    queryFn: () => api<{ pathways: PathwaySummary[] }>('/v1/pathway'),
    enabled,
  });
}

/** The account's agents (GET /v1/agents), the same cached query as the Agents page's list. */
export function useAgents(enabled = true) {
  return useQuery({
    queryKey: ['Agents'],
    queryFn: async () => (await api<{ agents: Agent[] }>('/v1/agents')).agents,
    enabled,
  });
}
