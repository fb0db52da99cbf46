import { SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

/** The tracing of this process, once started. */
export interface Tracing {
  /** Sends the spans still buffered. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * OpenTelemetry traces to an OTLP/HTTP collector when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; nothing at all when not (the API's spans are then
 * no-ops). The exporter reads the standard OTEL_* variables itself (headers, timeout).
 */
export function startTracing(env: Record<string, string | undefined> = process.env): Tracing | undefined {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME || 'openline' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  return { flush: () => provider.forceFlush(), shutdown: () => provider.shutdown() };
}

const tracer = () => trace.getTracer('openline');

/**
 * Runs `work` in a span of its own (a child of the span active now): its failure is recorded on
 * the span, which ends when the work does.
 */
export async function inSpan<T>(name: string, attributes: Attributes, work: (span: Span) => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The trace id of the span active now, when tracing is on (for call records and log lines). */
export function currentTraceId(): string | undefined {
  const context = trace.getActiveSpan()?.spanContext();
  return context && trace.isSpanContextValid(context) ? context.traceId : undefined;
}
