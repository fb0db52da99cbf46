import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScaledClock } from '../clock.js';
import { createTestApp, type TestApp } from './harness.js';
import { FakeOpenAi, fakeLlmConfig } from './fake-openai.js';

export interface PersonaApps {
  /** Calls run by the offline model. */
  offline: TestApp;
  /** Calls run by a language model: the fake OpenAI server `fake`. */
  llm: TestApp;
  fake: FakeOpenAi;
  close(): Promise<void>;
}

/**
 * Two sandbox apps (clock 25x, workers started) whose network also has the given persona files,
 * by file name: one on the offline model, one on a local OpenAI-compatible fake.
 */
export async function personaApps(files: Record<string, object>): Promise<PersonaApps> {
  const dir = mkdtempSync(join(tmpdir(), 'openline-personas-'));
  for (const [name, persona] of Object.entries(files)) writeFileSync(join(dir, name), JSON.stringify(persona));
  const env = { OPENLINE_SANDBOX_PERSONAS: dir };
  const fake = await FakeOpenAi.start();
  const offline = await createTestApp({ clock: new ScaledClock(25), env });
  const llm = await createTestApp({ clock: new ScaledClock(25), env, config: { llm: fakeLlmConfig(fake, 2000) } });
  await offline.services.startWorkers();
  await llm.services.startWorkers();
  return {
    offline,
    llm,
    fake,
    async close() {
      await offline.close();
      await llm.close();
      await fake.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A finished call's transcript as "user: text" lines. */
export function transcriptText(call: Record<string, unknown>): string {
  return (call.transcripts as { user: string; text: string }[]).map((x) => `${x.user}: ${x.text}`).join('\n');
}
