// Dashboard benchmark: how fast the dashboard becomes usable in Chromium on loopback, with 10,000
// calls in the account. Prints the median and worst of several loads of each page.
// Usage: npm run bench:web [-- --loads 10 --calls 10000]
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { createTestApp } from '../../src/testing/harness.js';
import { ensureDashboardBuilt, launchChromium } from '../../src/testing/browser.js';

const { values } = parseArgs({
  options: { loads: { type: 'string', default: '10' }, calls: { type: 'string', default: '10000' } },
});
const loads = Number(values.loads);
const callCount = Number(values.calls);

ensureDashboardBuilt();
const t = await createTestApp();
const origin = await t.app.listen({ port: 0, host: '127.0.0.1' });

// The calls: one batch scheduled for next year, so they are listed and none is dialled.
const next = new Date(Date.now() + 365 * 86_400_000).toISOString();
for (let made = 0; made < callCount; made += 10_000) {
  const size = Math.min(10_000, callCount - made);
  const r = await t.request('POST', '/v1/batches', {
    base_prompt: 'Remind {{name}} of the appointment.',
    start_time: next,
    call_data: Array.from({ length: size }, (_, i) => ({
      phone_number: `+1415555${String(2000 + ((made + i) % 8000)).padStart(4, '0')}`,
      name: `Caller ${made + i}`,
    })),
  });
  if (r.status !== 200) throw new Error(`seeding calls: ${r.status} ${JSON.stringify(r.body)}`);
}

const browser = await launchChromium();
const context = await browser.newContext({ viewport: { width: 1366, height: 860 } });
const signedOut = await context.newPage();
// A second tab, signed in once through the form: session storage keeps the key across its loads.
const page = await context.newPage();
await page.goto(`${origin}/calls`);
await page.getByLabel('API key').fill(t.key);
await page.getByRole('button', { name: 'Sign in' }).click();
await page.getByRole('heading', { name: 'Calls' }).waitFor();

async function measure(label: string, run: () => Promise<void>): Promise<{ label: string; ms: number[] }> {
  const ms: number[] = [];
  await run(); // warm-up: first compilation of the page's scripts
  for (let i = 0; i < loads; i++) {
    const started = performance.now();
    await run();
    ms.push(performance.now() - started);
  }
  return { label, ms };
}

const results = [
  await measure('sign-in form interactive (GET /, signed out)', async () => {
    await signedOut.goto(`${origin}/calls`);
    await signedOut.getByRole('button', { name: 'Sign in' }).waitFor();
    await signedOut.getByLabel('API key').focus();
  }),
  await measure(`calls list, first page of ${callCount.toLocaleString('en-US')} calls`, async () => {
    await page.goto(`${origin}/calls`);
    await page.getByRole('row').nth(50).waitFor();
  }),
  await measure('calls list, next page', async () => {
    const firstRow = page.getByRole('row').nth(1);
    const before = await firstRow.textContent();
    await page.getByRole('button', { name: 'Next page' }).click();
    // The page's content security policy allows no evaluated strings: poll from here.
    while ((await firstRow.textContent()) === before) await new Promise((resolve) => setTimeout(resolve, 5));
  }),
  await measure('call page (deep link)', async () => {
    const first = await t.request('GET', '/v1/calls?limit=1');
    const id = (first.body.calls as { call_id: string }[])[0]!.call_id;
    await page.goto(`${origin}/calls/${id}`);
    await page.getByRole('heading', { name: /Call to/ }).waitFor();
  }),
];

const sorted = (ms: number[]) => [...ms].sort((a, b) => a - b);
console.log(`\nDashboard in Chromium on loopback, ${loads} loads each (after one warm-up):\n`);
console.log('| page | median ms | worst ms |');
console.log('| --- | ---: | ---: |');
for (const { label, ms } of results) {
  const s = sorted(ms);
  console.log(`| ${label} | ${s[Math.floor(s.length / 2)]!.toFixed(0)} | ${s[s.length - 1]!.toFixed(0)} |`);
}

await browser.close();
await t.close();
