import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { FakeOpenAi, fakeLlmConfig, type FakeReply } from '../../src/testing/fake-openai.js';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';

type Json = { [k: string]: unknown };
interface Turn {
  llm_ms: number;
  llm_first_token_ms: number | null;
  total_ms: number;
}

/** How long the fake model takes from its first token to the end of its reply. */
const STREAM_MS = 400;

describe('per-turn latency of an audio call answered by a language model', () => {
  let fake: FakeOpenAi;
  let t: TestApp;
  let dataDir: string;
  before(async () => {
    fake = await FakeOpenAi.start();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-llm-latency-'));
    t = await createTestApp({
      clock: new ScaledClock(4),
      env: { OPENLINE_SANDBOX_AUDIO: '1', DATA_DIR: dataDir },
      config: { llm: fakeLlmConfig(fake, 10_000) },
    });
    await t.services.startWorkers();
  });
  after(async () => {
    await t.close();
    await fake.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('records the first token apart from the whole reply', async () => {
    fake.handler = (r): FakeReply =>
      r.body.messages.some((m) => m.role === 'assistant')
        ? {
            text: 'Wonderful. We will see you tomorrow at three, and we will send you a reminder. Goodbye.',
            toolCalls: [{ name: 'end_call' }],
            streamMs: STREAM_MS,
          }
        : { text: 'Hi, this is the dental office calling to confirm your appointment tomorrow. Does that work?' };
    const r = await t.request('POST', '/v1/calls', {
      phone_number: '+14155550100',
      task: 'Confirm the dentist appointment for tomorrow.',
      // The person's "Hello?" first, then the greeting's question and their answer: a measured turn.
      wait_for_greeting: true,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const call = await waitForCall(t, String(r.body.call_id));
    const latency = call.latency as { turns: Turn[]; summary: Json } | null;
    assert.ok(latency && latency.turns.length >= 1, JSON.stringify(call.transcripts));
    const turn = latency.turns[0]!;
    assert.notEqual(turn.llm_first_token_ms, null);
    const first = turn.llm_first_token_ms!;
    assert.ok(first >= 0 && first <= turn.llm_ms, JSON.stringify(turn));
    // The answer to "Yes, that works for me." is streamed: it is heard from its first sentence
    // ("Wonderful.") on, long before the model has written the rest (STREAM_MS after its first token).
    const answer = latency.turns.at(-1)!;
    assert.ok(latency.turns.length >= 2, JSON.stringify(latency.turns));
    assert.ok(answer.llm_ms - answer.llm_first_token_ms! < STREAM_MS / 2, JSON.stringify(answer));
    for (const t of latency.turns)
      assert.ok(t.llm_first_token_ms !== null && t.llm_first_token_ms <= t.llm_ms, JSON.stringify(t));
    const firsts = latency.turns.map((t) => t.llm_first_token_ms!).sort((a, b) => a - b);
    const mid = firsts.length >> 1;
    const median = firsts.length % 2 ? firsts[mid]! : Math.round(((firsts[mid - 1]! + firsts[mid]!) / 2) * 10) / 10;
    assert.equal(latency.summary.llm_first_token_ms_p50, median);
  });
});
