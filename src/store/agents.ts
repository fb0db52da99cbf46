import type { Kysely } from 'kysely';
import type { Database } from './types.js';
import type { Clock } from '../clock.js';

export class AgentStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}
}
