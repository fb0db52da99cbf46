import type { Clock } from '../clock.js';
import type { StoredDynamicDataItem } from '../schemas/call.js';
import { renderTemplate } from '../domain/template.js';
import type { OutboundClient } from '../outbound/http.js';
import { jsonPath, renderValue } from './tools.js';
import { errorMessage } from '../domain/records.js';

/** Clock time between two fetches of a `cache: false` item while the call runs. */
export const DYNAMIC_REFRESH_MS = 30_000;
/** dynamic_data requests wait less than tools: the call is about to start (or running). */
const FETCH_TIMEOUT_MS = 5_000;

export interface DynamicDataLog {
  warn(object: object, message: string): void;
}

type Json = Record<string, unknown>;

/**
 * A call's dynamic_data (seed 2.2): every item is fetched through the guarded client at call
 * start, its `response_data` paths become variables and its `context` lines become the agent's
 * knowledge; items with `cache: false` are fetched again every DYNAMIC_REFRESH_MS of clock time
 * during the call. `variables` and `knowledge` are the call's own objects, updated in place, so
 * the agent sees fresh values on its next turn. A failure is logged and never ends the call.
 */
export class DynamicData {
  /** One line per item and response_data entry with a context, in request order. */
  readonly knowledge: string[] = [];
  private readonly lines = new Map<string, string>();

  constructor(
    private readonly items: readonly StoredDynamicDataItem[],
    private readonly variables: Json,
    private readonly http: OutboundClient | undefined,
    private readonly o: {
      callId: string;
      log?: DynamicDataLog;
      /** The variables an item's request is rendered over (the call's, plus the secrets it names). */
      scope?(item: StoredDynamicDataItem, variables: Json): Promise<Json>;
    } = { callId: '' },
  ) {}

  /** Fetches every item once (call start); items are fetched in parallel. */
  async load(): Promise<void> {
    await Promise.all(this.items.map((item, i) => this.fetch(item, i)));
  }

  /** Starts re-fetching the `cache: false` items; returns the function that stops it. */
  refresh(clock: Clock): () => void {
    const live = this.items.map((item, i) => ({ item, i })).filter(({ item }) => !item.cache);
    if (live.length === 0) return () => {};
    let cancel = () => {};
    let stopped = false;
    const tick = () => {
      void Promise.all(live.map(({ item, i }) => this.fetch(item, i))).finally(() => {
        if (!stopped) cancel = clock.setTimer(tick, DYNAMIC_REFRESH_MS);
      });
    };
    cancel = clock.setTimer(tick, DYNAMIC_REFRESH_MS);
    return () => {
      stopped = true;
      cancel();
    };
  }

  private async fetch(item: StoredDynamicDataItem, index: number): Promise<void> {
    if (!this.http) return;
    try {
      // {{from}}, {{to}}, {{short_from}}, {{short_to}}, {{call_id}}, every other call variable and
      // the secrets the item names.
      const scope = this.o.scope ? await this.o.scope(item, this.variables) : this.variables;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(item.headers ?? {})) {
        const value = renderValue(v, scope);
        headers[k] = typeof value === 'string' ? value : JSON.stringify(value);
      }
      let body: string | undefined;
      if (item.method === 'POST' && item.body !== undefined) {
        body = JSON.stringify(renderValue(item.body, scope));
        if (!Object.keys(headers).some((k) => k.toLowerCase() === 'content-type'))
          headers['content-type'] = 'application/json';
      }
      const response = await this.http.request({
        method: item.method,
        url: renderTemplate(item.url, scope),
        headers,
        ...(body !== undefined && { body }),
        timeoutMs: FETCH_TIMEOUT_MS,
      });
      if (response.status < 200 || response.status >= 300) throw new Error(`HTTP ${response.status}`);
      const parsed: unknown = JSON.parse(response.body);
      item.response_data.forEach((rule, j) => {
        const value = jsonPath(parsed, rule.data);
        if (value === undefined) return;
        this.variables[rule.name] = value;
        if (rule.context) this.lines.set(`${index}.${j}`, renderTemplate(rule.context, this.variables));
      });
      // Rebuilt in place (the agent holds this array) and in a stable order.
      const ordered = [...this.lines.entries()]
        .sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }))
        .map(([, line]) => line);
      this.knowledge.splice(0, this.knowledge.length, ...ordered);
    } catch (error) {
      this.o.log?.warn(
        { call_id: this.o.callId, dynamic_data: index, err: errorMessage(error) },
        'dynamic_data fetch failed; the call goes on without it',
      );
    }
  }
}
