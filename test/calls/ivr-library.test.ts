import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { FakeOpenAi, fakeLlmConfig } from '../../src/testing/fake-openai.js';
import { LIBRARY, fakeMenuModel, runMenuCase, type MenuCase, type MenuRun } from '../../bench/ivr/library.js';

const label = (c: MenuCase) => `555-${c.number} (${c.set}) ${c.what}`;

function check(run: MenuRun): void {
  const why = `keys pressed "${run.keys}", said ${JSON.stringify(run.said)}\n${run.transcript}`;
  assert.equal(run.keys, run.case.keys, `the keys to the department, and no other\n${why}`);
  assert.equal(run.wrongKeys, 0, why);
  if (run.case.says)
    assert.ok(
      run.said.some((s) => run.case.says!.test(s)),
      why,
    );
  assert.ok(run.reached, `the department the task needs answered\n${why}`);
}

/**
 * Every menu of the library, through the public API on the sandbox, in text mode: the agent
 * reaches the department its task needs and presses no key off that path.
 */
describe('phone menu library (text mode): the offline model reaches every department', () => {
  let t: TestApp;
  const runs = new Map<MenuCase, Promise<MenuRun>>();
  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(10) });
    await t.services.startWorkers();
    // The calls run at the same time: each is a minute or two of call time.
    for (const c of LIBRARY) runs.set(c, runMenuCase(t, c));
  });
  after(() => t.close());

  for (const c of LIBRARY) it(label(c), async () => check(await runs.get(c)!));

  it('an account number the call does not have: the agent says so, and presses nothing', async () => {
    const run = await runMenuCase(t, { ...LIBRARY[0]!, request_data: {}, keys: '' });
    assert.equal(run.keys, '1', run.transcript);
    assert.match(run.transcript, /assistant: I'm sorry, I don't have the prescription number\./);
  });
});

describe('phone menu library (text mode): an OpenAI-compatible model chooses with one tool call', () => {
  let t: TestApp;
  let fake: FakeOpenAi;
  const runs = new Map<MenuCase, Promise<MenuRun>>();
  before(async () => {
    fake = await FakeOpenAi.start();
    fake.handler = fakeMenuModel;
    t = await createTestApp({ clock: new ScaledClock(10), config: { llm: fakeLlmConfig(fake, 10_000) } });
    await t.services.startWorkers();
    for (const c of LIBRARY) runs.set(c, runMenuCase(t, c, { model: 'base' }));
  });
  after(async () => {
    await t.close();
    await fake.close();
  });

  for (const c of LIBRARY) it(label(c), async () => check(await runs.get(c)!));

  it('the model is asked once per menu, with the parsed options as the only choices', async () => {
    await Promise.all(runs.values());
    const asked = fake.requests.filter((r) => r.body.tools?.some((x) => x.function.name === 'choose_menu_option'));
    assert.ok(asked.length >= LIBRARY.length, String(asked.length));
    for (const request of asked) {
      assert.equal(request.body.tools!.length, 1, 'one tool: the choice');
      const choices = (request.body.tools![0]!.function.parameters as { properties: { option: { enum: string[] } } })
        .properties.option.enum;
      assert.equal(choices.at(-1), 'none');
      assert.match(String(request.body.messages[0]!.content), /Your task:/);
    }
  });
});

describe('phone menu library (text mode): a model that names a key the menu did not offer', () => {
  let t: TestApp;
  let fake: FakeOpenAi;
  before(async () => {
    fake = await FakeOpenAi.start();
    fake.handler = (request) =>
      request.body.tools?.some((x) => x.function.name === 'choose_menu_option')
        ? { toolCalls: [{ name: 'choose_menu_option', arguments: { option: '7' } }] }
        : fakeMenuModel(request);
    t = await createTestApp({ clock: new ScaledClock(10), config: { llm: fakeLlmConfig(fake, 10_000) } });
    await t.services.startWorkers();
  });
  after(async () => {
    await t.close();
    await fake.close();
  });

  it('presses nothing, notes it, and waits for the person after the hold', async () => {
    const run = await runMenuCase(
      t,
      LIBRARY.find((c) => c.number === '0169')!,
      { model: 'base' },
    );
    assert.equal(run.keys, '', run.transcript);
    assert.match(run.transcript, /the model chose "7", which the menu did not offer; nothing pressed/);
    assert.ok(run.reached, run.transcript);
  });
});

describe('phone menu library (text mode): a slow model that chooses while the menu starts over', () => {
  let t: TestApp;
  let fake: FakeOpenAi;
  before(async () => {
    fake = await FakeOpenAi.start();
    // The choice comes about ten seconds of call time after the menu ended: the menu is saying
    // its options again by then.
    fake.handler = (request) => {
      const reply = fakeMenuModel(request);
      return request.body.tools?.some((x) => x.function.name === 'choose_menu_option')
        ? { ...reply, chunkSize: 1, streamMs: 1000 }
        : reply;
    };
    t = await createTestApp({ clock: new ScaledClock(10), config: { llm: fakeLlmConfig(fake, 10_000) } });
    await t.services.startWorkers();
  });
  after(async () => {
    await t.close();
    await fake.close();
  });

  it('presses one key, once, and the repeat is not chosen from again', async () => {
    const run = await runMenuCase(
      t,
      LIBRARY.find((c) => c.number === '0161')!,
      { model: 'base' },
    );
    check(run);
    assert.equal((run.transcript.match(/agent-action: Pressed buttons/g) ?? []).length, 1, run.transcript);
  });
});

describe('phone menu library (audio mode): keys as in-band tones the menu hears', () => {
  let t: TestApp;
  let dataDir: string;
  const cases = LIBRARY.filter((c) => ['0160', '0163', '0164'].includes(c.number));
  const runs = new Map<MenuCase, Promise<MenuRun>>();
  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-ivr-audio-'));
    t = await createTestApp({ clock: new ScaledClock(4), env: { OPENLINE_SANDBOX_AUDIO: '1', DATA_DIR: dataDir } });
    await t.services.startWorkers();
    for (const c of cases) runs.set(c, runMenuCase(t, c));
  });
  after(async () => {
    await t.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  for (const c of cases) it(label(c), async () => check(await runs.get(c)!));
});
