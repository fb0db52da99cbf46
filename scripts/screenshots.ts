// Screenshots of the dashboard for the README, taken from the real app: a server with the
// sandbox in audio mode, a few calls, an example pathway and a campaign, shot in Chromium.
// Run with `npm run screenshots`; the PNGs go to docs/images/.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ScaledClock } from '../src/clock.js';
import { createTestApp, waitForCall } from '../src/testing/harness.js';
import { ensureDashboardBuilt, launchChromium } from '../src/testing/browser.js';

const OUT = path.resolve('docs/images');
type Json = Record<string, unknown>;

ensureDashboardBuilt();
fs.mkdirSync(OUT, { recursive: true });
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-screenshots-'));
const t = await createTestApp({ clock: new ScaledClock(4), env: { OPENLINE_SANDBOX_AUDIO: '1', DATA_DIR: dataDir } });
await t.services.startWorkers();
const origin = await t.app.listen({ port: 0, host: '127.0.0.1' });

async function api(method: 'GET' | 'POST', url: string, body?: Json): Promise<Json> {
  const r = await t.request(method, url, body);
  if (r.status !== 200) throw new Error(`${method} ${url}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

const placed = await Promise.all(
  [
    { phone_number: '+14155550100', task: 'Confirm the dental appointment tomorrow at 3 pm.', record: true },
    { phone_number: '+14155550101', task: 'Confirm the appointment.', voicemail_message: 'Please call us back.' },
    { phone_number: '+14155550103', task: 'Reach the support team about an order.' },
  ].map(async (body) => String((await api('POST', '/v1/calls', { answered_by_enabled: true, ...body })).call_id)),
);
await Promise.all(placed.map((id) => waitForCall(t, id)));

const example = JSON.parse(fs.readFileSync('examples/pathways/appointment-booking.json', 'utf8')) as Json;
const pathwayId = String(
  (await api('POST', '/v1/pathway/create', { name: example.name, nodes: example.nodes, edges: example.edges }))
    .pathway_id,
);
const campaignId = String(
  (
    await api('POST', '/v1/campaigns', {
      name: 'Appointment reminders',
      task: 'Remind {{name}} of the appointment tomorrow.',
      numbers: ['+14155550100', '+14155550101', '+14155550102', '+14155550104'],
    })
  ).campaign_id,
);

const browser = await launchChromium();
const page = await browser.newPage({ viewport: { width: 1366, height: 860 } });
await page.goto(`${origin}/calls`);
await page.getByLabel('API key').fill(t.key);
await page.getByRole('button', { name: 'Sign in' }).click();
await page.getByRole('table').waitFor();
await page.screenshot({ path: path.join(OUT, 'dashboard-calls.png') });

await page.goto(`${origin}/calls/${placed[0]}`);
await page.getByRole('img', { name: 'Waveform of the agent track' }).waitFor();
await page.getByRole('heading', { name: 'Transcript' }).scrollIntoViewIfNeeded();
await page.screenshot({ path: path.join(OUT, 'dashboard-call.png'), fullPage: true });

await page.goto(`${origin}/pathways/${pathwayId}`);
await page
  .getByLabel('Pathway canvas')
  .getByText(String((example.nodes as { data: Json }[])[0]!.data.name))
  .waitFor();
await page.getByRole('button', { name: 'Start chat' }).click();
await page.getByRole('list', { name: 'Chat' }).waitFor();
await page.screenshot({ path: path.join(OUT, 'dashboard-pathway.png'), fullPage: true });

await page.goto(`${origin}/campaigns/${campaignId}`);
await page.getByText('4 of 4 numbers finished').waitFor({ timeout: 120_000 });
await page.screenshot({ path: path.join(OUT, 'dashboard-campaign.png') });

await browser.close();
await t.close();
fs.rmSync(dataDir, { recursive: true, force: true });
console.log(`Screenshots written to ${OUT}`);
