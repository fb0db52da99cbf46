import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { ensureDashboardBuilt, launchChromium } from '../../src/testing/browser.js';
import { pdfDocument } from '../../src/testing/documents.js';

type Json = Record<string, unknown>;

/**
 * The dashboard end to end in Debian's Chromium, against a real server on loopback with the
 * sandbox in audio mode (so recordings exist): sign in from a deep link, place a call from the
 * form and watch it finish, play its recording, edit, publish and chat with a pathway, run a
 * campaign from a CSV file, sign out.
 */
describe('dashboard in Chromium', () => {
  let t: TestApp;
  let origin: string;
  let browser: Browser;
  let page: Page;
  let dataDir: string;
  const pageErrors: string[] = [];

  before(async () => {
    ensureDashboardBuilt();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-dashboard-'));
    t = await createTestApp({ clock: new ScaledClock(4), env: { OPENLINE_SANDBOX_AUDIO: '1', DATA_DIR: dataDir } });
    await t.services.startWorkers();
    origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
    page.on('pageerror', (error) => pageErrors.push(error.message));
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /**
   * Waits until `expression` is true in the page (the dashboard's CSP forbids the eval that
   * waitForFunction polls with).
   */
  async function until(expression: string, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await page.evaluate<boolean>(expression))) {
      if (Date.now() > deadline) throw new Error(`still false after ${timeoutMs} ms: ${expression}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async function api(method: string, url: string, body?: Json): Promise<Json> {
    const r = await t.request(method as 'GET', url, body);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  }

  it('a deep link opened signed out asks for the key, refuses a wrong one, then shows the page asked for', async () => {
    await page.goto(`${origin}/calls?answered_by=human`);
    await page.getByLabel('API key').fill('ol_not_a_key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'not accepted' }).waitFor();

    await page.getByLabel('API key').fill(t.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Calls' }).waitFor();
    assert.equal(await page.title(), 'Calls · Openline');
    assert.equal(new URL(page.url()).pathname, '/calls');
    assert.equal(new URL(page.url()).searchParams.get('answered_by'), 'human');
    // The key is in session storage only: not in the URL, not in local storage.
    assert.ok(!page.url().includes(t.key));
    assert.equal(await page.evaluate<number>('window.localStorage.length'), 0);
  });

  it('a page whose code is gone since the dashboard loaded (the server was updated) says so and offers a reload', async () => {
    await api('POST', '/v1/pathway/create', { name: 'Updated meanwhile' });
    await page.goto(`${origin}/pathways`);
    await page.route('**/assets/pathway-*.js', (route) => route.fulfill({ status: 404, body: 'gone' }));
    await page.getByRole('link', { name: 'Updated meanwhile' }).click();
    await page.getByRole('alert').filter({ hasText: 'updated since this page was loaded' }).waitFor();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Calls' }).waitFor();
    await page.unrouteAll();
    await page.getByRole('button', { name: 'Reload' }).click();
    await page.getByRole('heading', { name: 'Updated meanwhile' }).waitFor();
  });

  it('places a call from the New call form and watches it complete with its transcript and recording', async () => {
    await page.goto(`${origin}/calls/new`);
    // A JSON field's problem describes the field (it is not part of its name) and marks it invalid.
    const metadata = page.getByLabel('Metadata', { exact: true });
    await metadata.fill('{not json');
    assert.equal(await metadata.getAttribute('aria-invalid'), 'true');
    const described = page.locator(`[id="${await metadata.getAttribute('aria-describedby')}"]`);
    assert.match(String(await described.textContent()), /^Not JSON/);
    await metadata.fill('');
    // A refused call: each problem under the field it names, which is marked invalid; the first
    // such field takes the focus (the button is at the end of a long form).
    const phone = page.getByLabel('Phone number', { exact: true });
    await phone.fill('12345');
    await page.getByRole('button', { name: 'Place call' }).click();
    await page.getByRole('alert').filter({ hasText: '2 fields above have problems' }).waitFor();
    for (const [label, problem] of [
      ['Phone number', /^phone_number must be in E\.164 form/],
      ['Task', /^task is required/],
    ] as const) {
      const field = page.getByLabel(label, { exact: true });
      assert.equal(await field.getAttribute('aria-invalid'), 'true', label);
      const ids = String(await field.getAttribute('aria-describedby')).split(' ');
      const texts = await Promise.all(ids.map((id) => page.locator(`[id="${id}"]`).textContent()));
      assert.ok(
        texts.some((text) => problem.test(String(text))),
        `${label} is described by its problem: ${texts.join(' | ')}`,
      );
    }
    assert.equal(await page.evaluate<string>('document.activeElement?.id ?? ""'), await phone.getAttribute('id'));
    await page.getByLabel('Phone number', { exact: true }).fill('+14155550100');
    await page.getByLabel('Task', { exact: true }).fill('Confirm the dentist appointment for tomorrow at 3 pm.');
    await page.getByLabel('Record the call').check();
    await page.getByRole('button', { name: 'Place call' }).click();
    await page.waitForURL(/\/calls\/[0-9a-f-]{36}$/);
    const callId = page.url().split('/').pop()!;

    // Live: the page follows the call until it ends, without a reload.
    await page.locator('h1 .badge', { hasText: 'completed' }).waitFor({ timeout: 90_000 });
    assert.equal(await page.title(), 'Call to +14155550100 · Openline');
    // Who hung up, in words, with the API's value.
    const ended = page.locator('dt', { hasText: 'Ended by' }).locator('xpath=following-sibling::dd[1]');
    assert.match(String(await ended.textContent()), /^(The agent \(ASSISTANT\)|The person called \(USER\))$/);
    const lines = page.getByRole('list', { name: 'Transcript' }).getByRole('listitem');
    assert.ok((await lines.count()) >= 2, 'the transcript shows both sides');
    await lines.filter({ hasText: 'Agent' }).first().waitFor();
    await lines.filter({ hasText: 'Caller' }).first().waitFor();

    const audio = page.getByLabel('Call recording');
    await audio.waitFor();
    assert.match(String(await audio.getAttribute('src')), /^blob:/);
    await page.getByRole('img', { name: 'Waveform of the agent track' }).waitFor();
    await page.getByRole('img', { name: 'Waveform of the other party track' }).waitFor();
    const duration = await audio.evaluate(
      (element) =>
        new Promise<number>((resolve) => {
          const media = element as unknown as { readyState: number; duration: number } & EventTarget;
          if (media.readyState >= 1) resolve(media.duration);
          else media.addEventListener('loadedmetadata', () => resolve(media.duration));
        }),
    );
    assert.ok(duration > 1, `the recording plays (${duration} s)`);

    // The list shows it, and its link leads back.
    await page.goto(`${origin}/calls`);
    // The filters follow the address: Back to the unfiltered list empties them, Forward fills them again.
    await page.getByLabel('To number').fill('+14155550100');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/to_number=/);
    await page.goBack();
    await page.waitForURL(`${origin}/calls`);
    assert.equal(await page.getByLabel('To number').inputValue(), '');
    await page.goForward();
    await page.waitForURL(/to_number=/);
    assert.equal(await page.getByLabel('To number').inputValue(), '+14155550100');
    await page.getByRole('link', { name: /\d/ }).first().click();
    assert.equal(page.url().split('/').pop(), callId);

    // The summary is written after the call ends: a page that saw the end before it keeps asking.
    let first = true;
    await page.route(`**/v1/calls/${callId}`, async (route) => {
      const response = await route.fetch();
      if (!first) return route.fulfill({ response });
      first = false;
      await route.fulfill({ response, json: { ...((await response.json()) as Json), summary: null, analysis: null } });
    });
    await page.reload();
    await page.getByText('The summary is written now that the call has ended').waitFor();
    await page.getByText(/^Offline summary/).waitFor();
    await page.unrouteAll();
  });

  it('edits a pathway on the canvas, shows a problem on its node, publishes a version and chats with it', async () => {
    const created = await api('POST', '/v1/pathway/create', {
      name: 'Dental booking',
      nodes: [
        {
          id: 'start',
          type: 'Default',
          data: {
            name: 'Greeting',
            isStart: true,
            text: 'Hi, this is Ava from Sunny Dental. Shall we book a cleaning?',
          },
        },
        { id: 'book', type: 'Default', data: { name: 'Book', text: 'Great, which day works for you?' } },
        { id: 'bye', type: 'End Call', data: { name: 'Goodbye', text: 'No problem. Goodbye!' } },
      ],
      edges: [
        { id: 'e1', source: 'start', target: 'book', label: 'yes, wants to book' },
        { id: 'e2', source: 'start', target: 'bye', label: 'no, not interested' },
      ],
    });
    const id = String(created.pathway_id);
    await page.goto(`${origin}/pathways/${id}`);
    const canvas = page.getByLabel('Pathway canvas');
    await canvas.getByText('Greeting').waitFor();
    await canvas.getByText('Book', { exact: true }).click();

    const node = page.getByRole('form', { name: 'Node' });
    await node.getByLabel('Name', { exact: true }).fill('');
    // Problems name the node as the canvas shows it, not by its place in the JSON.
    await canvas.getByText('Unnamed Default node: name must not be empty').waitFor();
    assert.doesNotMatch(String(await page.locator('.problems').textContent()), /nodes\[/);
    await node.getByLabel('Name', { exact: true }).fill('Pick a day');
    await node.getByLabel('Text', { exact: true }).fill('Wonderful. Which day suits you best?');
    // A new node appears within the canvas's visible part.
    await page.getByRole('button', { name: 'Add node' }).click();
    const added = (await canvas.locator('.react-flow__node').filter({ hasText: 'Node 4' }).boundingBox())!;
    const shown = (await canvas.boundingBox())!;
    assert.ok(
      added.x >= shown.x &&
        added.y >= shown.y &&
        added.x + added.width <= shown.x + shown.width &&
        added.y + added.height <= shown.y + shown.height,
      `the new node (${JSON.stringify(added)}) is on the visible canvas (${JSON.stringify(shown)})`,
    );
    await node.getByRole('button', { name: 'Delete node' }).click();
    await canvas.getByText('Node 4').waitFor({ state: 'detached' });
    // Unsaved edits: a link asks before leaving (staying keeps them), and so does a reload.
    const asked = new Promise<string>((resolve) =>
      page.once('dialog', (dialog) => {
        resolve(dialog.message());
        void dialog.dismiss();
      }),
    );
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Calls' }).click();
    assert.match(await asked, /unsaved changes/);
    assert.match(page.url(), /\/pathways\//);
    assert.equal(
      await page.evaluate<boolean>(
        "(() => { const e = new Event('beforeunload', { cancelable: true }); dispatchEvent(e); return e.defaultPrevented; })()",
      ),
      true,
    );
    // Signing out asks too; staying keeps the edits and the session.
    const askedAtSignOut = new Promise<string>((resolve) =>
      page.once('dialog', (dialog) => {
        resolve(dialog.message());
        void dialog.dismiss();
      }),
    );
    await page.getByRole('button', { name: 'Sign out' }).click();
    assert.match(await askedAtSignOut, /unsaved changes/);
    await page.getByRole('button', { name: 'Save draft' }).waitFor();
    assert.equal(await page.getByLabel('API key').count(), 0);
    assert.equal(await canvas.getByText('Pick a day').count(), 1);
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByRole('button', { name: 'Draft saved' }).waitFor();
    const draft = await api('GET', `/v1/pathway/${id}`);
    const saved = (draft.nodes as { id: string; data: Json }[]).find((n) => n.id === 'book')!;
    assert.equal(saved.data.name, 'Pick a day');
    assert.equal(saved.data.text, 'Wonderful. Which day suits you best?');

    await page.getByLabel('Version name').fill('First');
    await page.getByRole('button', { name: 'Save as version' }).click();
    await page.getByRole('button', { name: 'Publish to production' }).click();
    await page.locator('.versions .badge-production').waitFor();
    const summary = (await api('GET', '/v1/pathway')).pathways as Json[];
    assert.equal(summary.find((p) => p.id === id)?.production_version, 1);

    await page.getByRole('button', { name: 'Start chat' }).click();
    const chat = page.getByRole('list', { name: 'Chat' });
    await chat.getByText('Shall we book a cleaning?').waitFor();
    await page.getByLabel('Message', { exact: true }).fill('Yes, I would like to book');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await chat.getByText('Which day suits you best?').waitFor();
    await page.getByText('Current node: Pick a day').waitFor();
  });

  it('edits a pathway with the keyboard alone: opens a node from the canvas and adds a path without dragging', async () => {
    const created = await api('POST', '/v1/pathway/create', { name: 'Keyboard pathway' });
    const id = String(created.pathway_id);
    await page.goto(`${origin}/pathways/${id}`);
    const canvas = page.getByLabel('Pathway canvas');
    await page.getByRole('button', { name: 'Add node' }).focus();
    await page.keyboard.press('Enter');
    await page.keyboard.press('Enter');
    await canvas.getByText('Node 2', { exact: true }).waitFor();
    const node = page.getByRole('form', { name: 'Node' });
    assert.equal(await node.getByLabel('Name', { exact: true }).inputValue(), 'Node 2');
    await node.getByLabel('Text', { exact: true }).fill('Which day suits you?');
    // Tab reaches the canvas's nodes; Enter opens the focused one in the fields.
    await page.getByRole('button', { name: 'Add node' }).focus();
    for (let i = 0; i < 20; i++) {
      await page.keyboard.press('Tab');
      if (await page.evaluate<boolean>("document.activeElement?.classList.contains('react-flow__node') === true"))
        break;
    }
    assert.match(await page.evaluate<string>('document.activeElement?.textContent ?? ""'), /Node 1/);
    await page.keyboard.press('Enter');
    await until(`document.querySelector('form[aria-label="Node"] input')?.value === 'Node 1'`);
    await node.getByLabel('Text', { exact: true }).fill('Shall we book a table?');
    // A path from the node to another, chosen from a list.
    await node.getByLabel('Add a path to').selectOption({ label: 'Node 2' });
    await node.getByRole('button', { name: 'Add path' }).focus();
    await page.keyboard.press('Enter');
    const edge = page.getByRole('form', { name: 'Path' });
    await edge.waitFor();
    await edge.getByLabel('Label').fill('wants to book');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByRole('button', { name: 'Draft saved' }).waitFor();
    const draft = await api('GET', `/v1/pathway/${id}`);
    assert.deepEqual(
      (draft.edges as { source: string; target: string; label: string }[]).map((e) => [e.source, e.target, e.label]),
      [['node-1', 'node-2', 'wants to book']],
    );
  });

  it('creates a campaign from a CSV file and watches it finish', async () => {
    await page.goto(`${origin}/campaigns`);
    await page.getByLabel('Campaign name').fill('Reminders');
    await page.getByLabel('Task', { exact: true }).fill('Remind {{name}} of the appointment tomorrow.');
    // A row the server would refuse is named by its row and line of the file as soon as it is chosen.
    await page.getByLabel('Numbers (CSV)').setInputFiles({
      name: 'numbers.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('phone_number,name\n+14155550100,Sam\nnot-a-number,Ana\n'),
    });
    await page.getByText('row 2 (line 3): phone_number must not contain letters or an extension').waitFor();
    // Pressed anyway, the button says what is missing (it is never disabled without a word).
    await page.getByRole('button', { name: 'Create campaign' }).click();
    await page.getByRole('alert').filter({ hasText: 'Numbers (CSV): no usable file chosen' }).waitFor();
    await page.getByLabel('Numbers (CSV)').setInputFiles({
      name: 'numbers.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('phone_number,name\n+14155550100,Sam\n+14155550104,Ana\n+14155550106,Lee\n'),
    });
    await page.getByText('3 numbers read from numbers.csv').waitFor();
    // A count that is not a number is refused by name, not taken as the default.
    await page.getByLabel('Retries per number').fill('two');
    await page.getByRole('button', { name: 'Create campaign' }).click();
    await page.getByRole('alert').filter({ hasText: 'Retries per number must be a whole number, got "two"' }).waitFor();
    await page.getByLabel('Retries per number').fill('0');
    await page.getByRole('button', { name: 'Create campaign' }).click();
    await page.waitForURL(/\/campaigns\/[0-9a-f-]+$/);
    await page.getByRole('heading', { name: /^Reminders/ }).waitFor();
    await page.getByText('Task: Remind {{name}} of the appointment tomorrow.').waitFor();
    await page.getByText('3 of 3 numbers finished').waitFor({ timeout: 120_000 });
    await page.locator('h1 .badge', { hasText: 'completed' }).waitFor({ timeout: 30_000 });
    await page.getByRole('img', { name: 'Calls by outcome' }).waitFor();
    // On a phone the chart is drawn at its width: its labels keep a readable size, not scaled down.
    await page.setViewportSize({ width: 390, height: 900 });
    await until(
      "[...document.querySelectorAll('.chart svg text')].every((t) => t.getBoundingClientRect().height >= 11)",
    );
    assert.equal(
      await page.evaluate<boolean>('document.documentElement.scrollWidth <= document.documentElement.clientWidth'),
      true,
      'nothing is wider than the phone',
    );
    await page.setViewportSize({ width: 1366, height: 900 });

    // A name of one long word wraps: the page is no wider than the window, on a laptop or a phone.
    await api('POST', '/v1/campaigns', {
      name: `Reminders${'x'.repeat(200)}`,
      task: 'Remind them of the appointment.',
      numbers: [{ phone_number: '+14155550100' }],
    });
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${origin}/campaigns`);
      await page.getByRole('link', { name: /^Remindersx+$/ }).waitFor();
      assert.equal(await page.evaluate<number>('document.documentElement.scrollWidth'), width);
    }
    await page.setViewportSize({ width: 1366, height: 900 });
  });

  it('creates an agent test scenario from the Tests page (a refusal shown by field), runs it and shows its assertions, transcript and call', async () => {
    const spec = JSON.parse(fs.readFileSync('examples/pathways/lead-qualification.json', 'utf8')) as Json;
    await api('POST', '/v1/pathway/create', { name: 'Leads', nodes: spec.nodes, edges: spec.edges });
    await api('POST', '/v1/agents', { prompt: 'You are Rex, a landlord. Ask about the flat.' });
    await page.goto(`${origin}/tests`);
    const form = page.getByRole('form', { name: 'New scenario' });
    const create = form.getByRole('button', { name: 'Create scenario' });
    // Refused: each problem is shown under its field.
    await create.click();
    await form
      .getByRole('alert')
      .filter({ hasText: /^name must not be empty$/ })
      .waitFor();
    await form.getByLabel('Scenario name').fill('A renter is not a fit');
    await create.click();
    await form
      .getByRole('alert')
      .filter({ hasText: /agent_id/ })
      .waitFor();
    assert.equal(await form.getByRole('alert').filter({ hasText: /^name/ }).count(), 0, 'the name is right now');
    if (process.env.OPENLINE_TESTS_SCREENSHOT)
      await page.screenshot({ path: process.env.OPENLINE_TESTS_SCREENSHOT.replace(/\.png$/, '-refused.png') });
    // The agent under test is chosen by name from the account's agents and pathways, not typed as an id.
    const agent = page.getByLabel('Agent', { exact: true });
    await agent.locator('option', { hasText: 'You are Rex, a landlord.' }).waitFor({ state: 'attached' });
    await form.getByLabel('Agent under test').selectOption('pathway_id');
    await form.getByLabel('Pathway', { exact: true }).selectOption({ label: 'Leads' });
    await form.getByLabel('Caller lines').fill('Hello?\nNo, I rent my apartment.\nOkay, bye.');
    await form
      .getByLabel('Assertions')
      .fill('[{"type": "NODE_VISITED", "name": "told not a fit", "config": {"node": "Not a fit"}}]');
    await create.click();
    const row = page.getByRole('row', { name: /A renter is not a fit/ });
    await row.waitFor();
    assert.equal(await form.getByLabel('Scenario name').inputValue(), '', 'the form is emptied for the next one');
    // The pathway under test is named as the Pathways page names it, and links to it.
    await row.getByRole('link', { name: 'Leads' }).waitFor();
    await page.screenshot({ path: path.join(dataDir, 'tests.png'), fullPage: true });
    if (process.env.OPENLINE_TESTS_SCREENSHOT)
      fs.copyFileSync(path.join(dataDir, 'tests.png'), process.env.OPENLINE_TESTS_SCREENSHOT);
    await row.getByRole('button', { name: 'Run' }).click();
    await page.waitForURL(/\/tests\/runs\/[0-9a-f-]+$/);
    await page.locator('.badge', { hasText: 'PASSED' }).first().waitFor({ timeout: 120_000 });
    await page.getByRole('cell', { name: 'told not a fit' }).waitFor();
    await page.getByText('No, I rent my apartment.').waitFor();
    await page.getByRole('link', { name: /^[0-9a-f-]{36}$/ }).click();
    await page.waitForURL(/\/calls\/[0-9a-f-]+$/);
  });

  it('creates knowledge bases from text, a PDF file and a web page, shows their text and deletes one', async () => {
    await page.goto(`${origin}/knowledge`);
    await page.getByLabel('Name', { exact: true }).fill('Clinic hours');
    await page.getByLabel('Text', { exact: true }).fill('We open at 8 am on weekdays.');
    await page.getByRole('button', { name: 'Create knowledge base' }).click();
    await page.getByRole('row', { name: /Clinic hours/ }).waitFor();
    await page.getByLabel('Upload a file').check();
    await page.getByLabel('File', { exact: true }).setInputFiles({
      name: 'parking.pdf',
      mimeType: 'application/pdf',
      buffer: pdfDocument(['Parking is free behind the building.']),
    });
    await page.getByRole('button', { name: 'Create knowledge base' }).click();
    const row = page.getByRole('row', { name: /parking\.pdf/ });
    await row.waitFor();
    await row.getByRole('button', { name: 'Show text' }).click();
    await page.getByText('Parking is free behind the building.').waitFor();
    page.once('dialog', (dialog) => void dialog.accept());
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.waitFor({ state: 'detached' });
    const left = await api('GET', '/v1/knowledge');
    assert.deepEqual(
      (left.data as { kbs: { name: string }[] }).kbs.map((kb) => kb.name),
      ['Clinic hours'],
    );

    // From a web page, served here.
    const site = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html><body><h1>Insurance</h1><p>We accept Delta Dental.</p><script>var no = 1;</script></body></html>');
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    try {
      const address = `http://127.0.0.1:${(site.address() as AddressInfo).port}/insurance`;
      await page.getByLabel('Read web pages').check();
      await page.getByLabel('Name', { exact: true }).fill('Clinic site');
      await page.getByLabel('Web pages', { exact: true }).fill(address);
      await page.getByRole('button', { name: 'Create knowledge base' }).click();
      const webRow = page.getByRole('row', { name: /Clinic site/ });
      await webRow.getByText(address).waitFor();
      await webRow.getByRole('button', { name: 'Show text' }).click();
      await page.getByText('We accept Delta Dental.').waitFor();
    } finally {
      await new Promise((resolve) => site.close(resolve));
    }
  });

  it('asks a knowledge base a question, and answers a question callers asked that no knowledge base had', async () => {
    const kbs = (await api('GET', '/v1/knowledge')).data as { kbs: { id: string; name: string }[] };
    const hours = kbs.kbs.find((kb) => kb.name === 'Clinic hours')!;
    const { account_id: accountId } = await t.services.storage.db
      .selectFrom('knowledge_bases')
      .select('account_id')
      .where('id', '=', hours.id)
      .executeTakeFirstOrThrow();
    await t.services.knowledgeGaps.record(accountId, {
      callId: 'a-call',
      personaId: null,
      knowledgeBaseIds: [hours.id],
      question: 'Is parking free for patients?',
    });
    await page.goto(`${origin}/knowledge`);
    await page
      .getByRole('row', { name: /Clinic hours/ })
      .getByRole('button', { name: 'Ask' })
      .click();
    await page.getByLabel('Question', { exact: true }).fill('When do you open?');
    await page.getByRole('button', { name: 'Ask', exact: true }).first().click();
    await page.getByText('Answer: We open at 8 am on weekdays.').waitFor();

    const gap = page.getByRole('row', { name: /Is parking free for patients\?/ });
    await gap.getByLabel('Answer to “Is parking free for patients?”').fill('Yes, parking is free behind the building.');
    await gap.getByRole('button', { name: 'Add answer' }).click();
    await page.getByText('No unanswered questions.').waitFor();
    const content = await api('GET', `/v1/knowledge/${hours.id}/content`);
    assert.match(
      String((content.data as Json).text),
      /Is parking free for patients\?\nYes, parking is free behind the building\./,
    );
    await page.getByLabel('Question', { exact: true }).fill('Is parking free?');
    await page.getByRole('button', { name: 'Ask', exact: true }).first().click();
    await page.getByText('Answer: Yes, parking is free behind the building.').waitFor();
  });

  it('creates a persona and promotes its draft; keeps a secret without ever showing its value', async () => {
    await page.goto(`${origin}/personas`);
    await page.getByRole('button', { name: 'New persona' }).click();
    await page.getByRole('button', { name: 'Save persona' }).click();
    const row = page.getByRole('row', { name: /Ava \(live: version 1, draft: 2\)/ });
    await row.waitFor();
    // Each row's buttons name the persona they act on.
    // Edit opens the persona's JSON above the list, with the keyboard's focus in it.
    await row.getByRole('button', { name: /^Edit persona Ava/ }).press('Enter');
    const json = page.getByLabel('persona (JSON)');
    assert.match(await json.inputValue(), /"name": "Ava"/);
    assert.equal(await page.evaluate<string>('document.activeElement?.id ?? ""'), await json.getAttribute('id'));
    await page.getByRole('button', { name: 'Cancel' }).click();
    await row.getByRole('button', { name: 'Promote draft' }).click();
    await page.getByRole('row', { name: /Ava \(live: version 3, draft: 2\)/ }).waitFor();

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tools' }).click();
    await page.getByRole('navigation', { name: 'Tools' }).getByRole('link', { name: 'Secrets' }).click();
    await page.waitForURL(/\/secrets$/);
    await page.getByRole('button', { name: 'New secret' }).click();
    await page.getByRole('button', { name: 'Save secret' }).click();
    await page.getByRole('row', { name: /crm_token: \{\{secrets\.crm_token\}\}/ }).waitFor();
    assert.equal(await page.getByText('paste the value here').count(), 0, 'the value is never shown');
    const listed = await api('GET', '/v1/secrets');
    assert.ok(!JSON.stringify(listed).includes('paste the value here'));
  });

  it("configures a number: its settings open above the list with the keyboard's focus in them", async () => {
    const bought = await api('POST', '/v1/inbound/purchase', { area_code: '415' });
    const number = String(bought.phone_number);
    await page.goto(`${origin}/numbers`);
    await page.getByRole('button', { name: `Configure ${number}` }).press('Enter');
    const json = page.getByLabel('Settings (JSON)');
    await json.waitFor();
    assert.equal(await page.evaluate<string>('document.activeElement?.id ?? ""'), await json.getAttribute('id'));
    await page.getByRole('button', { name: 'Cancel' }).click();
  });

  it('shows how to connect an MCP client to this server on the Settings page', async () => {
    await page.goto(`${origin}/settings`);
    const snippet = page.getByLabel('MCP connection command');
    await snippet.waitFor();
    assert.equal(
      await snippet.textContent(),
      `claude mcp add --transport http openline ${origin}/v1/mcp \\\n  --header "Authorization: Bearer $OPENLINE_API_KEY"`,
    );

    // Rotating the webhook secret asks first, saying receivers must be updated; No keeps the secret.
    const asked = new Promise<string>((resolve) =>
      page.once('dialog', (dialog) => {
        resolve(dialog.message());
        void dialog.dismiss();
      }),
    );
    await page.getByRole('button', { name: 'Rotate webhook secret' }).click();
    assert.match(await asked, /receiver/);
    assert.equal(await page.getByText('New secret:').count(), 0);
  });

  it('signs out: the key is gone and the sign-in form is back', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    assert.equal(await page.evaluate<number>('window.sessionStorage.length'), 0);
    await page.reload();
    await page.getByLabel('API key').waitFor();
    // A kept key the server no longer accepts (revoked) brings the form back, saying so.
    await page.evaluate("sessionStorage.setItem('openline.apiKey', 'ol_revoked_key')");
    await page.goto(`${origin}/calls`);
    await page.getByRole('alert').filter({ hasText: 'Your API key was not accepted; sign in again.' }).waitFor();
    assert.deepEqual(pageErrors, []);
  });
});
