import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { FakeOpenAi, fakeLlmConfig } from '../../src/testing/fake-openai.js';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { startTracing, type Tracing } from '../../src/observability/tracing.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
}

/** A local OTLP/HTTP receiver: what the exporter posts to /v1/traces, as JSON. */
async function otlpReceiver(): Promise<{ url: string; spans: OtlpSpan[]; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as {
          resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
        };
        for (const r of body.resourceSpans) for (const s of r.scopeSpans) spans.push(...s.spans);
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const attribute = (span: OtlpSpan, key: string) => span.attributes.find((a) => a.key === key)?.value.stringValue;

describe('OpenTelemetry traces (OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  let t: TestApp;
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
  let tracing: Tracing | undefined;
  before(async () => {
    receiver = await otlpReceiver();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    tracing = await startTracing();
    t = await createTestApp({ clock: new ScaledClock(20) });
    await t.services.startWorkers();
  });
  after(async () => {
    await t.close();
    await tracing?.shutdown();
    await receiver.close();
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  });

  it('is off without the endpoint', async () => {
    assert.equal(await startTracing({}), undefined);
  });

  it('sends a span per call, whose trace id is on the call record', async () => {
    assert.ok(tracing, 'tracing started');
    const r = await t.request('POST', '/v1/calls', { phone_number: '+14155550107', task: 'Say hello.' });
    assert.equal(r.status, 200);
    const callId = String(r.body.call_id);
    const call = await waitForCall(t, callId);
    await tracing.flush();
    const span = receiver.spans.find((s) => s.name === 'call' && attribute(s, 'openline.call.id') === callId);
    assert.ok(span, `spans received: ${receiver.spans.map((s) => s.name).join(', ')}`);
    assert.equal(attribute(span, 'openline.call.direction'), 'outbound');
    assert.equal(call.trace_id, span.traceId);
    assert.match(String(call.trace_id), /^[0-9a-f]{32}$/);
    // The agent's turns, in the call's trace, under its span.
    const turns = receiver.spans.filter((s) => s.name === 'turn' && attribute(s, 'openline.call.id') === callId);
    assert.ok(turns.length >= 1, `spans received: ${receiver.spans.map((s) => s.name).join(', ')}`);
    for (const turn of turns) assert.equal(turn.traceId, span.traceId);
    assert.ok(turns.some((s) => s.parentSpanId === span.spanId));
  });

  it('sends a span per language-model request, named and described by the GenAI conventions, under its turn', async () => {
    assert.ok(tracing, 'tracing started');
    const fake = await FakeOpenAi.start();
    fake.handler = () => ({
      text: 'Hello! This is a reminder of your visit tomorrow. Goodbye.',
      toolCalls: [{ name: 'end_call' }],
    });
    const withModel = await createTestApp({ clock: new ScaledClock(20), config: { llm: fakeLlmConfig(fake, 10_000) } });
    try {
      await withModel.services.startWorkers();
      const r = await withModel.request('POST', '/v1/calls', { phone_number: '+14155550100', task: 'Remind them.' });
      const callId = String(r.body.call_id);
      await waitForCall(withModel, callId);
      await tracing.flush();
      const turns = receiver.spans.filter((s) => s.name === 'turn' && attribute(s, 'openline.call.id') === callId);
      const chats = receiver.spans.filter(
        (s) => s.name.startsWith('chat ') && turns.some((t) => t.spanId === s.parentSpanId),
      );
      assert.ok(chats.length >= 1, `spans received: ${receiver.spans.map((s) => s.name).join(', ')}`);
      assert.equal(attribute(chats[0]!, 'gen_ai.operation.name'), 'chat');
      assert.ok(attribute(chats[0]!, 'gen_ai.request.model'));
    } finally {
      await withModel.close();
      await fake.close();
    }
  });

  it('sends a span per speech provider request of an audio call: the recogniser opened, each sentence synthesised', async () => {
    assert.ok(tracing, 'tracing started');
    const r = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550107',
      task: 'Say hello.',
      metadata: { openline_sandbox_audio: true },
    });
    const callId = String(r.body.call_id);
    await waitForCall(t, callId);
    await tracing.flush();
    const mine = receiver.spans.filter((s) => attribute(s, 'openline.call.id') === callId);
    assert.ok(
      mine.some((s) => s.name === 'tts'),
      `spans received: ${mine.map((s) => s.name).join(', ')}`,
    );
    assert.ok(
      mine.some((s) => s.name === 'stt.open'),
      `spans received: ${mine.map((s) => s.name).join(', ')}`,
    );
  });
});
