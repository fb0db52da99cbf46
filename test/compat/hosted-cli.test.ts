import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { promisify, stripVTControlCharacters } from 'node:util';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { FakeOpenAi, fakeLlmConfig, type FakeReply } from '../../src/testing/fake-openai.js';

const run = promisify(execFile);

/** Runs the CLI against `origin` with `key`, in `home`; its output without colours. */
async function cliIn(env: { home: string; key: string; origin: string }, args: string[], cwd = env.home) {
  const { stdout, stderr } = await run(process.execPath, [CLI, ...args], {
    cwd,
    timeout: 240_000,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: env.home,
      XDG_CONFIG_HOME: path.join(env.home, '.config'),
      BLAND_API_KEY: env.key,
      BLAND_BASE_URL: env.origin,
      NO_COLOR: '1',
      FORCE_COLOR: '0',
      CI: '1',
    },
  });
  return stripVTControlCharacters(`${stdout}${stderr}`);
}
// The hosted API's own command-line client (npm bland-cli), pointed at Openline.
const CLI = path.join(path.dirname(createRequire(import.meta.url).resolve('bland-cli/package.json')), 'dist/index.js');

describe("the hosted API's own CLI (bland-cli) against Openline, over HTTP", () => {
  let t: TestApp;
  let origin = '';
  let home = '';

  /** Runs the CLI in `cwd` (the temporary home by default). */
  const cli = (args: string[], cwd = home): Promise<string> => cliIn({ home, key: t.key, origin }, args, cwd);

  before(async () => {
    t = await createTestApp({ clock: new ScaledClock(50) });
    await t.services.startWorkers();
    origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-cli-'));
  });
  after(async () => {
    await t.close();
    fs.rmSync(home, { recursive: true, force: true });
  });

  it('pushes a pathway project (global prompt and all), versions it, promotes it and pulls it back unchanged', async () => {
    await cli(['pathway', 'init', './support', '--name', 'Support']);
    const project = path.join(home, 'support');
    const created = await cli(['pathway', 'push', '--create', '.'], project);
    assert.match(created, /Created "Support" \(([0-9a-f-]{36})\) → v1/, created);
    const id = /pathway_id: (\S+)/.exec(fs.readFileSync(path.join(project, '.blandrc'), 'utf8'))![1]!;

    // The draft holds what was pushed, the global config entry first as the hosted API keeps it.
    const stored = (await t.request('GET', `/v1/convo_pathway/${id}`)).body;
    const nodes = stored.nodes as Array<Record<string, unknown>>;
    assert.equal(nodes.length, 4);
    assert.match(String((nodes[0]!.globalConfig as { globalPrompt: string }).globalPrompt), /Sound natural/);
    const edges = stored.edges as Array<{ label: string; data: { label: string } }>;
    assert.deepEqual(
      edges.map((e) => [e.label, e.data.label]),
      [
        ['Caller describes what they need', 'Caller describes what they need'],
        ["Caller's request is resolved", "Caller's request is resolved"],
      ],
    );

    // A second push updates the draft version in place; promote saves and publishes the next one.
    const file = path.join(project, 'bland-pathway.yaml');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('Help the caller', 'Kindly help the caller'));
    assert.match(await cli(['pathway', 'push', '.'], project), /Updated "Support" .* v1/);
    assert.match(await cli(['pathway', 'promote', id, '--yes']), /Published to production \(v2\)/);
    // The project's test cases, each a chat with the pathway.
    assert.match(await cli(['pathway', 'test', id], project), /1\/1 passed/);
    const versions = await cli(['pathway', 'versions', id]);
    assert.match(versions, /v1\s+Support\s+draft/);
    assert.match(versions, /v2\s+Support\s+production/);
    const live = (await t.request('GET', `/v1/pathway/${id}/version/0`)).body;
    assert.equal(live.version_number, 2);
    assert.match(JSON.stringify(live.nodes), /Kindly help the caller/);

    // Pulled back, it is the file pushed: every node the same (the template's global voice and
    // model are the CLI's own settings, not part of what it sends).
    const pulled = path.join(home, 'pulled');
    assert.match(await cli(['pathway', 'pull', id, pulled]), /Pulled "Support"/);
    const text = fs.readFileSync(path.join(pulled, 'bland-pathway.yaml'), 'utf8');
    assert.match(text, /global:\n\s+prompt: >-?\n\s+Sound natural/);
    assert.match(text, /label: Caller describes what they need/);
    const diff = await cli(['pathway', 'diff', '.'], project);
    assert.doesNotMatch(diff, /Node "/, diff);

    // Folders.
    assert.match(
      await cli(['pathway', 'folder', 'create', 'Support flows']),
      /Folder "Support flows" created \([0-9a-f-]{36}\)/,
    );
    assert.match(await cli(['pathway', 'folder', 'list']), /"name": "Support flows"/);

    // Duplicate and chat.
    assert.match(await cli(['pathway', 'duplicate', id, '--name', 'Support copy']), /Duplicated \([0-9a-f-]{36}\)/);
    const chat = await cli(['pathway', 'chat', id, '--message', 'Hi, my order is late']);
    assert.match(chat, /thanks for calling/i);
  });

  it('places a call and lists its events; keeps and deletes a secret by name; updates a persona', async () => {
    const sent = await cli(['call', 'send', '+14155550100', '--task', 'Confirm the appointment.', '--json']);
    const callId = /"call_id": "([0-9a-f-]{36})"/.exec(sent)?.[1];
    assert.ok(callId, sent);
    for (let i = 0; i < 100; i++) {
      const call = (await t.request('GET', `/v1/calls/${callId}`)).body;
      if (call.completed === true) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const events = await cli(['call', 'events', callId]);
    assert.match(events, /\[info\] Call connected/);
    assert.match(events, /\[info\] Call ended with queue_status complete/);

    assert.match(await cli(['secret', 'set', 'CRM_TOKEN', 's3cret-value']), /Secret "CRM_TOKEN" set/);
    assert.match(await cli(['secret', 'list']), /CRM_TOKEN/);
    const secrets = (await t.request('GET', '/v1/secrets')).body.data as Array<{ name: string; static: boolean }>;
    assert.deepEqual(
      secrets.map((s) => [s.name, s.static]),
      [['CRM_TOKEN', true]],
    );
    const byName = await t.request('GET', '/v1/secrets/CRM_TOKEN');
    assert.equal((byName.body.data as { secret: { name: string } }).secret.name, 'CRM_TOKEN');
    assert.equal((await t.request('GET', '/v1/secrets/CRM_TOKEN', undefined, { as: t.otherKey })).status, 404);
    assert.equal((await t.request('DELETE', '/v1/secrets/CRM_TOKEN')).status, 200);
    assert.deepEqual((await t.request('GET', '/v1/secrets')).body.data, []);

    const persona = await cli([
      'persona',
      'create',
      '--name',
      'Rita',
      '--prompt',
      'You are Rita.',
      '--voice',
      'maya',
      '--json',
    ]);
    const personaId = /"id": "([0-9a-f-]{36})"/.exec(persona)?.[1];
    assert.ok(personaId, persona);
    assert.match(await cli(['persona', 'update', personaId, '--prompt', 'You are Rita, brief.']), /Persona updated/);
    const shown = (await t.request('GET', `/v1/personas/${personaId}`)).body.data as {
      current_production_version: { personality_prompt: string; voice: string };
      current_draft_version: { personality_prompt: string; call_config: { voice: string } };
    };
    assert.equal(shown.current_production_version.personality_prompt, 'You are Rita.');
    assert.equal(shown.current_production_version.voice, 'maya');
    assert.equal(shown.current_draft_version.personality_prompt, 'You are Rita, brief.');
    assert.equal(shown.current_draft_version.call_config.voice, 'maya');
    assert.match(await cli(['persona', 'get', personaId]), /Voice\s+maya/);

    // A knowledge base scraped from a page served here, and a tool tried once.
    const site = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html><body><p>Saturday hours are 10 am to 2 pm.</p></body></html>');
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    try {
      const page = `http://127.0.0.1:${(site.address() as AddressInfo).port}/hours`;
      assert.match(await cli(['kb', 'scrape', 'Clinic site', '--urls', page]), /Scraping started \(KB-/);
      const kbs = (await t.request('GET', '/v1/knowledge')).body.data as { kbs: Array<{ name: string; type: string }> };
      assert.deepEqual(
        kbs.kbs.map((kb) => [kb.name, kb.type]),
        [['Clinic site', 'WEB_SCRAPE']],
      );
      const tool = await t.request('POST', '/v1/tools', {
        name: 'Hours',
        description: 'Opening hours',
        url: page,
        method: 'GET',
      });
      const tried = await cli(['tool', 'test', String(tool.body.tool_id), '--input', '{}']);
      assert.match(tried, /Saturday hours are 10 am to 2 pm/);
      assert.match(tried, /Tool test passed/);
    } finally {
      await new Promise((resolve) => site.close(resolve));
    }

    const bought = await t.request('POST', '/v1/inbound/purchase', { area_code: '415' });
    const number = String(bought.body.phone_number);
    assert.match(await cli(['number', 'label', number, 'Front desk']), /Label set/);
    assert.equal((await t.request('GET', `/v1/inbound/${number}`)).body.label, 'Front desk');
    await cli(['number', 'update', number, '--prompt', 'You answer for Elm Street Dental.', '--voice', 'maya']);
    const config = (await t.request('GET', `/v1/inbound/${number}`)).body;
    assert.deepEqual(
      [config.prompt, config.voice, config.label],
      ['You answer for Elm Street Dental.', 'maya', 'Front desk'],
    );
  });

  it('keeps citation schemas (create, list, get, update, delete) and lists a persona’s knowledge gaps', async () => {
    const created = await cli([
      'citation',
      'create',
      '--name',
      'Appointment',
      '--description',
      'What was agreed',
      '--schema',
      '{"confirmed": "boolean", "day": "YYYY-MM-DD"}',
      '--json',
    ]);
    const id = /"id": "(CS-[0-9a-f-]+)"/.exec(created)?.[1];
    assert.ok(id, created);
    assert.match(await cli(['citation', 'list']), /Appointment\s+What was agreed/);
    assert.match(await cli(['citation', 'get', id]), /"confirmed": "boolean"/);
    assert.match(await cli(['citation', 'update', id, '--name', 'Booking']), /Schema updated/);
    assert.equal(
      ((await t.request('GET', `/v1/citation_schemas?id=${id}`)).body.data as { name: string }).name,
      'Booking',
    );
    assert.match(await cli(['citation', 'delete', id]), /Schema deleted/);
    assert.match(await cli(['citation', 'list']), /No citation schemas/);

    const persona = await t.request('POST', '/v1/personas', { name: 'Ava' });
    const personaId = String((persona.body.data as { id: string }).id);
    // The CLI's own first step for tests: the templates, one cloned onto the persona.
    assert.match(await cli(['scenario', 'templates']), /wrong-number\s+Wrong number\s+edge case/);
    const cloned = await cli(['scenario', 'clone', 'wrong-number', '--persona-id', personaId]);
    assert.match(cloned, /"name": "Wrong number"/, cloned);
    assert.match(await cli(['scenario', 'list']), /Wrong number\s+edge case\s+template/);
    assert.match(await cli(['persona', 'gaps', personaId]), /^\[\]$/m);
  });

  it('speaks text to a WAV file and browses what it said (`voice speak`, `voice samples`)', async () => {
    const said = await cli(['voice', 'speak', 'Your order ships today.', '--voice', 'ryan', '-o', 'order.wav']);
    assert.equal(fs.readFileSync(path.join(home, 'order.wav')).subarray(0, 4).toString(), 'RIFF', said);
    const list = await cli(['voice', 'samples', 'list']);
    assert.match(list, /Your order ships today\./, list);
    const id = /"id": "([0-9a-f-]{36})"/.exec(await cli(['voice', 'samples', 'list', '--json']))?.[1];
    assert.ok(id);
    assert.match(await cli(['voice', 'samples', 'get', id, '--json']), /"output_format": "pcm_\d+"/);
  });
});

describe("the hosted API's CLI simulates callers of a pathway (a language model emulated here)", () => {
  let t: TestApp;
  let fake: FakeOpenAi;
  let origin = '';
  let home = '';
  before(async () => {
    fake = await FakeOpenAi.start();
    fake.handler = (r): FakeReply => {
      const system = String(r.body.messages[0]?.content ?? '');
      if (system.startsWith('You play a person on a phone call')) {
        const said = (String(r.body.messages.at(-1)?.content ?? '').match(/^you: /gm) ?? []).length;
        const lines = [
          { say: 'Hello?', hang_up: false },
          { say: 'I want to book a cleaning.', hang_up: false },
          { say: 'Thanks, goodbye.', hang_up: true },
        ];
        return { text: JSON.stringify(lines[Math.min(said, 2)]) };
      }
      return { text: 'Of course.' };
    };
    t = await createTestApp({ clock: new ScaledClock(50), config: { llm: fakeLlmConfig(fake, 2000) } });
    await t.services.startWorkers();
    origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-cli-'));
  });
  after(async () => {
    await t.close();
    await fake.close();
    fs.rmSync(home, { recursive: true, force: true });
  });

  it('`bland simulate` and `bland pathway simulate run --wait` show each caller and its transcript', async () => {
    const created = await t.request('POST', '/v1/pathway/create', {
      name: 'Front desk',
      nodes: [
        {
          id: 'start',
          type: 'Default',
          data: { name: 'Greeting', isStart: true, text: 'Bright Smile, how can I help?' },
        },
      ],
      edges: [],
    });
    const pathwayId = String(created.body.pathway_id);
    const env = { home, key: t.key, origin };
    const started = await cliIn(env, ['simulate', '--pathway-id', pathwayId, '--profile', 'Pat::Book a cleaning']);
    assert.match(started, /Simulation \S+ started with 1 call\(s\)/, started);
    assert.match(started, /Pat\s+[0-9a-f-]{36}/);

    const waited = await cliIn(env, [
      'pathway',
      'simulate',
      'run',
      pathwayId,
      '--persona',
      'Wants a cleaning',
      '--turns',
      '5',
      '--wait',
    ]);
    assert.match(waited, /Simulation started/, waited);
    assert.match(waited, /Call [0-9a-f-]{36} \(Caller 1\) — (completed|max turns reached)/, waited);
    // A caller's two lines said before the agent answered are one turn ("Hello? I want to ...").
    assert.match(waited, /Caller: (Hello\? )?I want to book a cleaning\./, waited);
  });
});
