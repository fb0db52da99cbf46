import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freeTcpPort } from '../../src/testing/ports.js';

const KEY = 'restart-test-key-0123456789';

/** The real server in its own process, as `npm start` runs it, 100x faster than real time. */
class Server {
  child: ChildProcess | undefined;
  constructor(
    readonly dataDir: string,
    readonly port: number,
    readonly personaDir: string,
  ) {}

  async start(env: Record<string, string> = {}): Promise<void> {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: {
        ...process.env,
        PORT: String(this.port),
        HOST: '127.0.0.1',
        DATA_DIR: this.dataDir,
        OPENLINE_API_KEY: KEY,
        OPENLINE_TIME_SCALE: '100',
        OPENLINE_SANDBOX_PERSONAS: this.personaDir,
        LOG_LEVEL: 'info',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('Openline ready')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
    });
  }

  /** kill -9: no shutdown of any kind. */
  async crash(): Promise<void> {
    const child = this.child!;
    child.kill('SIGKILL');
    if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
  }

  async stop(): Promise<void> {
    if (this.child && this.child.exitCode === null) {
      this.child.kill('SIGTERM');
      await new Promise((resolve) => this.child!.once('exit', resolve));
    }
  }

  async request(method: string, url: string, body?: unknown): Promise<Record<string, unknown>> {
    const response = await fetch(`http://127.0.0.1:${this.port}${url}`, {
      method,
      headers: { authorization: KEY, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return (await response.json()) as Record<string, unknown>;
  }

  async until(id: string, done: (call: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
    for (let i = 0; i < 400; i++) {
      const call = await this.request('GET', `/v1/calls/${id}`);
      if (done(call)) return call;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`call ${id} never reached the expected state`);
  }
}

describe('restart recovery (a real server process killed with SIGKILL)', () => {
  let server: Server;
  let dir: string;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-restart-'));
    const personas = path.join(dir, 'personas');
    fs.mkdirSync(personas);
    // Keeps a call going until it is hung up on.
    fs.writeFileSync(
      path.join(personas, 'asker.json'),
      JSON.stringify({
        id: 'asker',
        number: '0190',
        name: 'Keeps asking',
        description: 'Asks who is calling after everything the agent says.',
        ring: { kind: 'answer', afterMs: 1000 },
        start: 'ask',
        states: {
          ask: [
            { say: 'Hello, who is this?' },
            { listen: { timeoutMs: 30000, on: [{ any: true, do: [{ goto: 'ask' }] }], timeout: [{ goto: 'ask' }] } },
          ],
        },
      }),
    );
    server = new Server(path.join(dir, 'data'), await freeTcpPort(), personas);
  });
  after(async () => {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('queued and scheduled calls still run, and a call live at the crash ends as call_error', async () => {
    // 1. Without workers: a call accepted but never dialed before the crash.
    await server.start({ OPENLINE_WORKERS: 'false' });
    const queued = String(
      (await server.request('POST', '/v1/calls', { phone_number: '+14155550107', task: 'Say hi.' })).call_id,
    );
    await server.crash();

    // 2. Restarted with workers: the queued call is dialed. Then a live call and a scheduled one
    // are under way when the process dies again.
    await server.start();
    const first = await server.until(queued, (c) => c.completed === true);
    assert.equal(first.queue_status, 'complete');
    assert.ok((first.transcripts as unknown[]).length > 0);
    const live = String(
      (await server.request('POST', '/v1/calls', { phone_number: '+14155550190', task: 'Answer questions.' })).call_id,
    );
    // Ten minutes of the server's clock, which runs 100 times faster: 6 s from now. Counted from
    // the server's own time (the live call's created_at), which is ahead of this process's by 99
    // times how long the server has run.
    const createdAt = String((await server.request('GET', `/v1/calls/${live}`)).created_at);
    const soon = new Date(Date.parse(createdAt) + 10 * 60_000).toISOString();
    const scheduled = String(
      (await server.request('POST', '/v1/calls', { phone_number: '+14155550107', task: 'Say hi.', start_time: soon }))
        .call_id,
    );
    await server.until(live, (c) => c.queue_status === 'started');
    assert.equal((await server.request('GET', `/v1/calls/${scheduled}`)).queue_status, 'queued');
    await server.crash();

    // 3. Restarted again: the live call is closed as an error, the scheduled one still runs at its time.
    await server.start();
    const interrupted = await server.until(live, (c) => c.queue_status !== 'started');
    assert.equal(interrupted.queue_status, 'call_error');
    assert.match(String(interrupted.error_message), /server running it stopped/);
    const later = await server.until(scheduled, (c) => c.completed === true);
    assert.equal(later.queue_status, 'complete');
  });
});
