/**
 * Phone menus: how many of the library's menus reach the department their task needs, how many
 * wrong keys were pressed, and how long the choice took after the menu (or entry prompt) ended,
 * with the offline model and with the OpenAI-compatible fake model, for the menus the rules were
 * tuned on and, apart, for the menus written after tuning (bench/ivr/library.ts).
 *
 *   npm run bench:ivr                 # every menu at the real speed of a call (about two minutes)
 *   npm run bench:ivr -- --scale 10   # ten times faster (the agent's own time counts ten times)
 */
import { ScaledClock } from '../../src/clock.js';
import { createTestApp } from '../../src/testing/harness.js';
import { FakeOpenAi, fakeLlmConfig } from '../../src/testing/fake-openai.js';
import { MENU_PAUSE_MS } from '../../src/calls/session.js';
import { LIBRARY, fakeMenuModel, runMenuCase, type MenuRun } from './library.js';

const scaleArg = process.argv.indexOf('--scale');
const SCALE = scaleArg > 0 ? Number(process.argv[scaleArg + 1]) : 1;
if (!(SCALE >= 1)) throw new Error('--scale takes a number >= 1');

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function runAll(model: 'offline' | 'fake model'): Promise<MenuRun[]> {
  const fake = model === 'fake model' ? await FakeOpenAi.start() : undefined;
  if (fake) fake.handler = fakeMenuModel;
  const t = await createTestApp({
    clock: new ScaledClock(SCALE),
    ...(fake && { config: { llm: fakeLlmConfig(fake, 10_000) } }),
  });
  await t.services.startWorkers();
  try {
    return await Promise.all(LIBRARY.map((c) => runMenuCase(t, c, fake ? { model: 'base' } : {})));
  } finally {
    await t.close();
    await fake?.close();
  }
}

function report(model: string, runs: MenuRun[]): void {
  for (const set of ['tuning', 'held-out'] as const) {
    const some = runs.filter((r) => r.case.set === set);
    if (some.length === 0) {
      console.log(`${model.padEnd(10)} ${set.padEnd(8)}  (no menus)`);
      continue;
    }
    const reached = some.filter((r) => r.reached && r.keys === r.case.keys).length;
    const wrong = some.reduce((n, r) => n + r.wrongKeys, 0);
    const times = some.flatMap((r) => r.decisionMs);
    console.log(
      `${model.padEnd(10)} ${set.padEnd(8)}  reached ${String(reached).padStart(2)}/${String(some.length).padEnd(2)}  wrong keys ${String(wrong).padStart(2)}  decision after the prompt ends: p50 ${Math.round(percentile(times, 50))} ms, max ${Math.round(Math.max(...times))} ms (${times.length} choices)`,
    );
  }
  for (const r of runs.filter((x) => !x.reached || x.keys !== x.case.keys))
    console.log(`  missed: 555-${r.case.number} ${r.case.what}: pressed "${r.keys}", expected "${r.case.keys}"`);
}

console.log(
  `Phone menus: ${LIBRARY.length} calls on ${new Set(LIBRARY.map((c) => c.number)).size} sandbox menus, text mode, clock x${SCALE}; a menu is complete after ${MENU_PAUSE_MS} ms of silence (or its repeat offer).`,
);
const numbers = (set: string) => [...new Set(LIBRARY.filter((c) => c.set === set).map((c) => c.number))].join(' ');
console.log(`tuning: the menus the rules were tuned on (${numbers('tuning')})`);
console.log(
  `held-out: menus written after tuning (${numbers('held-out')}); their first run reached 5/6 with one wrong key (0171's question-worded option), fixed since (docs/benchmarks.md)`,
);
for (const model of ['offline', 'fake model'] as const) report(model, await runAll(model));
