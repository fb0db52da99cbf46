import type { Api } from './types.js';
import type { Services } from '../services.js';

export default async function routes(app: Api, services: Services): Promise<void> {
  void app;
  void services;
}

/** POST /api/registerA2PBrand: the seed's other name for POST /v1/sms/register. */
export async function registerA2PAlias(app: Api, services: Services): Promise<void> {
  void app;
  void services;
}
