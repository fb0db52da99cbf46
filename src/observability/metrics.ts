import { timingSafeEqual } from 'node:crypto';
import client from 'prom-client';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../store/types.js';
import type { JobQueue } from '../jobs/queue.js';
import { JOB_POLICY, type JobName } from '../jobs/catalog.js';
import type { TurnLatency } from '../media/latency.js';
import { ApiError } from '../errors.js';

/** What the gauges read when Prometheus scrapes. */
export interface MetricSources {
  db: Kysely<Database>;
  queue: JobQueue;
  /** Live calls in this process. */
  liveCalls(): number;
}

const SECONDS = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10];

/**
 * The server's Prometheus metrics (GET /metrics), on a registry of its own: calls by state and
 * carrier, live calls, the job queue's depth and job run times, per-turn latency, webhook
 * deliveries, provider errors, HTTP requests by route and status, and Node's own (event-loop
 * delay, heap, CPU).
 */
export class Metrics {
  readonly registry = new client.Registry();
  private readonly http: client.Histogram<'method' | 'route' | 'status'>;
  private readonly turn: client.Histogram<'stage'>;
  private readonly jobs: client.Histogram<'job' | 'outcome'>;
  private readonly deliveries: client.Counter<'outcome'>;
  private readonly providerErrors: client.Counter<'provider' | 'kind'>;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    this.http = new client.Histogram({
      name: 'openline_http_request_duration_seconds',
      help: 'HTTP requests by route (the route pattern, not the path) and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.turn = new client.Histogram({
      name: 'openline_turn_latency_seconds',
      help:
        'Per-turn latency of audio calls by stage: voice_to_voice (end of the caller speech to the first ' +
        'agent audio), stt, llm_first_token, llm (reply ready), tts_first_audio',
      labelNames: ['stage'],
      buckets: SECONDS,
      registers,
    });
    this.jobs = new client.Histogram({
      name: 'openline_job_duration_seconds',
      help: 'How long jobs of the queue ran, by job and outcome',
      labelNames: ['job', 'outcome'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600],
      registers,
    });
    this.deliveries = new client.Counter({
      name: 'openline_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome (delivered, failed)',
      labelNames: ['outcome'],
      registers,
    });
    this.providerErrors = new client.Counter({
      name: 'openline_provider_errors_total',
      help: 'Failed requests to language, speech-to-text and text-to-speech providers',
      labelNames: ['provider', 'kind'],
      registers,
    });
    new client.Gauge({
      name: 'openline_calls',
      help: 'Calls stored, by queue_status and carrier (every process of the database)',
      labelNames: ['state', 'carrier'],
      registers,
      async collect() {
        const rows = await sources.db
          .selectFrom('calls')
          .select(['queue_status', 'carrier', (eb) => eb.fn.countAll<number | string>().as('count')])
          .groupBy(['queue_status', 'carrier'])
          .execute();
        this.reset();
        for (const r of rows) this.set({ state: r.queue_status, carrier: r.carrier }, Number(r.count));
      },
    });
    new client.Gauge({
      name: 'openline_live_calls',
      help: 'Calls this process is running now',
      registers,
      collect() {
        this.set(sources.liveCalls());
      },
    });
    new client.Gauge({
      name: 'openline_jobs_pending',
      help: 'Jobs waiting to run (due or scheduled), by job',
      labelNames: ['job'],
      registers,
      async collect() {
        const pending = await sources.queue.pending();
        for (const job of Object.keys(JOB_POLICY)) this.set({ job }, pending[job as JobName] ?? 0);
      },
    });
  }

  private processMetrics = false;

  /**
   * Node's own metrics (event-loop delay, heap, CPU, handles). Started by the server, or by the
   * first scrape: each set samples the event loop for good, so the many services a test suite
   * builds do not each start one.
   */
  enableProcessMetrics(): void {
    if (this.processMetrics) return;
    this.processMetrics = true;
    client.collectDefaultMetrics({ register: this.registry, prefix: 'openline_', eventLoopMonitoringPrecision: 10 });
  }

  /** The text Prometheus scrapes. */
  async scrape(): Promise<string> {
    this.enableProcessMetrics();
    return this.registry.metrics();
  }

  /** Records one answered turn of an audio call. */
  observeTurn(entry: TurnLatency): void {
    const ms: [string, number | null][] = [
      ['voice_to_voice', entry.total_ms],
      ['stt', entry.stt_ms],
      ['llm_first_token', entry.llm_first_token_ms],
      ['llm', entry.llm_ms],
      ['tts_first_audio', entry.tts_ms],
    ];
    for (const [stage, value] of ms) if (value !== null) this.turn.observe({ stage }, value / 1000);
  }

  /** Wraps a job handler so that its run time and outcome are recorded. */
  timeJob<A extends unknown[], R>(job: string, handler: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
    return async (...args: A) => {
      const end = this.jobs.startTimer({ job });
      try {
        const result = await handler(...args);
        end({ outcome: 'done' });
        return result;
      } catch (error) {
        end({ outcome: 'failed' });
        throw error;
      }
    };
  }

  webhookDelivered(ok: boolean): void {
    this.deliveries.inc({ outcome: ok ? 'delivered' : 'failed' });
  }

  providerError(provider: string, kind: string): void {
    this.providerErrors.inc({ provider, kind });
  }

  /** Times every HTTP request of `app` by its route pattern (never the path: ids would explode it). */
  instrument(app: FastifyInstance): void {
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      this.http.observe({ method: request.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
      done();
    });
  }
}

function loopback(address: string | undefined): boolean {
  return address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1';
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * GET /metrics in Prometheus' text format. With OPENLINE_METRICS_TOKEN set it needs
 * `authorization: Bearer <token>`; without one it answers only on loopback (the socket's own
 * address, never a forwarded one), so metrics stay off-host unless asked for.
 */
export function metricsRoute(app: FastifyInstance, metrics: Metrics, token: string | undefined): void {
  app.get('/metrics', { schema: { hide: true } }, async (request: FastifyRequest, reply: FastifyReply) => {
    const header = request.headers.authorization ?? '';
    const given = header.replace(/^bearer\s+/i, '');
    const allowed = token ? sameSecret(given, token) : loopback(request.socket.remoteAddress);
    if (!allowed) {
      throw token
        ? new ApiError(
            'UNAUTHORIZED',
            'GET /metrics needs the metrics token (OPENLINE_METRICS_TOKEN) as a bearer token',
          )
        : new ApiError(
            'FORBIDDEN',
            'GET /metrics answers on loopback only; set OPENLINE_METRICS_TOKEN to scrape it from elsewhere',
          );
    }
    return reply.type(metrics.registry.contentType).send(await metrics.scrape());
  });
}
