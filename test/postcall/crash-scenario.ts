import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeOpenAi, type FakeReply, type RecordedRequest } from '../../src/testing/fake-openai.js';
import { freeTcpPort } from '../../src/testing/ports.js';
import { startServerProcess, type ServerProcess } from '../../src/testing/server-process.js';
import { waitFor } from '../../src/testing/wait.js';
import { createTestDatabase } from '../../src/testing/postgres.js';
import { startReceiver } from '../outbound/receiver.js';

const KEY = 'postcall-crash-key-0123456789';

const isSummary = (r: RecordedRequest) => r.body.messages.some((m) => /summarize phone calls/.test(String(m.content)));

/** The scenario, on one storage (the two storages run as two files: test/postcall/crash*.test.ts). */
export function crashSuite(storage: 'sqlite' | 'postgres'): void {
  describe(`post-call work survives kill -9 of the server (a real process, ${storage})`, () => {
    let dir: string;
    let fake: FakeOpenAi;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    let server: ServerProcess | undefined;
    let port: number;
    let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;

    /**
     * Starts the server on a port free a moment ago; another test's server may take that port
     * first (EADDRINUSE, the process exits before it is ready): then again on another.
     */
    const start = async (env: Record<string, string> = {}): Promise<ServerProcess> => {
      for (let attempt = 1; ; attempt++) {
        port = await freeTcpPort();
        try {
          return await startOn(env);
        } catch (error) {
          if (attempt === 3) throw error;
        }
      }
    };
    const startOn = (env: Record<string, string>) =>
      startServerProcess({
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: dir,
        OPENLINE_API_KEY: KEY,
        OPENLINE_TIME_SCALE: '50',
        OPENLINE_LLM_BASE_URL: fake.url,
        OPENAI_API_KEY: 'sk-test',
        OPENLINE_ALLOW_PRIVATE_URLS: '1',
        ...(database && { OPENLINE_DATABASE_URL: database.url }),
        ...env,
      });

    const api = async (method: string, route: string, body?: unknown) => {
      const res = await fetch(`http://127.0.0.1:${port}/v1${route}`, {
        method,
        headers: { authorization: KEY, ...(body !== undefined && { 'content-type': 'application/json' }) },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      return (await res.json()) as Record<string, unknown>;
    };

    before(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-postcall-crash-'));
      fake = await FakeOpenAi.start();
      receiver = await startReceiver();
      if (storage === 'postgres') database = await createTestDatabase();
    });
    after(async () => {
      server?.child.kill('SIGKILL');
      await receiver.close();
      await fake.close();
      await database?.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('a call whose summary was under way when the process died gets its summary and its webhook after the restart', async () => {
      // The agent talks; the summary model never answers while the first process lives.
      let summaries: 'hang' | 'answer' = 'hang';
      fake.handler = (r): FakeReply => {
        if (isSummary(r))
          return summaries === 'hang'
            ? { hang: 'before-headers' }
            : { text: 'The agent confirmed the appointment and the person agreed.' };
        return r.body.messages.some((m) => m.role === 'assistant')
          ? { text: 'Thank you, goodbye!', toolCalls: [{ name: 'end_call' }] }
          : { text: 'Hello, I am calling to confirm your appointment tomorrow at three.' };
      };
      server = await start({ OPENLINE_LLM_TIMEOUT_MS: '600000' });
      const placed = await api('POST', '/calls', {
        phone_number: '+14155550100',
        task: 'Confirm the appointment tomorrow at 3pm.',
        webhook: `${receiver.url}/hook`,
      });
      const callId = String(placed.call_id);
      await waitFor('the summary request', () => fake.requests.some(isSummary), 60_000);
      const ended = await api('GET', `/calls/${callId}`);
      assert.equal(ended.completed, true, 'the call had ended when the process died');
      assert.equal(ended.summary, null);

      server.child.kill('SIGKILL');
      await new Promise((resolve) => server!.child.once('exit', resolve));
      assert.equal(receiver.received.length, 0, 'nothing was sent before the crash');

      summaries = 'answer';
      server = await start();
      // SQLite: the restarted process runs the job again at once. PostgreSQL: the job stays taken by
      // the dead process until it expires (60 s) and pg-boss's maintenance (every 10 s) frees it.
      const hook = await waitFor(
        'the end-of-call webhook',
        () => receiver.received.find((r) => r.url === '/hook'),
        storage === 'postgres' ? 100_000 : 60_000,
      );
      const body = JSON.parse(hook.body) as Record<string, unknown>;
      assert.equal(body.call_id, callId);
      assert.equal(body.summary, 'The agent confirmed the appointment and the person agreed.');
      assert.equal((await api('GET', `/calls/${callId}`)).summary, body.summary);
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal(receiver.received.filter((r) => r.url === '/hook').length, 1, 'one delivery');
    });
  });
}
