import type { Api } from './types.js';
import type { Services } from '../services.js';

export default async function routes(app: Api, services: Services): Promise<void> {
  void app;
  void services;
}
