import { useQuery } from '@tanstack/react-query';
import type { PathwaySummary } from '../../src/schemas/pathway.js';
import { api } from './api';

/** The account's pathways (GET /v1/pathway), one cached query for every page that lists or names them. */
export function usePathways(enabled = true) {
  return useQuery({
    queryKey: ['pathways'],
    queryFn: () => api<{ pathways: PathwaySummary[] }>('/v1/pathway'),
    enabled,
  });
}
